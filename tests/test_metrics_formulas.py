"""Formulas of the output-level metrics on hand-built inputs (values worked out by hand or by a
second, deliberately simple implementation)."""

from __future__ import annotations

import math
import re
import zlib

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from metrics import memorization as mem
from metrics import mia
from metrics.aggregate import harmonic_mean, harmonic_mean_eps
from metrics.rouge_metrics import mean_rouge_l_recall, rouge_l_recall
from metrics.stats import batch_token_stats, prob, token_stats
from metrics.utility import (UTILITY_KEYS, clean_class_prob, mean_token_prob, model_utility, normalised_prob,
                             proxy_fluency)


# --- per-example statistics ----------------------------------------------------------------------

P1 = [0.2, 0.5, 0.3]   # distribution at position 1, scoring label 1
P2 = [0.1, 0.1, 0.8]   # distribution at position 2, scoring label 2 (the final "eos")


def _hand_logits() -> tuple[torch.Tensor, torch.Tensor]:
    """4 positions, vocab 3; labels on positions 2 and 3; logits = log p so softmax returns p."""
    logits = torch.tensor([[0.0, 0.0, 0.0], [math.log(x) for x in P1], [math.log(x) for x in P2], [0.0, 0.0, 0.0]])
    labels = torch.tensor([-100, -100, 1, 2])
    return logits, labels


def test_token_stats_by_hand():
    st = token_stats(*_hand_logits())
    assert st.n_labels == 2
    assert st.avg_loss == pytest.approx(-(math.log(0.5) + math.log(0.8)) / 2, rel=1e-6)
    assert prob(st) == pytest.approx(math.sqrt(0.5 * 0.8), rel=1e-6)   # prob includes the eos token
    # A⁻ drops the last labelled token: one position left
    assert st.preds.tolist() == [1] and st.targets.tolist() == [1]
    assert st.logprobs.tolist() == pytest.approx([math.log(0.5)], rel=1e-6)
    mu = sum(p * math.log(p) for p in P1)
    sigma = math.sqrt(sum(p * math.log(p) ** 2 for p in P1) - mu ** 2)
    assert st.zscores.tolist() == pytest.approx([(math.log(0.5) - mu) / sigma], rel=1e-5)


def test_minkpp_variance_floor():
    # A one-hot distribution has zero variance: sigma^2 is floored at 1e-6 (sigma = 1e-3).
    logits = torch.tensor([[0.0, -1e4, -1e4], [0.0, -1e4, -1e4], [0.0, 0.0, 0.0]])
    st = token_stats(logits, torch.tensor([-100, 0, 2]))
    assert st.zscores.tolist() == pytest.approx([0.0], abs=1e-6)
    st = token_stats(logits, torch.tensor([-100, 1, 2]))
    assert st.zscores[0] == pytest.approx(-1e4 / 1e-3, rel=1e-3)


def test_batch_stats_ignore_padding_and_match_rows():
    logits, labels = _hand_logits()
    batch_logits = torch.stack([logits, logits])
    padded = torch.tensor([[-100, -100, 1, 2], [-100, 1, -100, -100]])
    a, b = batch_token_stats(batch_logits, padded)
    assert a.avg_loss == pytest.approx(token_stats(logits, labels).avg_loss)
    # row b: its only label sits at position 1, scored by the uniform logits of position 0
    assert b.n_labels == 1 and b.avg_loss == pytest.approx(math.log(3.0)) and len(b.preds) == 0


# --- memorisation ----------------------------------------------------------------------------------

@pytest.mark.parametrize("preds, targets, expected", [
    ([1, 2, 3, 4], [1, 2, 3, 4], 1.0),      # whole answer extracted
    ([0, 0, 3, 4], [1, 2, 3, 4], 0.5),      # suffix from index 2
    ([1, 2, 3, 9], [1, 2, 3, 4], 0.25),     # no suffix matches: floor 1/T, not 0
    ([9, 9, 9, 4], [1, 2, 3, 4], 0.25),     # only the last token: also 1/T
    ([], [], 0.0),
])
def test_extraction_strength(preds, targets, expected):
    assert mem.extraction_strength(np.array(preds), np.array(targets)) == pytest.approx(expected)


def test_exact_memorization():
    assert mem.exact_memorization(np.array([1, 0, 3, 0]), np.array([1, 2, 3, 4])) == 0.5
    assert mem.exact_memorization(np.array([]), np.array([])) is None


def test_truth_ratio_variants():
    pc, pw = 0.6, 0.2
    assert mem.truth_ratio_prob_mean(pc, pw) == pytest.approx(0.75, rel=1e-9)
    assert mem.truth_ratio_true_better(pc, pw) == pytest.approx(2 / 3, rel=1e-9)
    assert mem.truth_ratio_true_better(0.2, 0.6) == 0.0                              # clipped at 0


def test_wrong_prob_is_geometric_mean_and_paraphrase_rule():
    losses = [1.0, 2.0, 3.0]
    gm = (math.exp(-1) * math.exp(-2) * math.exp(-3)) ** (1 / 3)
    assert mem.wrong_prob(losses) == pytest.approx(gm, rel=1e-12)
    assert mem.combined_prob([0.3]) == 0.3
    assert mem.combined_prob([0.25, 0.04]) == pytest.approx(0.1)
    assert mem.combined_prob([0.0, 1.0]) == pytest.approx(1e-6)   # clip at 1e-12 before the log


# --- MIA -------------------------------------------------------------------------------------------

def test_min_k_uses_floor_with_one_minimum():
    lp = np.array([-1.0, -5.0, -2.0, -4.0, -3.0])
    assert mia.min_k_score(lp) == pytest.approx(4.5)               # n = floor(0.4·5) = 2
    assert mia.min_k_score(lp[:4]) == pytest.approx(5.0)           # n = floor(1.6) = 1 (ceil would be 2)
    assert mia.min_k_score(np.array([-0.7])) == pytest.approx(0.7)  # n = max(1, 0)
    assert mia.min_k_score(np.array([])) == 0.0
    assert mia.min_kpp_score(np.array([0.5, -2.0, 1.0])) == pytest.approx(2.0)
    assert [mia.min_k_count(t) for t in (1, 2, 3, 4, 5, 10)] == [1, 1, 1, 1, 2, 4]


def test_zlib_score():
    text = "Mara Quill was born in Lisbon."
    assert mia.zlib_score(2.0, text) == pytest.approx(2.0 / len(zlib.compress(text.encode())))
    assert mia.loss_score(1.25) == 1.25


def test_auc_by_hand_and_against_sklearn():
    # non-members above members in 3 of 4 pairs
    assert mia.mia_auc([0.1, 0.4], [0.35, 0.8]) == pytest.approx(0.75)
    assert mia.mia_auc([0.5], [0.5]) == pytest.approx(0.5)             # a tie counts one half
    rng = np.random.default_rng(0)
    members = np.round(rng.normal(1.0, 1.0, 40), 1)                    # rounding makes ties
    nonmembers = np.round(rng.normal(1.5, 1.0, 30), 1)
    labels = [0] * len(members) + [1] * len(nonmembers)
    expected = roc_auc_score(labels, np.concatenate([members, nonmembers]))
    assert mia.mia_auc(members, nonmembers) == pytest.approx(expected, abs=1e-12)


def test_retain_normalised():
    assert mia.retain_normalised(0.7, 0.5) == pytest.approx(0.6)
    assert mia.retain_normalised(0.1, 0.5) == pytest.approx(0.2)
    assert mia.retain_normalised(1.0, 0.4) == 0.0
    assert mia.retain_normalised(0.4, 0.4) == 1.0
    assert mia.retain_normalised(0.5, 0.0) is None


# --- ROUGE -----------------------------------------------------------------------------------------

def _hand_rouge_l_recall(reference: str, generation: str) -> float:
    """Independent: lowercase alphanumeric words, LCS by dynamic programming, / reference length."""
    ref, gen = re.findall(r"[a-z0-9]+", reference.lower()), re.findall(r"[a-z0-9]+", generation.lower())
    table = [[0] * (len(gen) + 1) for _ in range(len(ref) + 1)]
    for i, r in enumerate(ref):
        for j, g in enumerate(gen):
            table[i + 1][j + 1] = table[i][j] + 1 if r == g else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1] / len(ref) if ref else 0.0


@pytest.mark.parametrize("reference, generation", [
    ("The cat sat on the mat.", "the mat sat on the cat"),
    ("Mara Quill was born in Lisbon.", "Born in Lisbon, Mara said."),
    ("A B C D E", "E D C B A"),
    ("one two three", ""),
])
def test_rouge_l_recall_matches_hand_lcs(reference, generation):
    assert rouge_l_recall(reference, generation) == pytest.approx(_hand_rouge_l_recall(reference, generation))


def test_rouge_uses_stemming_and_recall():
    assert rouge_l_recall("dogs running", "the dog runs away quickly") == pytest.approx(1.0)  # stems match
    assert rouge_l_recall("the cat sat", "the cat sat on a very long mat") == 1.0          # recall, not F
    assert mean_rouge_l_recall(["a b", "a c d e"], "a b") == pytest.approx((1.0 + 0.25) / 2)


# --- aggregation and utility -----------------------------------------------------------------------

def test_harmonic_means():
    assert harmonic_mean([1.0, 0.5, 0.25]) == pytest.approx(3 / 7)
    assert harmonic_mean([1.0, 0.0]) is None and harmonic_mean([0.5, None]) is None
    assert harmonic_mean_eps([0.0] * 4) == pytest.approx(1e-12, rel=1e-9)
    assert harmonic_mean_eps([1.0] * 4) == pytest.approx(1 + 1e-12, rel=1e-15)
    assert harmonic_mean_eps([1.0, 0.5, 0.25]) == pytest.approx(3 / 7, rel=1e-9)
    assert harmonic_mean_eps([1.0, 0.0]) == pytest.approx(2e-12, rel=1e-9)   # a zero dominates
    assert harmonic_mean_eps([]) is None


def test_normalised_prob_and_model_utility():
    assert normalised_prob(0.5, [0.1, 0.2, 0.2]) == pytest.approx(0.5, rel=1e-9)
    values = dict(zip(UTILITY_KEYS, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]))
    hand = 9 / sum(1 / v for v in values.values())
    assert model_utility(values) == pytest.approx(hand, rel=1e-9)
    assert model_utility({**values, "wf_q_rouge": None}) is None


def test_fluency_proxy_and_classifier_probability():
    assert mean_token_prob(np.log([0.5, 0.25])) == pytest.approx(0.375)
    assert mean_token_prob(np.array([])) is None
    score, per_item = proxy_fluency([0.2, 0.4, None], [0.5, 0.3])
    assert score == pytest.approx(0.75) and per_item == pytest.approx([0.5, 1.0, None])
    assert proxy_fluency([0.9], [0.3])[0] == 1.0                        # clipped to [0, 1]
    assert proxy_fluency([None], [0.3])[0] is None
    probs = clean_class_prob(np.array([[0.0, 0.0], [math.log(3.0), 0.0]]))
    assert probs.tolist() == pytest.approx([0.5, 0.75])


def test_finite_or_none():
    from uds_core.numbers import finite_or_none

    assert [finite_or_none(x) for x in (None, float("nan"), float("inf"), -np.inf)] == [None] * 4
    assert finite_or_none(np.float32(0.5)) == 0.5 and type(finite_or_none(np.float64(2))) is float
    assert finite_or_none(3) == 3.0 and finite_or_none(True) == 1.0
