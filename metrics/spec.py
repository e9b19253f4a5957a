"""What a metric is (`MetricSpec`), what shared work it uses (`Use`), and `register`, through
which every metric family adds itself to the registry where it is defined.

Orientation (spec §9): "knowledge" = higher means more knowledge of the forget set (raw metrics
1-12); "erasure" = higher means more erasure (s_*, CKA, Logit Lens, Fisher); "utility" = higher
means more preserved utility (section 4.6).

Label: the metric's name as tables and pages print it (the spec's name where it has one); every
registered metric has one (`register` refuses an empty label), so the leaderboard, `uds report`
and the docs name a metric the same way from its one file.

Group (which key lists a metric joins, `metrics.registry`): "baseline" (the spec's comparison
metrics, spec §4: `uds metrics all` and meta-evaluated), "utility" (`uds metrics all`), "uds" (meta-evaluated),
"probe" (meta-evaluated when named), "diagnostic" (computed when named only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

import numpy as np

from metrics.result import MetricResult

if TYPE_CHECKING:
    from metrics.context import EvalContext

KNOWLEDGE, ERASURE, UTILITY = "knowledge", "erasure", "utility"
ORIENTATIONS = (KNOWLEDGE, ERASURE, UTILITY)
MODEL, FULL, RETAIN, BASE = "model", "full", "retain", "base"
# The code-length reference of the mem_bits metrics: the retain model unless a run names another
# (`--mem-bits-reference`, e.g. the source's larger or superset-trained model); see ModelPool.spec.
REFERENCE = "reference"
GROUPS = ("baseline", "utility", "uds", "probe", "diagnostic")


@dataclass(frozen=True)
class Use:
    """A shared computation a metric consumes (also what the run plans its sweeps from)."""
    kind: str                      # teacher_forced | generation | states | fisher | base_score | uds | probe
    roles: tuple[str, ...]
    split: str | None = None
    detail: tuple[str, ...] = ()   # answer variants (teacher_forced) or prompt kind (generation)


@dataclass(frozen=True)
class MetricSpec:
    key: str
    category: str                  # memorization | generation | mia | mia_normalised | representation | utility
    orientation: str               # knowledge | erasure | utility
    uses: tuple[Use, ...]
    compute: Callable[["EvalContext"], MetricResult]
    description: str
    depends: tuple[str, ...] = ()  # metrics whose results `compute` reads from ctx.results
    group: str = "baseline"        # GROUPS
    label: str = ""                # display name (required by `register`)
    variant_of: str = ""           # the metric this key is one setting of (Fisher's three mask sizes are one metric)

    @property
    def metric(self) -> str:
        """The metric the key measures: its own key, or the metric it is a variant of."""
        return self.variant_of or self.key

    @property
    def references(self) -> tuple[str, ...]:
        """Roles besides the evaluated model that this metric's own work loads."""
        return tuple(sorted({r for u in self.uses for r in u.roles} - {MODEL}))

    def knowledge_view(self, value: float) -> float:
        """The value oriented as "higher = more knowledge" (meta-eval inverts erasure scores)."""
        return 1.0 - value if self.orientation == ERASURE else value


_REGISTERED: dict[str, tuple[float, int, MetricSpec]] = {}


def register(specs: Iterable[MetricSpec], rank: float) -> None:
    """Add a family's metrics. `rank` places the family in the key order (docs/design.md lists
    memorisation 10, generation 20, MIA 30, representation 40, utility 50, UDS 60); inside a family
    the order given. A key registered twice by different specs is a programming error."""
    for i, spec in enumerate(specs):
        if spec.group not in GROUPS:
            raise ValueError(f"metric {spec.key}: unknown group {spec.group!r}")
        if spec.orientation not in ORIENTATIONS:
            raise ValueError(f"metric {spec.key}: unknown orientation {spec.orientation!r}")
        if not spec.label.strip():
            raise ValueError(f"metric {spec.key}: no label (the name tables and pages print)")
        old = _REGISTERED.get(spec.key)
        if old is not None and old[2] is not spec:
            raise ValueError(f"metric key {spec.key!r} registered twice")
        _REGISTERED[spec.key] = (rank, i, spec)


def registered() -> dict[str, MetricSpec]:
    """Key -> spec of every metric registered so far, in key order."""
    return {s.key: s for _, _, s in sorted(_REGISTERED.values(), key=lambda t: (t[0], t[1]))}


# --- small pieces every family uses ------------------------------------------------------------

def mean_of(values: Iterable[float | None]) -> float | None:
    """Mean of the defined values; None when there is none."""
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def per_item(values: list[float | None]) -> MetricResult:
    """A metric whose value is the mean of its per-item values."""
    return MetricResult(mean_of(values), values)


def tf_use(split: str, *variants: str, roles: tuple[str, ...] = (MODEL,)) -> Use:
    return Use("teacher_forced", roles, split, variants)


def gen_use(split: str, kind: str = "plain", roles: tuple[str, ...] = (MODEL,)) -> Use:
    return Use("generation", roles, split, (kind,))
