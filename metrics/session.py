"""The evaluation session: what is being evaluated, resolved and loaded once.

One `EvalSession` per command run (or per Open-Unlearning placement, or per zoo): it takes the
roles once (ROLES: the evaluated `model`, the `full` and `retain` references, the fluency `base`,
the mem_bits `reference`) and the annotated data, defaults the references once (docs/design.md),
resolves each spec once, loads each model and tokenizer once and fingerprints each model once.
Every consumer asks it: `uds score` (the UDS run, `score_uds`), `uds metrics`, `uds sweep` and the
meta-evaluation (`context`, the one `EvalContext` factory), the OU handlers and the probes.
The system-prompt rule lives here too (`system_prompt_for`).

The roles go by the metric API's names (metrics.spec: MODEL, FULL, RETAIN, BASE, REFERENCE) here,
in `roles`, in the constructor and in `score_uds`; the command line's words map onto them at its
edge (`--unlearned` / `--model` -> model, `--fluency-base` -> base, `--mem-bits-reference` ->
reference). `adapter_base` is not a role: the base weights of adapter-folder specs (`--base`).

Model plumbing is imported lazily: creating a session for `uds score` does not load the metrics
stack (rouge, sklearn, scipy).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

import torch

import checkpoints.specs as specs
from checkpoints import splits
from checkpoints.specs import CheckpointSpec
from metrics.spec import BASE, FULL, MODEL, REFERENCE, RETAIN
from uds_core.defaults import OU_SYSTEM_PROMPT
from uds_core.errors import UdsInputError

if TYPE_CHECKING:
    from uds_core.engine import EngineSettings
    from uds_core.s1_cache import CachedUds
    from metrics.context import EvalContext, EvalSettings, ModelPool
    from metrics.work import WorkCache

ROLES = (MODEL, FULL, RETAIN, BASE, REFERENCE)   # the keys of EvalSession.roles


def system_prompt_for(spec: CheckpointSpec, given: str | None = None, *, none: bool = False) -> str | None:
    """The system turn of the chat encoding: none when asked for; else `given`; else the tiny
    world's (its preset's `system_prompt`: none where its template was trained without one) and
    OU's prompt for anything else (an adapter follows its base)."""
    if none:
        return None
    if given is not None:
        return given
    home = specs.origin(spec)
    if home.kind == "tiny":
        from checkpoints.world.presets import get_preset

        return get_preset(home.preset).system_prompt
    return OU_SYSTEM_PROMPT


@dataclass(frozen=True)
class Placement:
    device: str = "cpu"
    dtype: torch.dtype = torch.float32
    trust_pickle: bool = False
    attn_implementation: str | None = None   # None: the checkpoint's own


class EvalSession:
    """Roles resolved, models and tokenizers loaded and fingerprinted, each once.

    `roles`: role (ROLES) -> spec string, references defaulted (None where a role has no model, e.g.
    no fluency base outside a tiny world, no mem_bits reference unless given); the constructor takes
    each role by its name. `data`: the annotated forget file. `adapter_base`: the `--base` of every
    adapter-folder spec. `references=False`: the evaluated model alone (a probe needs no full or
    retain model and no annotated file). `split`: a TOFU forget split by name
    (checkpoints/splits.py): its annotated rows, its forget set and, by default, its retain model;
    None is the model's own default (forget10, or a tiny world's one forget set). `check_split`:
    whether a given data file is checked against the split's rows of TOFU (the project's copy);
    False where the caller checks the records against its own dataset (the Open-Unlearning
    plug-in, against the dataset OU loaded)."""

    def __init__(self, model: str, *, full: str | None = None, retain: str | None = None,
                 data: str | None = None, base: str | None = None, tofu_dir: str | None = None,
                 adapter_base: str | None = None, placement: Placement = Placement(),
                 with_base: bool = True, references: bool = True, reference: str | None = None,
                 split: str | None = None, check_split: bool = True):
        self.tofu_dir, self.adapter_base, self.placement = tofu_dir, adapter_base, placement
        self.check_split = check_split
        self._resolved: dict[str, CheckpointSpec] = {}
        self._models: dict[tuple, torch.nn.Module] = {}
        self._tokenizers: dict[str, object] = {}
        self._fingerprints: dict[str, str] = {}
        self._memo: dict[str, object] = {}
        self._bases: dict[tuple, torch.nn.Module] = {}   # a LoRA world's shared base (specs.load_stacked)
        self.spec = self.resolve(model)   # a wrong path or name fails first, before data or models
        self.tiny = specs.origin(self.spec).kind == "tiny"
        self.split = splits.get_split(split) if split else None
        if self.tiny:
            splits.tiny_split(split, model)
        anchors = (None, None)
        if references and None in (full, retain):
            anchors = specs.default_anchors(self.spec, adapter_base)
        base = base or (specs.tiny_base(self.spec) if with_base and references else None)
        full = full or anchors[0]
        self.roles: dict[str, str | None] = {MODEL: model, FULL: full, RETAIN: retain or self._retain(full, anchors[1]),
                                             BASE: base, REFERENCE: reference}
        self.annotation: dict | None = None   # set by records() when the spans were found here
        for spec in self.roles.values():
            if spec:
                self.resolve(spec)   # fail fast on a bad reference spec, before any model work
        if adapter_base and not any(self.resolve(s).kind == "adapter" for s in self.roles.values() if s):
            raise UdsInputError(f"--base {adapter_base} given, but no model spec is an adapter folder "
                                "(adapter_config.json)")
        self.data_given = data is not None
        self._data, self._data_defaults = data, references

    @property
    def data(self) -> str | None:
        """The annotated forget file: the given one, else the model's default, found on first use
        (a real model's may be fetched from the Hub, checkpoints/tofu_files.py, so a run that needs
        no data never asks for it)."""
        if self._data is None and self._data_defaults:
            self._data = specs.default_data(self.spec, self.tofu_dir, self.adapter_base)
        return self._data

    def _retain(self, full: str | None, default: str | None) -> str | None:
        """The retain anchor when none is given: the named TOFU split's (that of an OU full model),
        else the default, which is forget10's only (another split needs one named)."""
        if self.split is None or self.tiny or full is None:
            return default
        retain = splits.default_retain(full, self.split)
        if retain is None and self.split.name != splits.DEFAULT_SPLIT:
            raise UdsInputError(f"{self.split.name}: no retain model goes with the full model {full}; pass the "
                                f"retain model (fine-tuned on {self.split.retain}) explicitly")
        return retain or default

    # --- specs ---------------------------------------------------------------------------------
    def resolve(self, spec: str) -> CheckpointSpec:
        """The resolved spec, resolved on first use only."""
        if spec not in self._resolved:
            self._resolved[spec] = specs.resolve_spec(spec, self.adapter_base)
        return self._resolved[spec]

    def spec_of(self, role: str) -> str:
        s = self.roles.get(role)
        if not s:
            raise UdsInputError(f"this run needs a {role} model, and none was given")
        return s

    # --- loading -------------------------------------------------------------------------------
    def model(self, spec: str, **kwargs) -> torch.nn.Module:
        """The model `spec` names, placed as the session says; loaded once per (spec, kwargs)."""
        key = (spec, tuple(sorted(kwargs.items())))
        if key not in self._models:
            self._models[key] = self.load_uncached(spec, **kwargs)
        return self._models[key]

    def release(self, spec: str) -> None:
        """Forget the loaded model(s) of `spec` (its fingerprint stays): the memory is returned once
        the caller drops its own references too."""
        from uds_core.memory import release_memory

        for key in [k for k in self._models if k[0] == spec]:
            del self._models[key]
        release_memory()

    def load_uncached(self, spec: str, **kwargs) -> torch.nn.Module:
        """A fresh load, not kept (a meta-evaluation job's model, dropped when the job ends)."""
        p = self.placement
        extra = {"attn_implementation": p.attn_implementation} if p.attn_implementation else {}
        resolved = self.resolve(spec)
        if specs.is_lora_world(resolved) and not kwargs:   # one base in memory for every model of the run
            return specs.load_stacked(resolved, self._bases, device=p.device, dtype=p.dtype, **extra)
        return specs.load_model(self.resolve(spec), device=p.device, dtype=p.dtype, trust_pickle=p.trust_pickle,
                                base=self.adapter_base, **extra, **kwargs)

    def tokenizer(self, spec: str, *, fallback=None):
        """The tokenizer of `spec`; a checkpoint without tokenizer files gets `fallback` when given
        (the full model's encodes for all three models of UDS, spec §2.6)."""
        if spec not in self._tokenizers:
            resolved = self.resolve(spec)
            if fallback is not None and not specs.has_own_tokenizer(resolved, base=self.adapter_base):
                return fallback
            self._tokenizers[spec] = specs.load_tokenizer(resolved, base=self.adapter_base)
        return self._tokenizers[spec]

    def config(self, spec: str):
        """The transformers config of `spec`'s model, its weights not loaded."""
        return self._once(f"config:{spec}", lambda: specs.load_config(self.resolve(spec), base=self.adapter_base))

    def fingerprint(self, spec: str) -> str:
        from uds_core.fingerprint import model_fingerprint

        if spec not in self._fingerprints:
            self._fingerprints[spec] = model_fingerprint(self.model(spec))
        return self._fingerprints[spec]

    def _once(self, name: str, make: Callable[[], object]):
        if name not in self._memo:
            self._memo[name] = make()
        return self._memo[name]

    def records(self) -> list[dict]:
        """The annotated forget items (UDS and the representation metrics), read once: the split's
        rows of the annotated forget10 file, or the data file (checked against the split when one
        is named); records without spans are annotated here (`self.annotation` says how)."""
        return self._once("records", self._read_records)

    def _read_records(self) -> list[dict]:
        from metrics.forget_records import read_forget_records

        split = None if self.tiny else self.split
        derive = split is not None and not self.data_given
        if not (derive or self.check_split):
            split = None   # the caller checks the given file against its own dataset
        found = read_forget_records(self.data, split, derive, self.tofu_dir)
        self.annotation = found.annotation
        return found.records

    def world(self):
        """The evaluation data of the evaluated model: its tiny world, or the TOFU splits (those of
        the named split: its forget rows)."""
        def load():
            world = specs.load_world_for_spec(self.spec, self.tofu_dir)
            return splits.split_world(world, self.split) if self.split is not None and not self.tiny else world
        return self._once("world", load)

    def system_prompt(self, given: str | None = None, *, none: bool = False) -> str | None:
        return system_prompt_for(self.spec, given, none=none)

    # --- consumers -----------------------------------------------------------------------------
    def context(self, settings: "EvalSettings", keys: Sequence[str] = (), *, records: bool = True,
                fluency_classifier: str | None = None, loader: Callable[[str], torch.nn.Module] | None = None,
                roles: Mapping[str, str | None] | None = None, tokenizer=None,
                work: "WorkCache | None" = None) -> "EvalContext":
        """The evaluation context of `keys` on this session's data and models. `loader` / `roles`
        override how a role's model is obtained (an OU model, a quantised or relearned one)."""
        from metrics.context import ModelPool, eval_splits

        return build_context(eval_splits(self.world()), self.records() if records else [],
                             tokenizer if tokenizer is not None else self.tokenizer(self.roles[MODEL]),
                             ModelPool(roles or self.roles, loader or self.model), settings, keys,
                             fluency_classifier=fluency_classifier, work=work)

    def score_uds(self, settings: "EngineSettings", tau: float, *, use_cache: bool = True, meter=None,
                  model: torch.nn.Module | None = None, records: Sequence[dict] | None = None,
                  runs=None, staged: bool = False,
                  loaded: Callable[[str, torch.nn.Module], None] | None = None) -> tuple["CachedUds", list, list]:
        """UDS of the evaluated model (or of `model`, the model role loaded elsewhere) against the
        full and retain references on the session's records (or on `records`, e.g. the same
        examples with other spans), S1 through the cache; returns (run, items, skipped). `meter`:
        a progress bar (`s1_cache.Meter`). `runs`: an `engine.TargetRuns` kept by a caller that
        scores again and again (a training callback). `staged`: one model in use at a time where the
        fast path runs (`s1_cache.one_at_a_time_uds`: the sources' activations captured first,
        each source released), else S1 first (full and retain), the retain model released, then
        S2 (full and the evaluated model): two at a time, not three (`s1_cache.cached_s1`).
        `loaded(spec, model)`: called with each of the three models as it is loaded (a check that
        needs the weights, before they are used)."""
        from uds_core.engine import UdsModels
        from uds_core.prompts import prepare_examples
        from uds_core.s1_cache import CacheUse, CachedUds, cached_s1, cached_uds, one_at_a_time_uds

        records = list(records) if records is not None else self.records()
        full_spec = self.spec_of(FULL)
        # the full model's tokenizer encodes for all three (spec §2.6)
        examples = prepare_examples(records, self.tokenizer(full_spec))
        get = self.model if loaded is None else (lambda spec: _seen(spec, self.model(spec), loaded))
        retain_spec = self.spec_of(RETAIN)
        model_spec = None if model is not None else self.spec_of(MODEL)
        cache = CacheUse(self.placement.dtype, self.placement.device, enabled=use_cache)
        if staged and runs is None:
            roles = _SessionRoles(self, get, {FULL: full_spec, RETAIN: retain_spec, MODEL: model_spec}, model)
            run = one_at_a_time_uds(roles, examples, settings, cache, tau=tau, meter=meter)
            if run is not None:
                return run, list(examples.items), list(examples.skipped)
        full = get(full_spec)
        fps = {FULL: self.fingerprint(full_spec), RETAIN: self.fingerprint(retain_spec)}
        cache = replace(cache, fingerprints=fps)
        if not staged:
            models = UdsModels(full, get(retain_spec), model if model is not None else get(model_spec))
            run = cached_uds(models, examples, settings, cache, tau=tau, meter=meter, runs=runs)
            return run, list(examples.items), list(examples.skipped)
        # a model the fast path cannot take (or a caller's `runs`): two models at a time
        s1, state, _ = cached_s1(full, get(retain_spec), examples, settings, cache, meter=meter)
        if retain_spec not in (full_spec, model_spec):
            self.release(retain_spec)
        models = UdsModels(full, None, model if model is not None else get(model_spec))
        run = cached_uds(models, examples, settings, cache, tau=tau, s1=s1, meter=_Continue(meter), runs=runs)
        return CachedUds(run.result, state, run.key), list(examples.items), list(examples.skipped)


class _SessionRoles:
    """`s1_cache.RoleModels` over a session: each model fingerprinted as it loads (so a report's
    fingerprints need no second load), released through the session; a model the caller passed
    in (`model`) is never released."""

    def __init__(self, session: "EvalSession", get: Callable[[str], torch.nn.Module], specs: dict,
                 given: torch.nn.Module | None) -> None:
        self._session, self._get, self._given = session, get, given
        self._specs = {"full": specs[FULL], "retain": specs[RETAIN], "unlearned": specs[MODEL]}

    def load(self, role: str) -> torch.nn.Module:
        if role == "unlearned" and self._given is not None:
            return self._given
        model = self._get(self._specs[role])
        self._session.fingerprint(self._specs[role])
        return model

    def fingerprint(self, role: str) -> str:
        return self._session.fingerprint(self._specs[role])

    def release(self, role: str) -> None:
        if not (role == "unlearned" and self._given is not None):
            self._session.release(self._specs[role])


def _seen(spec: str, model: torch.nn.Module, loaded: Callable[[str, torch.nn.Module], None]) -> torch.nn.Module:
    loaded(spec, model)
    return model


class _Continue:
    """A meter whose total the second stage of a staged UDS run must not reset (the first stage
    set it to both stages' passes)."""

    def __init__(self, meter) -> None:
        self._meter = meter

    @property
    def total(self):
        return None if self._meter is None else self._meter.total

    @total.setter
    def total(self, value) -> None:
        pass

    def update(self, n: int = 1):
        return None if self._meter is None else self._meter.update(n)


def build_context(splits: Mapping[str, Sequence[dict]], records: Sequence[dict], tokenizer, models: "ModelPool",
                  settings: "EvalSettings", keys: Sequence[str] = (), *, fluency_classifier: str | None = None,
                  work: "WorkCache | None" = None) -> "EvalContext":
    """The one factory of `EvalContext`: evaluation `splits` (`metrics.context.eval_splits`),
    annotated `records`, the models by role, the sweep plan of `keys` (no plan when `keys` is
    empty: every variant)."""
    from metrics.context import EvalContext
    from metrics.registry import generation_plan, sweep_plan
    from metrics.work import WorkCache

    return EvalContext(splits=splits, uds_records=records, tokenizer=tokenizer, models=models, settings=settings,
                       plan=sweep_plan(keys) if keys else None, gen_plan=generation_plan(keys) if keys else None,
                       fluency_classifier=fluency_classifier, work=work if work is not None else WorkCache())
