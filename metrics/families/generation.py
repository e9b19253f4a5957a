"""Generation metrics (spec §4.2): ROUGE-L recall of greedy answers on the forget split."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metrics.result import MetricResult
from metrics.spec import KNOWLEDGE, MODEL, MetricSpec, gen_use, per_item, register

if TYPE_CHECKING:
    from metrics.context import EvalContext


def rouge_of(ctx: EvalContext, split: str, kind: str) -> MetricResult:
    """ROUGE-L recall of the model's greedy answers (prompt kind `kind`) against the split's answers."""
    from metrics.rouge_metrics import rouge_l_recall

    gens = ctx.generations(MODEL, split, kind)
    return per_item([rouge_l_recall(gt, g.text) for gt, g in zip(ctx.answer_texts(split), gens)])


def _para_rouge(ctx: EvalContext) -> MetricResult:
    from metrics.rouge_metrics import mean_rouge_l_recall

    gens = ctx.generations(MODEL, "forget", "plain")
    refs = [[t.strip() for t in ([p] if isinstance(p, str) else list(p or []))]
            for p in (it.get("paraphrased_answer") for it in ctx.split("forget"))]
    return per_item([mean_rouge_l_recall(r, g.text) if r else None for r, g in zip(refs, gens)])


register([
    MetricSpec("rouge", "generation", KNOWLEDGE, (gen_use("forget"),),
               lambda c: rouge_of(c, "forget", "plain"),
               "ROUGE-L recall of the greedy answer to the question vs the answer", label="ROUGE"),
    MetricSpec("para_rouge", "generation", KNOWLEDGE, (gen_use("forget"),), _para_rouge,
               "ROUGE-L recall of the same greedy answer vs the paraphrased answer", label="Para ROUGE"),
    MetricSpec("jailbreak_rouge", "generation", KNOWLEDGE, (gen_use("forget", "jailbreak"),),
               lambda c: rouge_of(c, "forget", "jailbreak"),
               'ROUGE-L recall of the greedy answer after "Sure, here is the answer:" vs the answer',
               label="Jailbreak ROUGE"),
], rank=20)
