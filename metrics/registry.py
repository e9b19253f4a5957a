"""The registry of metrics: every family, found where it is defined, and the key lists.

A family registers its metrics when its module is imported (`metrics.spec.register`). This module
imports every module of `metrics.families` and every module named by an entry point of the group
`uds.metrics` (families of other packages, e.g. the probe's in `uds_analyses.probe.metric`), so adding
a metric is one new file, with no list or branch to edit here. Each metric is a small function
`EvalContext -> MetricResult` combining the context's shared work with pure formulas; orientation,
label and groups are documented in `metrics.spec`.

Reading the registry is light (numpy, no torch, transformers, scipy or scikit-learn): a family
module imports those inside the functions that compute, so `uds report` and `uds leaderboard` take
the metrics' labels and orientations from here without loading the metric stack
(tests/test_metric_names.py holds every family to it).
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Sequence

import metrics.families
from uds_core.errors import UdsInputError
from metrics.spec import MetricSpec, registered

if TYPE_CHECKING:
    from metrics.context import EvalContext
    from metrics.result import MetricResult

ENTRY_POINT_GROUP = "uds.metrics"


def _load_families() -> dict[str, MetricSpec]:
    for info in pkgutil.iter_modules(metrics.families.__path__, metrics.families.__name__ + "."):
        importlib.import_module(info.name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        importlib.import_module(ep.module)
    return registered()


REGISTRY: dict[str, MetricSpec] = _load_families()


def keys_of(*groups: str) -> tuple[str, ...]:
    """The registered keys of the given groups, in key order."""
    return tuple(k for k, s in REGISTRY.items() if s.group in groups)


BASELINE_KEYS = keys_of("baseline")                    # the comparison metrics' keys (spec §4)
ALL_KEYS = keys_of("baseline", "utility")              # `uds metrics all`
META_KEYS = keys_of("baseline", "uds")                 # the meta-evaluated keys (docs/design.md order)
PROBE_META_KEYS = keys_of("probe")                     # meta-evaluated when named (`--metrics mem_bits,...`)
# the spec's comparison metrics, a metric measured at several settings counted once (Fisher's
# three mask sizes are one metric of three keys): what prose calls "the N baseline metrics"
BASELINE_METRICS = tuple(dict.fromkeys(REGISTRY[k].metric for k in BASELINE_KEYS))


# --- running -----------------------------------------------------------------------------------

def metric_keys(text: str) -> list[str]:
    """`uds metrics`' key list: `all` or comma-separated registry keys in the order given (not
    `uds`, which comes from `uds score`); UdsInputError lists the valid keys."""
    if text.strip() == "all":
        return list(ALL_KEYS)
    keys = [k.strip() for k in text.split(",") if k.strip()]
    # uds is in the registry for meta-eval, but comes from `uds score`
    bad = [k for k in keys if k not in REGISTRY or k == "uds"]
    if bad or not keys:
        hint = " (uds itself comes from `uds score`)" if "uds" in bad else ""
        raise UdsInputError(f"unknown metric {', '.join(bad) or repr(text)}{hint}; valid: all, {', '.join(ALL_KEYS)}")
    return list(dict.fromkeys(keys))


def with_dependencies(keys: Sequence[str]) -> list[str]:
    """`keys` preceded by the metrics they read, each once, dependencies first."""
    order: list[str] = []

    def visit(k: str) -> None:
        for d in REGISTRY[k].depends:
            visit(d)
        if k not in order:
            order.append(k)
    for k in keys:
        visit(k)
    return order


def sweep_plan(keys: Sequence[str]) -> dict[tuple[str, str], set[str]]:
    """(role, split) -> answer variants to sweep, union over the metrics (and their dependencies)."""
    plan: dict[tuple[str, str], set[str]] = {}
    for k in with_dependencies(keys):
        for u in REGISTRY[k].uses:
            if u.kind == "teacher_forced":
                for role in u.roles:
                    plan.setdefault((role, u.split), set()).update(u.detail)
    return plan


def generation_plan(keys: Sequence[str]) -> set[tuple[str, str, str]]:
    """(role, split, prompt kind) of every greedy generation the metrics (and their dependencies) read."""
    return {(role, u.split, u.detail[0]) for k in with_dependencies(keys) for u in REGISTRY[k].uses
            if u.kind == "generation" for role in u.roles}


def needs(keys: Sequence[str], kind: str) -> bool:
    """Whether any of `keys` (or what they depend on) uses shared work of `kind`."""
    return any(u.kind == kind for k in with_dependencies(keys) for u in REGISTRY[k].uses)


def anchor_dependent(keys: Sequence[str], anchors: Sequence[str] = ("full", "retain")) -> list[str]:
    """Those of `keys` whose value reads an anchor model (its own work or a dependency's uses one
    of `anchors`): what a rebuild of the anchors can move."""
    return [k for k in keys if any(set(REGISTRY[d].references) & set(anchors) for d in with_dependencies([k]))]


# shared work by how long it takes a large model on a CPU, lightest first: the teacher-forced
# sweeps, then greedy generation, then hidden states, patching and per-parameter gradients
WORK_ORDER = ("teacher_forced", "generation", "base_score", "probe", "states", "uds", "fisher")


def computation_order(keys: Sequence[str]) -> list[str]:
    """`keys` ordered so that each metric comes after those whose heaviest shared work (theirs or
    a dependency's) is lighter, in `WORK_ORDER`; ties keep the given order. A run that stops
    part-way has then finished as many metrics as the work it did allows (`uds metrics` keeps them)."""
    def heaviest(k: str) -> int:
        kinds = [u.kind for d in with_dependencies([k]) for u in REGISTRY[d].uses]
        return max((WORK_ORDER.index(c) if c in WORK_ORDER else len(WORK_ORDER) for c in kinds), default=0)
    return sorted(keys, key=heaviest)


RECORD_KINDS = ("states", "fisher", "uds")   # shared work that reads the annotated forget records' spans


def needs_records(keys: Sequence[str]) -> bool:
    """Whether any of `keys` (or what they depend on) reads the annotated forget records."""
    return any(needs(keys, kind) for kind in RECORD_KINDS)


def evaluate(ctx: EvalContext, keys: Sequence[str]) -> dict[str, MetricResult]:
    """Compute `keys` (dependencies too, shared work once via `ctx`); returns only `keys`."""
    for k in with_dependencies(keys):
        if k not in ctx.results:
            ctx.results[k] = REGISTRY[k].compute(ctx)
    return {k: ctx.results[k] for k in keys}
