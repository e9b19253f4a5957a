"""Chance levels of membership-inference and rate scores, from the class balance.

A score means little without the value an attack that learned nothing would get. For
best-threshold F1 that floor is the trivial attack "everything is a member": precision = the
positive share p, recall 1, so F1 = 2p / (1 + p) (2/3 with balanced classes). Any best-threshold
F1 is at least this, since "all positive" is one of the thresholds it searches. AUC of a score
that carries no information is 0.5 whatever the balance.
"""

from __future__ import annotations

from uds_core.errors import UdsInputError


def positive_share(n_positive: int, n_negative: int) -> float:
    """Share p of positives (members) among all scored samples, in [0, 1]."""
    if n_positive < 0 or n_negative < 0 or n_positive + n_negative == 0:
        raise UdsInputError(f"chance level needs samples: got {n_positive} positive, {n_negative} negative")
    return n_positive / (n_positive + n_negative)


def f1_chance(p: float) -> float:
    """F1 of predicting every sample positive when a share p is positive: 2p / (1 + p)."""
    if not 0.0 <= p <= 1.0:
        raise UdsInputError(f"positive share must lie in [0, 1] (got {p})")
    return 2.0 * p / (1.0 + p)


def f1_chance_counts(n_positive: int, n_negative: int) -> float:
    """f1_chance from class counts."""
    return f1_chance(positive_share(n_positive, n_negative))


AUC_CHANCE = 0.5   # an uninformative score ranks a random positive above a random negative half the time
