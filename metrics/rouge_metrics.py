"""ROUGE-L recall (spec §3.4): LCS length / number of ground-truth tokens.

Tokenisation is rouge_score's default (lowercase, non-alphanumerics split, Porter stemmer).
Higher = the generation reproduces more of the reference (more knowledge).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from rouge_score import rouge_scorer


@lru_cache(maxsize=1)
def _scorer() -> rouge_scorer.RougeScorer:
    # Built once: constructing the stemmer is the expensive part; the scorer holds no per-call state.
    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l_recall(reference: str, generation: str) -> float:
    """ROUGE-L recall of `generation` against `reference` (0 when the reference has no token)."""
    return float(_scorer().score(target=reference, prediction=generation)["rougeL"].recall)


def mean_rouge_l_recall(references: Sequence[str], generation: str) -> float:
    """Mean recall of one generation over several references (Para. ROUGE with several paraphrases)."""
    return sum(rouge_l_recall(r, generation) for r in references) / len(references)
