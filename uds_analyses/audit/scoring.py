"""Answer scoring with the published audit's rules (spec-probes §3.8), pure functions.

Normalisation: casefold, tokens matching `\\d+\\.\\d+|\\w+(?:[-']\\w+)*`, joined by one space. Exact
match: normalised prediction equals the normalised gold or one of its aliases. Contains: exact,
or one normalised string contains the other. Unknown: the normalised prediction is in a fixed
set. Token precision/recall/F1: multiset overlap of the tokens (1.0 on an exact match). The gold
set a prediction is matched against (`gold_set`): the gold, the row's object aliases and the
database's names equivalent to it.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from checkpoints.lmlm.db import FactDB
from checkpoints.lmlm.prompts import PromptRow

TOKEN = re.compile(r"\d+\.\d+|\w+(?:[-']\w+)*")
UNKNOWN_ANSWERS = frozenset({"", "unknown", "n a", "na", "none", "no answer", "i don't know", "i do not know",
                             "i don t know"})


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.casefold())


def token_text(text: str) -> str:
    """The answer as its lower-cased tokens joined by single spaces (the scoring regex of SOURCE.md)."""
    return " ".join(tokens(text))


@dataclass(frozen=True)
class AnswerScore:
    exact: float
    contains: float
    unknown: float
    precision: float
    recall: float
    f1: float


def _prf(pred: list[str], gold: list[str]) -> tuple[float, float, float]:
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0, 0.0, 0.0
    p, r = common / len(pred), common / len(gold)
    return p, r, 2 * p * r / (p + r)


def score_answer(prediction: str, golds: Sequence[str]) -> AnswerScore:
    """Scores of one prediction against the gold object and its aliases (`golds[0]` is the gold);
    P/R/F1 take the best alias by F1."""
    pred = token_text(prediction)
    norm = [token_text(g) for g in golds]
    exact = any(pred == g for g in norm)
    contains = exact or any(pred and g and (pred in g or g in pred) for g in norm)
    if exact:
        p = r = f = 1.0
    else:
        p, r, f = max((_prf(pred.split(), g.split()) for g in norm), key=lambda x: x[2])
    return AnswerScore(float(exact), float(contains), float(pred in UNKNOWN_ANSWERS), p, r, f)


def gold_set(db: FactDB, row: PromptRow) -> list[str]:
    """The gold object first, then its aliases (from the row and the database's object map)."""
    return list(dict.fromkeys([row.gold, *row.object_aliases, *db.names_equivalent_to("object", row.gold)]))


def mean_scores(scores: Iterable[AnswerScore]) -> dict[str, float]:
    """Count-weighted means in the published CSV's column names."""
    scores = list(scores)
    n = len(scores)
    keys = (("exact_match", "exact"), ("contains_match", "contains"), ("unknown_rate", "unknown"),
            ("precision", "precision"), ("recall", "recall"), ("f1", "f1"))
    return {"count": n, **{out: (sum(getattr(s, k) for s in scores) / n if n else float("nan")) for out, k in keys}}
