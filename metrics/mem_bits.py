"""Memorisation in bits (spec-probes §1.1-1.2, Morris et al.): code lengths in, bits out.

A sequence's code length under a causal LM is its negative log-likelihood in bits,
`NLL(x) = -sum_t log2 p(x_t | x_<t)`. With a reference model that knows the distribution but not
the sample, the unintended memorisation of `x` by the model under test is
`mem_U(x) = max(0, NLL_ref(x) - NLL_model(x))` (the best code may use either model).
The mean of clipped values is biased upward (noise in either direction counts only when it is
positive), so the unclipped difference `NLL_ref(x) - NLL_model(x)` is kept beside it: its mean is
0 up to noise for a model that saw the data no more than the reference did.
Everything here is pure numpy/scipy/scikit-learn: no model work.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
from numpy.typing import ArrayLike

LN2 = math.log(2.0)


def bits_from_logprobs(logprobs: ArrayLike) -> float:
    """Code length in bits of one sequence from its per-token log-probs in nats, shape (T,)."""
    return float(-np.sum(np.asarray(logprobs, dtype=np.float64)) / LN2)


def bits_from_mean_nll(mean_nll_nats: ArrayLike, n_tokens: ArrayLike) -> np.ndarray:
    """Code lengths in bits from mean token cross-entropies (nats) and token counts, elementwise."""
    return np.asarray(mean_nll_nats, dtype=np.float64) * np.asarray(n_tokens, dtype=np.float64) / LN2


def mem_u(ref_bits: ArrayLike, model_bits: ArrayLike) -> np.ndarray:
    """Per-sample unintended memorisation in bits: max(0, NLL_ref - NLL_model), elementwise."""
    return np.maximum(0.0, np.asarray(ref_bits, dtype=np.float64) - np.asarray(model_bits, dtype=np.float64))


def mem_u_signed(ref_bits: ArrayLike, model_bits: ArrayLike) -> np.ndarray:
    """Per-sample code-length gain in bits without clipping: NLL_ref - NLL_model, elementwise
    (negative where the model codes the sample worse than the reference)."""
    return np.asarray(ref_bits, dtype=np.float64) - np.asarray(model_bits, dtype=np.float64)


def erased(mem_model: float | None, mem_full: float | None) -> float | None:
    """clip(1 - mem_model / mem_full, 0, 1): 0 = as memorised as the full model, 1 = nothing left.
    None when the full model memorises nothing (the ratio is undefined)."""
    if mem_model is None or mem_full is None or not mem_full > 0:
        return None
    return float(np.clip(1.0 - mem_model / mem_full, 0.0, 1.0))


# --- which samples are memorised most (spec-probes §1.1, source section on TF-IDF) -------------

def tfidf_scores(docs: Sequence[str], corpus: Sequence[str]) -> np.ndarray:
    """TF-IDF(d; D) = (1/|d|) sum_{w in d} log(|D| / tf(w, D)) per document of `docs`, shape (len(docs),).

    Words are scikit-learn's default word tokens (lower-cased); tf(w, D) is the total count of w
    in the corpus `D` (which must contain every doc), |D| its number of documents, the sum runs
    over word occurrences. A document without words gets NaN. The constant |D| shifts every score
    equally, so rank statistics do not depend on that choice."""
    from sklearn.feature_extraction.text import CountVectorizer   # here: the registry imports this module

    if not corpus:
        raise ValueError("the TF-IDF corpus is empty")
    vec = CountVectorizer()
    counts = np.asarray(vec.fit_transform(corpus).sum(axis=0), dtype=np.float64).ravel()   # tf(w, D)
    per_doc = vec.transform(docs)                                                        # (n_docs, vocab)
    idf = np.log(len(corpus) / counts)
    lengths = np.asarray(per_doc.sum(axis=1), dtype=np.float64).ravel()
    totals = np.asarray(per_doc @ idf, dtype=np.float64).ravel()
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(lengths > 0, totals / np.where(lengths > 0, lengths, 1.0), np.nan)


# --- capacity experiment (spec-probes §1.2): the uniform reference ------------------------------

def uniform_bits(seq_len: int, vocab: int) -> float:
    """Entropy in bits of one sequence of `seq_len` i.i.d. uniform tokens over `vocab` symbols."""
    return seq_len * math.log2(vocab)


def dataset_mem_bits(model_bits: ArrayLike, seq_len: int, vocab: int) -> float:
    """mem(X, model) = sum_x max(0, S log2 V - NLL_model(x)) in bits; model_bits shape (N,)."""
    bits = np.asarray(model_bits, dtype=np.float64)
    return float(mem_u(np.full(bits.shape, uniform_bits(seq_len, vocab)), bits).sum())
