"""Memorisation in bits (spec-probes §1.1) as metrics.

x = the answer tokens of a forget item under the chat encoding (eos included, as Prob counts
them); reference = the retain model by default. mem_U(x) = max(0, NLL_ref(x) - NLL_model(x)) in bits.
Deviation from the source (Morris et al.): its reference is a larger model trained on a superset of
the data; the default here is the retain model, trained on everything except the forget set (a
counterfactual reference: what the model would code had it never seen the forget items). The
source's choice is an option: `uds metrics --mem-bits-reference SPEC` (role `reference`). `mem_bits_signed` is
the mean without per-item clipping, with a bootstrap CI, because clipping biases the mean upward.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from uds_core.formula import bootstrap_ci
from metrics import mem_bits as mbits
from metrics.result import MetricResult
from metrics.spec import (ERASURE, FULL, KNOWLEDGE, MODEL, REFERENCE, MetricSpec, mean_of, per_item,
                          register, tf_use)

if TYPE_CHECKING:
    from metrics.context import EvalContext


def _answer_bits(ctx: EvalContext, role: str) -> tuple[np.ndarray, np.ndarray]:
    """(code length in bits, answer length in tokens) of each forget answer under the role's model."""
    from metrics.references import check_reference_tokenizer

    if role != MODEL:
        check_reference_tokenizer(ctx, role)
    stats = ctx.teacher_forced(role, "forget").answers()
    n = np.array([s.n_labels for s in stats], dtype=np.float64)
    return mbits.bits_from_mean_nll([s.avg_loss for s in stats], n), n


def _mem_items(ctx: EvalContext, role: str) -> np.ndarray:
    """mem_U of each forget item under the role's model, retain as reference (NaN: no answer token)."""
    ref, _ = _answer_bits(ctx, REFERENCE)
    bits, n = _answer_bits(ctx, role)
    return np.where(n > 0, mbits.mem_u(ref, bits), np.nan)


def _signed_items(ctx: EvalContext, role: str) -> np.ndarray:
    """NLL_retain - NLL_model of each forget answer in bits, unclipped (NaN: no answer token)."""
    ref, _ = _answer_bits(ctx, REFERENCE)
    bits, n = _answer_bits(ctx, role)
    return np.where(n > 0, mbits.mem_u_signed(ref, bits), np.nan)


def _listed(values: np.ndarray) -> list[float | None]:
    return [float(v) if np.isfinite(v) else None for v in values]


def _mem_bits(c: EvalContext) -> MetricResult:
    return per_item(_listed(_mem_items(c, MODEL)))


def _mem_bits_signed(c: EvalContext) -> MetricResult:
    items = _listed(_signed_items(c, MODEL))
    ci = bootstrap_ci(items, n_boot=2000, seed=0)
    clipped = mean_of([None if v is None else max(0.0, v) for v in items])
    return MetricResult(mean_of(items), items, {"ci95": list(ci) if ci else None, "clipped_mean": clipped,
                                                "reference": c.models.spec(REFERENCE)})


def _mem_bits_per_token(c: EvalContext) -> MetricResult:
    _, n = _answer_bits(c, MODEL)
    with np.errstate(invalid="ignore", divide="ignore"):
        return per_item(_listed(_mem_items(c, MODEL) / n))


def _mem_bits_erased(c: EvalContext) -> MetricResult:
    model, full = _mem_items(c, MODEL), _mem_items(c, FULL)
    items = [mbits.erased(m, f) if np.isfinite(m) and np.isfinite(f) else None for m, f in zip(model, full)]
    return MetricResult(mbits.erased(mean_of(_listed(model)), mean_of(_listed(full))), items)


def _mem_bits_tfidf(c: EvalContext) -> MetricResult:
    from metrics.ranking import spearman

    docs = c.answer_texts("forget")
    corpus = docs + c.answer_texts("retain_eval")   # the retain items every evaluation context holds
    tfidf = mbits.tfidf_scores(docs, corpus)
    rho, p = spearman(tfidf, _mem_items(c, FULL))
    return MetricResult(rho, _listed(tfidf), {"spearman_p": p, "corpus": "forget + retain_eval answers"})


_MEM_TF = tf_use("forget", "answer", roles=(MODEL, REFERENCE))
_MEM_TF_FULL = tf_use("forget", "answer", roles=(MODEL, REFERENCE, FULL))
register([
    MetricSpec("mem_bits", "memorization_bits", KNOWLEDGE, (_MEM_TF,), _mem_bits,
               "mean over forget items of max(0, NLL_retain - NLL_model) of the answer tokens, in bits "
               "(reference = the retain model, not the source's superset-trained reference; per-item clipping "
               "biases this mean upward, see mem_bits_signed)",
               group="probe", label="Mem bits"),
    MetricSpec("mem_bits_signed", "memorization_bits", KNOWLEDGE, (_MEM_TF,), _mem_bits_signed,
               "mean over forget items of NLL_retain - NLL_model of the answer tokens in bits, unclipped: "
               "0 up to noise for a model that never saw the forget set; info ci95 = bootstrap 95% CI "
               "(2000 resamples, seed 0)", group="probe", label="Mem bits, signed"),
    MetricSpec("mem_bits_per_token", "memorization_bits", KNOWLEDGE, (_MEM_TF,), _mem_bits_per_token,
               "the same per item divided by its answer length in tokens (bits per token)", group="probe",
               label="Mem bits per token"),
    MetricSpec("mem_bits_erased", "memorization_bits", ERASURE, (_MEM_TF_FULL,), _mem_bits_erased,
               "clip(1 - mem_bits(model) / mem_bits(full), 0, 1): full 0, retain 1", group="probe",
               label="Mem bits erased"),
    MetricSpec("mem_bits_tfidf", "memorization_bits", KNOWLEDGE,
               (tf_use("forget", "answer", roles=(REFERENCE, FULL)),), _mem_bits_tfidf,
               "diagnostic, not a model score: Spearman rho of per-item TF-IDF (per_example) with mem_U of "
               "the full model", group="diagnostic", label="TF-IDF vs mem bits (rho)"),
], rank=70)
