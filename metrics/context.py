"""The evaluation context of one `uds metrics` run: data, models by role, and the shared work.

Everything expensive is computed once per run and kept in the context's `work` cache
(`metrics.work.WorkCache`), keyed by the *model spec* (so a role that names the same checkpoint as
another, e.g. `--model` = the full model, shares it):
- one teacher-forced sweep per (model, split) over every answer variant the selected metrics need;
- one greedy generation per (model, split, prompt kind);
- entity-position block outputs once per model (CKA, Logit Lens), Fisher diagonals once per model;
- the Fisher masks and the anchors' per-layer CKA once per run.
Roles: "model" (evaluated), "full", "retain" (anchors), "base" (fluency proxy scorer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import torch
from transformers import PreTrainedTokenizerBase

from metrics import encoding, forward, hidden
from uds_core.parity import OPEN_UNLEARNING, REFERENCE, SPEC, ParityMode
from uds_core.defaults import FISHER_FRACTIONS
from metrics.representation import FisherMask, fisher_mask, linear_cka
from metrics.stats import TokenStats
from metrics.utility import mean_token_prob
from metrics.work import WorkCache, WorkKey
from uds_core import generation
from uds_core.gen_options import GenOptions
from uds_core.greedy import greedy_loop_problem
from uds_core.batching import pad_token_id
from uds_core.defaults import MAX_NEW_TOKENS
from uds_core.errors import UdsInputError
from uds_core.prompts import PreparedItem, SkippedItem, prepare_items

SPLITS = ("forget", "holdout", "retain_eval", "real_authors", "world_facts")
VARIANTS = ("answer", "paraphrased", "perturbed")


def eval_splits(world) -> dict[str, Sequence[dict]]:
    """Split name -> items of the evaluation splits, from a tiny world or the TOFU files."""
    return {name: getattr(world, name) for name in SPLITS}


@dataclass(frozen=True)
class EvalSettings:
    batch_size: int = 8
    max_new_tokens: int = MAX_NEW_TOKENS
    system_prompt: str | None = None       # None: no system turn (tiny world); real: OU's prompt
    max_length: int = encoding.MAX_LENGTH
    fisher_batch_size: int = 4             # spec §4.5: items share a forward of batch 4
    parity: ParityMode = SPEC              # uds_core.parity
    device: str = "cpu"
    progress: bool = True
    # False: the straightforward passes (padded teacher forcing, transformers' `generate`), the
    # reference the fast ones are tested against; the values are the same either way
    fast: bool = True

    @property
    def reference(self) -> bool:
        """Parity `reference`: the reference implementation's numerics (floors, model dtype)."""
        return self.parity == REFERENCE

    @property
    def open_unlearning(self) -> bool:
        """Parity `open-unlearning`: OU's attention mask and model-utility mean."""
        return self.parity == OPEN_UNLEARNING


@dataclass
class SplitStats:
    """Per-item statistics of one split, [item][j] (one answer, one or more paraphrases, the
    perturbed answers); a variant that was not swept is None."""
    answer: list[list[TokenStats]] | None = None
    paraphrased: list[list[TokenStats]] | None = None
    perturbed: list[list[TokenStats]] | None = None

    def answers(self) -> list[TokenStats]:
        """The one original-answer statistic of each item."""
        return [g[0] for g in self.answer]


# a role no run named -> the role that stands in for it: mem_bits' code-length reference is the
# retain model unless a run names another (the role names of metrics.spec, which imports this module)
ROLE_FALLBACK = {"reference": "retain"}


class ModelPool:
    """Role -> checkpoint spec; each distinct spec loaded once, on first use."""

    def __init__(self, specs: Mapping[str, str | None], loader: Callable[[str], torch.nn.Module]):
        self.specs = {role: s for role, s in specs.items() if s}
        self._loader, self._models = loader, {}
        self.load_count: dict[str, int] = {}

    def spec(self, role: str) -> str:
        if role not in self.specs and ROLE_FALLBACK.get(role) in self.specs:
            return self.specs[ROLE_FALLBACK[role]]
        if role not in self.specs:
            raise UdsInputError(f"this metric needs a {role} model, and none was given")
        return self.specs[role]

    def get(self, role: str) -> torch.nn.Module:
        s = self.spec(role)
        if s not in self._models:
            self._models[s] = self._loader(s)
            self.load_count[s] = self.load_count.get(s, 0) + 1
        return self._models[s]


def _variant_texts(item: dict, variant: str) -> list[str]:
    """Answer strings of one item for one variant ([] when the item lacks it)."""
    if variant == "answer":
        return [item["answer"]]
    if variant == "paraphrased":
        para = item.get("paraphrased_answer")
        texts = [para] if isinstance(para, str) else list(para or [])
    else:
        texts = list(item.get("perturbed_answers") or [])
    return [t for t in texts if t]  # holdout-style records carry empty placeholders


@dataclass
class EvalContext:
    splits: Mapping[str, Sequence[dict]]          # SPLITS: forget, holdout, retain_eval, real_authors, world_facts
    uds_records: Sequence[dict]                   # annotated forget items (representation metrics)
    tokenizer: PreTrainedTokenizerBase
    models: ModelPool
    settings: EvalSettings = field(default_factory=EvalSettings)
    plan: Mapping[tuple[str, str], set[str]] | None = None   # (role, split) -> variants to sweep
    gen_plan: set[tuple[str, str, str]] | None = None       # (role, split, prompt kind) generated
    fluency_classifier: str | None = None
    results: dict = field(default_factory=dict)   # metric key -> MetricResult, filled by the registry
    work: WorkCache = field(default_factory=WorkCache, repr=False)   # may be shared with other contexts

    # --- helpers ---------------------------------------------------------------------------
    @property
    def pad_id(self) -> int:
        return pad_token_id(self.tokenizer)

    @property
    def mask_id(self) -> int | None:
        """The id masked out of attention besides padding: the pad id under parity
        `open-unlearning` (OU's `input_ids != pad_id`), else None (length masks only)."""
        return self.pad_id if self.settings.open_unlearning else None

    def split(self, name: str) -> Sequence[dict]:
        items = self.splits.get(name)
        if not items:
            raise UdsInputError(f"the evaluation data has no {name!r} split")
        return items

    def _variants_for(self, spec: str, split: str) -> set[str]:
        """Union of the planned variants over every role that names this spec (all when unplanned)."""
        if self.plan is None:
            return set(VARIANTS)
        return {v for (role, s), vs in self.plan.items() if s == split and self.models.specs.get(role) == spec
                for v in vs}

    # --- encodings (model independent) ------------------------------------------------------
    def encodings(self, split: str, variant: str) -> list[list[encoding.Encoded]]:
        """[item][j] chat encodings of one split's answer variant."""
        def make():
            s = self.settings
            return [[encoding.encode_qa(self.tokenizer, it["question"], a, s.system_prompt, s.max_length)
                     for a in _variant_texts(it, variant)] for it in self.split(split)]
        return self.work.memo(WorkKey("enc", (), (split, variant)), make)

    def answer_texts(self, split: str) -> list[str]:
        """Decoded label text of each item's answer: ROUGE ground truth and ZLib text."""
        return self.work.memo(WorkKey("gt", (), (split,)), lambda: [encoding.label_text(self.tokenizer, e[0])
                                                                     for e in self.encodings(split, "answer")])

    # --- shared model work --------------------------------------------------------------------
    def teacher_forced(self, role: str, split: str) -> SplitStats:
        """One sweep of the role's model over every planned variant of the split."""
        spec = self.models.spec(role)
        return self.work.memo(WorkKey("tf", (spec,), (split, self.mask_id)), lambda: self._sweep(role, spec, split))

    def _sweep(self, role: str, spec: str, split: str) -> SplitStats:
        variants = [v for v in VARIANTS if v in self._variants_for(spec, split)] or ["answer"]
        flat, where = [], []
        for v in variants:
            for i, encs in enumerate(self.encodings(split, v)):
                for e in encs:
                    flat.append(e)
                    where.append((v, i))
        s = self.settings
        opts = forward.PassOptions(s.batch_size, self.pad_id, s.device, self.mask_id, f"{spec} {split}", s.progress)
        stats = forward.teacher_forced_stats(self.models.get(role), flat, opts, fast=s.fast)
        grouped: dict[str, list[list[TokenStats]]] = {v: [[] for _ in self.split(split)] for v in variants}
        for (v, i), st in zip(where, stats):
            grouped[v][i].append(st)
        return SplitStats(**grouped)

    def generations(self, role: str, split: str, kind: str = "plain") -> list[generation.Generation]:
        """Greedy generations of the role's model for the split's questions (one run per prompt
        kind). On the fast path the first request generates every planned prompt set of that model
        in one run (`_planned_sets`), which keeps the decoding batch full across the sets."""
        spec = self.models.spec(role)
        key = WorkKey("gen", (spec,), (split, kind, self.mask_id))
        sets = self._planned_sets(role, spec, (split, kind)) if self.work.peek(key) is None else []
        if len(sets) > 1:
            joint = self.work.memo(WorkKey("gens", (spec,), (tuple(sets), self.mask_id)),
                                   lambda: self._generate(role, spec, sets))
            for (s_split, s_kind), gens in zip(sets, joint):
                self.work.memo(WorkKey("gen", (spec,), (s_split, s_kind, self.mask_id)), lambda g=gens: g)
        return self.work.memo(key, lambda: self._generate(role, spec, [(split, kind)])[0])

    def _planned_sets(self, role: str, spec: str, asked: tuple[str, str]) -> list[tuple[str, str]]:
        """The prompt sets generated together with `asked`: on the fast path, where the model takes
        the greedy loop, every planned set of any role naming `spec` not generated yet; else none."""
        if not self.settings.fast or self.mask_id is not None or self.gen_plan is None:
            return [asked]
        if greedy_loop_problem(self.models.get(role)) is not None:
            return [asked]
        planned = sorted({(sp, k) for role, sp, k in self.gen_plan if self.models.specs.get(role) == spec})
        rest = [s for s in planned if s != asked and
                self.work.peek(WorkKey("gen", (spec,), (*s, self.mask_id))) is None]
        return [asked] + rest

    def _generate(self, role: str, spec: str, sets: list[tuple[str, str]]) -> list[list[generation.Generation]]:
        """One greedy run over the prompts of `sets` ((split, prompt kind) each); generations per set."""
        s = self.settings
        prompts = [[encoding.generation_prompt(self.tokenizer, it["question"], s.system_prompt,
                                               jailbreak=(kind == "jailbreak")) for it in self.split(split)]
                   for split, kind in sets]
        opts = GenOptions(s.batch_size, s.max_new_tokens, s.device, self.mask_id,
                          desc=f"{spec} {' + '.join(f'{sp} generate ({k})' for sp, k in sets)}", progress=s.progress)
        flat = generation.greedy_generate(self.models.get(role), self.tokenizer,
                                          [p for group in prompts for p in group], opts, fast=s.fast)
        bounds = np.cumsum([0] + [len(g) for g in prompts])
        return [flat[bounds[i]:bounds[i + 1]] for i in range(len(sets))]

    # --- representation ----------------------------------------------------------------------
    def uds_items(self) -> tuple[list[PreparedItem], list[SkippedItem]]:
        return self.work.memo(WorkKey("uds_items"), lambda: prepare_items(self.uds_records, self.tokenizer))

    def _scored_items(self) -> list[PreparedItem]:
        items = self.uds_items()[0]
        if not items:
            raise UdsInputError("no annotated item could be prepared for the representation metrics")
        return items

    def states(self, role: str) -> hidden.EntityStates:
        spec = self.models.spec(role)
        s = self.settings
        return self.work.memo(WorkKey("states", (spec,)), lambda: hidden.capture_entity_states(
            self.models.get(role), self._scored_items(), batch_size=s.batch_size, pad_id=self.pad_id,
            device=s.device, desc=f"{spec} states", progress=s.progress))

    def cka_layers(self, role: str) -> list[float]:
        """Per-layer CKA(H_role, H_retain)."""
        key = WorkKey("cka", (self.models.spec(role), self.models.spec("retain")))
        return self.work.memo(key, lambda: [linear_cka(h, r) for h, r in
                                            zip(self.states(role).layers, self.states("retain").layers)])

    def lens(self, role: str) -> np.ndarray:
        """(L, N) entity log-probs of the role's states decoded through the full model's head."""
        ref = self.settings.reference   # reference: log-softmax and per-item means in the model dtype
        key = WorkKey("lens", (self.models.spec(role), self.models.spec("full")), (ref,))
        return self.work.memo(key, lambda: hidden.lens_logprobs(self.states(role), self.models.get("full"),
                                                                model_dtype=ref))

    def fisher(self, role: str) -> list[torch.Tensor]:
        spec = self.models.spec(role)
        s = self.settings
        opts = forward.PassOptions(s.fisher_batch_size, self.pad_id, s.device, desc=f"{spec} fisher",
                                   progress=s.progress)
        return self.work.memo(WorkKey("fisher", (spec,), (s.reference,)), lambda: hidden.fisher_diagonal(
            self.models.get(role), self._scored_items(), opts, model_dtype=s.reference, fast=s.fast))

    def fisher_masks(self, fraction: float) -> list[FisherMask]:
        """The masks of `fraction`, made with those of every registered fraction in one pass over
        the anchors' Fishers, which are then let go: the masks are all any metric reads of them,
        and three full diagonal Fishers (full, retain, the model) are three copies of the model's
        block weights, gigabytes at 1B parameters. (The evaluated model's own is kept: it may be
        one of the anchors.)"""
        ref = self.settings.reference
        anchors = (self.models.spec("full"), self.models.spec("retain"))
        fractions = tuple(sorted(set(FISHER_FRACTIONS) | {fraction}))

        def make() -> dict[float, list[FisherMask]]:
            pairs = list(zip(self.fisher("retain"), self.fisher("full")))
            masks = {p: [fisher_mask(r, f, p, model_dtype=ref) for r, f in pairs] for p in fractions}
            del pairs
            for spec in set(anchors) - {self.models.spec("model")}:
                self.work.discard(WorkKey("fisher", (spec,), (ref,)))
            return masks
        found = self.work.peek(WorkKey("fmasks", anchors, (ref,)))
        if found is not None and fraction not in found:   # an unregistered fraction asked after the others
            found[fraction] = [fisher_mask(r, f, fraction, model_dtype=ref)
                               for r, f in zip(self.fisher("retain"), self.fisher("full"))]
        return self.work.memo(WorkKey("fmasks", anchors, (ref,)), make)[fraction]

    # --- fluency -------------------------------------------------------------------------------
    def base_item_probs(self, role: str) -> list[float | None]:
        """Mean base-LM token probability of each of the role's forget generations (None if empty)."""
        key = WorkKey("basescore", (self.models.spec("base"), self.models.spec(role)))

        def make():
            gens = self.generations(role, "forget", "plain")
            docs = [encoding.lm_document(self.tokenizer, g.text) for g in gens]
            s = self.settings
            opts = forward.PassOptions(s.batch_size, self.pad_id, s.device,
                                       desc=f"base scores {self.models.spec(role)}", progress=s.progress)
            stats = forward.teacher_forced_stats(self.models.get("base"), docs, opts, fast=s.fast)
            return [mean_token_prob(st.logprobs) if g.text else None for g, st in zip(gens, stats)]
        return self.work.memo(key, make)
