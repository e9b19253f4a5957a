"""The one table of names and directions of every value a leaderboard shows: `uds leaderboard`,
`uds report` and the docs print a value's label and say what a higher value means from here.

Registered metrics come from their registration (`metrics.registry`: each metric's `label` and
`orientation`, spec §9), so a new metric is named by its one file; spec §6.1's aggregates, which
are formulas of the benchmark (`meta_eval.benchmark`) rather than metrics, are named below. Reading
this table loads neither torch nor the metric stack (the registry is light to import).
"""

from __future__ import annotations

from dataclasses import dataclass

from metrics.registry import REGISTRY
from metrics.spec import ERASURE, KNOWLEDGE, UTILITY

BETTER = "better"
# direction -> what a higher value means
DIRECTIONS: dict[str, str] = {
    KNOWLEDGE: "higher = more knowledge of the forget set kept (lower = deeper unlearning)",
    ERASURE: "higher = more erased",
    UTILITY: "higher = more utility kept",
    BETTER: "higher = better (harmonic mean of Mem, Privacy and Utility)",
}
# the best end for ranks: the lowest for knowledge, the highest for the others
LOWER_IS_BETTER = frozenset({KNOWLEDGE})

# spec §6.1's aggregates: key -> (label, direction, formula)
AGGREGATES: dict[str, tuple[str, str, str]] = {
    "mem": ("Mem", ERASURE, "Mem = HM(1-ES, 1-EM, 1-ParaProb, 1-TruthRatio) (spec §6.1)"),
    "privacy_mia": ("Privacy (MIA)", ERASURE, "Privacy_MIA = HM_eps of the four S-MIA scores (spec §6.1)"),
    "privacy": ("Privacy", ERASURE, "Privacy = HM_eps(Privacy_MIA, UDS) (spec §6.1)"),
    "utility": ("Utility (abs.)", UTILITY, "utility = HM_eps(Model Utility, Fluency) (spec §6.1)"),
    "utility_rel": ("Utility", UTILITY, "Utility = min(1, utility / U_full of the epoch group) (spec §6.1)"),
    "overall": ("Overall", BETTER, "Overall = HM_eps(Mem, Privacy, Utility) (spec §6.1)"),
    "overall_no_uds": ("Overall w/o UDS", BETTER, "HM(Mem, Privacy_MIA, Utility): the leaderboard without UDS"),
}


@dataclass(frozen=True)
class Name:
    """How a value is named: `label` (as printed), `direction` (a key of DIRECTIONS) and `title`
    (its formula or description, for a header's hover)."""
    key: str
    label: str
    direction: str
    title: str

    @property
    def lower_is_better(self) -> bool:
        return self.direction in LOWER_IS_BETTER

    @property
    def sentence(self) -> str:
        """What a higher value means."""
        return DIRECTIONS[self.direction]


def _table() -> dict[str, Name]:
    out = {k: Name(k, s.label, s.orientation, s.description) for k, s in REGISTRY.items()}
    out.update({k: Name(k, label, d, title) for k, (label, d, title) in AGGREGATES.items()})
    return out


NAMES: dict[str, Name] = _table()


def name_of(key: str) -> Name | None:
    """The value's name and direction; None for a key that is neither a metric nor an aggregate
    (training settings, counts)."""
    return NAMES.get(key)


def label_of(key: str) -> str:
    """The printed name of a value (the key itself when the table does not know it)."""
    n = NAMES.get(key)
    return n.label if n else key


def lower_is_better(key: str) -> bool:
    """Whether the best value of `key` is its lowest (knowledge-oriented metrics)."""
    n = NAMES.get(key)
    return bool(n and n.lower_is_better)
