"""How much forget knowledge a model carries, by a check that is none of the registered metrics.

Greedy chat answers to the forget questions, in their original and in TOFU's paraphrased
wording, scored by whether the annotated entity string appears in the answer (case and
punctuation folded, `checkpoints.world.matching.entity_hit`). A pool member trained on the forget
facts (P) should name the entity far more often than one that never saw them (N); a knowledge-
present variant that does not is reported, not dropped.
"""

from __future__ import annotations

import time
from typing import Sequence

from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.world.matching import entity_hit
from checkpoints.world.quality import greedy_answers

CHECK_TOKENS = 64   # new tokens per answer: an entity comes in the first sentence
WORDINGS = {"forget_questions": "question", "paraphrased_questions": "paraphrased_question"}


def entity_hit_rate(answers: Sequence[str], entities: Sequence[str]) -> float:
    """Fraction of answers that contain their entity (pure)."""
    if not answers:
        return float("nan")
    return sum(entity_hit(a, e) for a, e in zip(answers, entities)) / len(answers)


def knowledge_check(model: PreTrainedModel, tok: PreTrainedTokenizerBase, forget: Sequence[dict],
                    max_new_tokens: int = CHECK_TOKENS, batch_size: int = 32) -> dict:
    """{"forget_questions": rate, "paraphrased_questions": rate, "n": items, ...} over the forget
    items that carry an entity (and, for the paraphrased wording, a paraphrased question)."""
    t0 = time.time()
    out: dict = {"max_new_tokens": max_new_tokens, "matching": "entity string in the greedy chat answer"}
    was_training = model.training
    model.eval()
    try:
        for name, field in WORDINGS.items():
            items = [it for it in forget if it.get("entity") and it.get(field)]
            answers = greedy_answers(model, tok, [it[field] for it in items], max_new_tokens, batch_size)
            out[name] = entity_hit_rate(answers, [it["entity"] for it in items])
            out[f"n_{name}"] = len(items)
    finally:
        model.train(was_training)
    out["seconds"] = round(time.time() - t0, 1)
    return out
