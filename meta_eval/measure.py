"""Measuring metrics of zoo models under a setting, cached per (model, setting) on disk.

Settings (named in `perturb`): ORIG (the checkpoint as built), NF4 (quantised, spec §5.3), RELEARN
(one epoch on the forget set, spec §5.3). Which (model, setting) pairs are needed is `plan_jobs`;
`Measurer` computes the missing metric keys of one job through the metrics registry, writing each
value as soon as it exists. Anchor work (the retain model's MIA statistics, the full/retain states
and Fisher diagonals, S1, the full model's generations for the fluency proxy) stays in one work
cache shared by all jobs; each job's own model work is dropped from it when the job ends. The
anchors' Fisher diagonals and entity states are also kept on disk beside the store
(`anchor_work`), so a restarted campaign or another task of a fan-out reads them instead.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from meta_eval.anchor_work import AnchorWorkFiles
from meta_eval.assemble import FILTER_SOURCE
from meta_eval.campaign.files import digest_of
from meta_eval.perturb import NF4, ORIG, RELEARN, RelearnRecipe, ensure_relearned, load_nf4, nf4_description
from meta_eval.store import MeasurementStore
from meta_eval.population import FULL, POOL, RETAIN, UNLEARNED, Member, Zoo, model_identity
from metrics.context import EvalSettings, ModelPool, eval_splits
from uds_core.parity import SPEC
from metrics.registry import evaluate
from metrics.session import EvalSession, Placement, build_context
from metrics.work import WorkCache
from uds_core.numbers import finite_or_none

BENCHMARK_EXTRA = ("model_utility", "fluency")   # what the utility filter and the benchmark need
# The version the stamps of the measurement store carry, and the one campaign folders of version 1
# recorded; campaign files of version 2 carry `measure_code` instead, which no one has to bump.
MEASURE_VERSION = 1
# Where measuring starts: the measurer (metrics, perturbations, anchors' work), the knowledge check
# and every metric family (imported by name at run time, so not reached by import statements).
MEASURING = ("meta_eval.measure", "meta_eval.knowledge", "metrics.families.*")


def measure_code(extra: Sequence[str] = ()) -> str:
    """Digest of the measuring code (`MEASURING` and `extra` entry modules, and every project module
    they import): it changes whenever that code changes, whether or not anyone notices that values
    may move (`uds_core.code_digest`)."""
    from uds_core.code_digest import code_digest

    return code_digest(MEASURING + tuple(extra))


@dataclass(frozen=True)
class Job:
    member: Member
    setting: str
    keys: tuple[str, ...]


def plan_jobs(zoo: Zoo, keys: Sequence[str], fluency: bool = True) -> list[Job]:
    """Every (model, setting) the meta-evaluation and the benchmark read, with the keys each needs:
    pools un-perturbed (faithfulness, filter thresholds); unlearned, full and retain un-perturbed
    plus utility (benchmark, utility filter, "before" values); unlearned quantised; unlearned and
    retain relearned. `fluency=False` (no classifier and no base LM for the proxy) leaves it out."""
    keys = tuple(keys)
    # an s_* metric is filtered by its raw MIA metric, so that one is measured un-perturbed too
    sources = [FILTER_SOURCE[k] for k in keys if k in FILTER_SOURCE]
    before = keys + tuple(dict.fromkeys(k for k in sources if k not in keys))
    extra = [k for k in BENCHMARK_EXTRA if fluency or k != "fluency"]
    with_utility = before + tuple(k for k in extra if k not in before)
    jobs = [Job(m, ORIG, before) for m in zoo.of_kind(POOL)]
    jobs += [Job(m, ORIG, with_utility) for m in zoo.members if m.kind in (UNLEARNED, FULL, RETAIN)]
    jobs += [Job(m, NF4, keys) for m in zoo.of_kind(UNLEARNED)]
    jobs += [Job(m, RELEARN, keys) for m in zoo.of_kind(UNLEARNED) + zoo.of_kind(RETAIN)]
    return jobs


def s1_job(zoo: Zoo, keys: Sequence[str], jobs: Sequence[Job] = ()) -> Job | None:
    """The job that fills the S1 cache of (full, retain, data) before a fan-out: the retain
    model's un-perturbed job of `jobs` when the plan has one (its UDS is 1 by construction), else
    the retain model's UDS alone. Every other UDS then reads S1 from the on-disk cache. None when
    UDS is not measured."""
    if "uds" not in keys:
        return None
    planned = [j for j in jobs if j.setting == ORIG and j.member.kind == RETAIN and j.member.spec == zoo.retain]
    if planned:
        return planned[0]
    retain = next((m for m in zoo.of_kind(RETAIN) if m.spec == zoo.retain), None)
    return Job(retain or Member(RETAIN, zoo.retain, RETAIN, RETAIN, None), ORIG, ("uds",))


@dataclass(frozen=True)
class MeasurerSpec:
    """What builds a `Measurer` in another process (picklable: a Ray task gets this, not the
    Measurer with its loaded tokenizer and models)."""
    zoo: Zoo
    store_root: Path
    models_dir: Path
    settings: EvalSettings
    recipe: RelearnRecipe
    fluency_classifier: str | None = None

    def build(self, log: Callable[[str], None] | None = None) -> "Measurer":
        extra = {} if log is None else {"log": log}
        return Measurer(self.zoo, MeasurementStore(self.store_root), self.models_dir, self.settings, self.recipe,
                        self.fluency_classifier, **extra)


def stamp_settings(settings: EvalSettings) -> dict:
    """The metric settings as they enter a measurement stamp. The parity mode enters only when it
    is not `spec`, next to the `ou_attention_mask: False` that settings held before parity modes
    existed: values measured under `spec` keep their stamps (and caches), and values measured
    under one mode are never read under another. `fast` does not enter: both paths give the same
    values."""
    out = {k: v for k, v in asdict(settings).items() if k not in ("progress", "parity", "fast")}
    out["ou_attention_mask"] = False
    if settings.parity != SPEC:
        out["parity"] = settings.parity
    return out


def setting_recipe(setting: str, device: str, recipe: RelearnRecipe) -> dict:
    """What a setting does to a model, as it enters stamps and outputs."""
    return {ORIG: {}, NF4: nf4_description(device), RELEARN: recipe.to_dict()}[setting]


class Measurer:
    """Runs jobs for one zoo. `settings` are the metric settings shared by every job."""

    def __init__(self, zoo: Zoo, store: MeasurementStore, models_dir: Path, settings: EvalSettings,
                 relearn_recipe: RelearnRecipe, fluency_classifier: str | None = None,
                 log: Callable[[str], None] = lambda s: print(s, file=sys.stderr)):
        self.zoo, self.store, self.models_dir = zoo, store, Path(models_dir)
        self.settings, self.recipe, self.log = settings, relearn_recipe, log
        self.fluency_classifier = fluency_classifier
        self.spec = MeasurerSpec(zoo, store.root, self.models_dir, settings, relearn_recipe, fluency_classifier)
        # the zoo's anchors and data: the full model's world and annotated file, loaded once
        self.session = EvalSession(zoo.full, full=zoo.full, retain=zoo.retain, base=zoo.base,
                                   tofu_dir=zoo.tofu_dir, placement=Placement(settings.device), with_base=False,
                                   split=zoo.split)
        world = self.session.world()
        self.splits = eval_splits(world)
        self.forget = world.forget
        self.records = self.session.records()
        self.tokenizer = self.session.tokenizer(zoo.full)
        # the contexts' work cache: anchor work is kept across jobs, its heaviest part across processes
        self.shared_work = WorkCache(AnchorWorkFiles(store.root / "anchor_work", (zoo.full, zoo.retain),
                                                     self._anchor_context))
        self._loaders = {ORIG: self._load_orig, NF4: self._load_nf4, RELEARN: self._load_relearned}

    # --- identities ------------------------------------------------------------------------

    def setting_recipe(self, setting: str) -> dict:
        return setting_recipe(setting, self.settings.device, self.recipe)

    def stamp(self, member: Member, setting: str) -> str:
        """Model identity + setting recipe + metric settings + anchors: a change in any of them
        invalidates the cached values of this (model, setting)."""
        anchors = [model_identity(s) for s in (self.zoo.full, self.zoo.retain, self.zoo.base) if s]
        return digest_of([MEASURE_VERSION, model_identity(member.spec), setting,
                        self.setting_recipe(setting), stamp_settings(self.settings), anchors, self.fluency_classifier])

    def _anchor_context(self) -> list:
        """What the anchors' kept work depends on beyond its key (`anchor_work`)."""
        anchors = [model_identity(s) for s in (self.zoo.full, self.zoo.retain)]
        return [MEASURE_VERSION, torch.__version__, anchors, stamp_settings(self.settings), self.settings.fast,
                digest_of(self.records)]

    # --- loading ---------------------------------------------------------------------------
    def _load_orig(self, member: Member) -> torch.nn.Module:
        return self.session.load_uncached(member.spec)

    def _load_nf4(self, member: Member) -> torch.nn.Module:
        return load_nf4(member.spec, device=self.settings.device)

    def _load_relearned(self, member: Member) -> torch.nn.Module:
        folder = ensure_relearned(member.spec, self.models_dir / f"{member.name}-relearn",
                                  model_identity(member.spec), self.tokenizer, self.forget, self.recipe,
                                  device=self.settings.device)
        return self.session.load_uncached(str(folder))

    def _anchor(self, spec: str) -> torch.nn.Module:
        return self.session.model(spec)

    # --- measuring -------------------------------------------------------------------------
    def missing(self, job: Job) -> list[str]:
        have = self.store.values(job.setting, job.member.name, self.stamp(job.member, job.setting))
        return [k for k in job.keys if k not in have]

    def run(self, job: Job) -> dict:
        """Compute the job's missing keys (dependencies too, stored as well); returns the entry."""
        stamp = self.stamp(job.member, job.setting)
        entry = self.store.entry(job.setting, job.member.name, stamp)
        todo = [k for k in job.keys if k not in entry["values"]]
        if not todo:
            return entry
        model_spec = f"{job.member.spec}@{job.setting}"
        model = {}

        def loader(spec: str) -> torch.nn.Module:
            if spec == model_spec:
                if not model:
                    model["m"] = self._loaders[job.setting](job.member)
                return model["m"]
            return self._anchor(spec)

        roles = {"model": model_spec, "full": self.zoo.full, "retain": self.zoo.retain, "base": self.zoo.base}
        pool = ModelPool(roles, loader)
        ctx = build_context(self.splits, self.records, self.tokenizer, pool, self.settings, job.keys,
                            fluency_classifier=self.fluency_classifier, work=self.shared_work)
        entry["info"].setdefault("seconds", {})
        try:
            for key in todo:
                t0 = time.time()
                try:
                    result = evaluate(ctx, [key])[key]
                except Exception as exc:  # one broken metric must not lose a long run; rerun retries it
                    entry["errors"][key] = f"{type(exc).__name__}: {exc}"
                    self.log(f"meta-eval: {job.setting} {job.member.name} {key} failed: {entry['errors'][key]}")
                    continue
                for k, r in ctx.results.items():   # dependencies (the nine utility values) are kept too
                    entry["values"].setdefault(k, finite_or_none(r.value))
                    if "fluency_source" in r.info:
                        entry["info"]["fluency_source"] = r.info["fluency_source"]
                entry["values"][key] = finite_or_none(result.value)
                entry["errors"].pop(key, None)
                entry["info"]["seconds"][key] = round(time.time() - t0, 3)
                self.store.write(job.setting, job.member.name, entry)
        finally:
            self.shared_work.drop_model(model_spec)   # the model's own work is not needed again
        return entry

