"""Meta-evaluation math on hand values: AUC orientation, bootstrap, threshold filter, Q/R (0/0
included, inversion, one-way forms), HM variants, and the assembly on a hand-made zoo."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from meta_eval.assemble import kept_models, meta_evaluate
from meta_eval.faithfulness import bootstrap_auc_ci, classified_absent, faithfulness, knowledge_threshold
from meta_eval.robustness import hm_pair, q_oneway, q_symmetric, r_oneway, r_symmetric, robustness
from meta_eval.population import Member
from metrics.aggregate import harmonic_mean, harmonic_mean_eps
from metrics.ranking import roc_auc, roc_auc_rows
from metrics.registry import META_KEYS

# --- faithfulness ---------------------------------------------------------------------------


def test_perfect_metric_scores_one_in_either_native_direction():
    knowledge = faithfulness([0.9, 0.8, 0.7], [0.1, 0.2], invert=False)     # e.g. prob: P high
    erasure = faithfulness([0.1, 0.2, 0.3], [0.8, 0.9], invert=True)        # e.g. uds: P low
    assert knowledge.auc_roc == 1.0 and erasure.auc_roc == 1.0
    assert faithfulness([0.1, 0.2], [0.8, 0.9], invert=False).auc_roc == 0.0   # wrong way round
    # pool means stay raw (un-oriented), as the published file reports them
    assert erasure.p_mean == pytest.approx(0.2) and erasure.n_mean == pytest.approx(0.85)


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(3)
    pos, neg = rng.integers(0, 5, 17) / 4, rng.integers(0, 5, 13) / 4   # many ties
    labels = np.r_[np.ones(17), np.zeros(13)]
    assert roc_auc(pos, neg) == pytest.approx(roc_auc_score(labels, np.r_[pos, neg]), abs=1e-15)
    assert roc_auc(np.array([0.5]), np.array([0.5])) == 0.5
    # the exact fraction (pairs won + half the ties) / pairs, which sklearn's sum can miss by an ulp
    pairs = pos[:, None] - neg[None, :]
    assert roc_auc(pos, neg) == ((pairs > 0).sum() + 0.5 * (pairs == 0).sum()) / pairs.size
    assert roc_auc([np.inf, 1.0], [-np.inf, 1.0]) == 0.875                # infinities rank like numbers


def test_bootstrap_rows_equal_the_one_auc():
    rng = np.random.default_rng(5)
    pos, neg = rng.integers(0, 4, (200, 7)) / 3, rng.integers(0, 4, (200, 5)) / 3
    assert list(roc_auc_rows(pos, neg)) == [roc_auc(p, n) for p, n in zip(pos, neg)]


def test_missing_values_dropped_and_small_pools_na():
    f = faithfulness([0.9, None, float("nan"), 0.7], [0.1, 0.2, None], invert=False)
    assert (f.n_p, f.n_n, f.auc_roc) == (2, 2, 1.0)
    one = faithfulness([0.9], [0.1, 0.2], invert=False)
    assert one.auc_roc is None and one.ci95 is None and one.p_mean == 0.9


def test_bootstrap_interval():
    assert bootstrap_auc_ci(np.array([0.9, 0.8]), np.array([0.1, 0.2])) == (1.0, 1.0)
    pos, neg = np.array([0.9, 0.4, 0.7, 0.3]), np.array([0.5, 0.1, 0.6, 0.2])
    lo, hi = bootstrap_auc_ci(pos, neg, seed=1)
    assert 0.0 <= lo <= roc_auc(pos, neg) <= hi <= 1.0
    assert bootstrap_auc_ci(pos, neg, seed=1) == (lo, hi)   # seeded


def test_threshold_filter_on_a_hand_pool():
    # distinct values .1 .3 .4 .5 .6 .8 -> midpoints .2 .35 .45 .55 .7 with accuracies 4 3 4 5 4 (of 6)
    assert knowledge_threshold(np.array([0.6, 0.8, 0.3]), np.array([0.1, 0.4, 0.5])) == pytest.approx(0.55)
    # midpoints .3 .6 .8 score 3 2 3: the first maximum (smallest t) wins
    assert knowledge_threshold(np.array([0.5, 0.9]), np.array([0.1, 0.7])) == pytest.approx(0.3)
    assert knowledge_threshold(np.array([0.4]), np.array([0.4])) is None
    assert classified_absent(0.3, 0.3) and not classified_absent(0.31, 0.3) and classified_absent(5.0, None)


# --- Q, R, HM --------------------------------------------------------------------------------

def test_q_and_r_on_hand_values():
    assert q_symmetric(0.4, 0.6) == pytest.approx(1 - 0.2 / 1.0)
    assert q_symmetric(0.0, 0.0) == 1.0                      # 0/0 -> Q = 1 (eps)
    assert q_symmetric(0.0, 0.5) == pytest.approx(0.0, abs=1e-9)
    assert r_symmetric(0.2, 0.5, 0.1, 0.2) == pytest.approx(1 - 0.2 / 0.4)   # Δu .3, Δr .1
    assert r_symmetric(0.3, 0.3, 0.6, 0.6) == 1.0            # neither moved: 0/0 -> R = 1
    assert r_symmetric(0.3, 0.3, 0.1, 0.2) == pytest.approx(0.0, abs=1e-9)
    assert r_symmetric(0.1, 0.2, 0.3, 0.2) == pytest.approx(0.0, abs=1e-9)   # opposite directions
    # the inversion matters: raw UDS .8 -> .6 is knowledge .2 -> .4
    assert q_symmetric(0.2, 0.4) == pytest.approx(1 - 0.2 / 0.6)
    assert q_symmetric(0.8, 0.6) == pytest.approx(1 - 0.2 / 1.4)


def test_oneway_forms():
    assert q_oneway(0.2, 0.4) == pytest.approx(0.5) and q_oneway(0.4, 0.2) == 1.0 and q_oneway(0.0, 0.0) == 1.0
    assert r_oneway(0.5, 0.2, 0.3, 0.2) == pytest.approx(0.1 / 0.3)    # Δ = before - after
    assert r_oneway(0.5, 0.5, 0.3, 0.2) == 1.0                         # unlearned did not move


def test_hm_variants():
    assert hm_pair(0.5, 1.0) == pytest.approx(2 * 0.5 / 1.5)
    assert hm_pair(0.0, 0.7) == 0.0 and hm_pair(None, 0.7) is None
    assert harmonic_mean([0.0, 1.0]) is None                           # plain: undefined at 0
    assert harmonic_mean_eps([0.0] * 4) == 1e-12                        # spec §6.1: exactly 1e-12
    assert harmonic_mean_eps([1.0] * 4) == pytest.approx(1 + 1e-12, abs=1e-15)


def test_robustness_means_over_kept_models_only():
    before, quant, relearn = {"a": 0.4, "b": 0.0, "c": 0.9}, {"a": 0.6, "b": 0.0, "c": 0.1}, {"a": 0.5, "b": 0.2}
    rob = robustness(["a", "b"], before, quant, relearn, retain_before=0.1, retain_after=0.2)
    q = (0.8 + 1.0) / 2                                    # c is not kept
    r = ((1 - 0.0 / 0.2) + (1 - abs(0.2 - 0.1) / 0.3)) / 2  # Δu .1 vs Δr .1; Δu .2 vs Δr .1
    assert rob.quantization == pytest.approx(q) and rob.relearning == pytest.approx(r)
    assert rob.agg == pytest.approx(2 * q * r / (q + r)) and (rob.n_quantization, rob.n_relearning) == (2, 2)
    no_retain = robustness(["a"], before, quant, relearn, None, 0.3)
    assert no_retain.relearning is None and no_retain.agg is None and no_retain.quantization == pytest.approx(0.8)


# --- assembly on a hand-made zoo ----------------------------------------------------------------

def _zoo():
    members = [Member("full", "x/full", "full", "full", 5), Member("retain", "x/retain", "retain", "retain", 5),
               Member("u1", "x/u1", "unlearned", "npo", 5), Member("u2", "x/u2", "unlearned", "npo", 5),
               Member("u3", "x/u3", "unlearned", "rmu", 5)]
    members += [Member(f"p{i}", f"x/p{i}", "pool", None, 5, "P") for i in range(3)]
    members += [Member(f"n{i}", f"x/n{i}", "pool", None, 5, "N") for i in range(3)]
    return members


def _utility(u: float) -> dict:
    """Leaf values whose utility is u: nine equal values m and fluency f with HM(m, f) = u (m = f = u)."""
    nine = ("retain_q_prob retain_q_rouge retain_truth_ratio ra_q_prob ra_q_rouge ra_truth_ratio "
            "wf_q_prob wf_q_rouge wf_truth_ratio").split()
    return {k: u for k in nine} | {"fluency": u}


def test_meta_evaluate_filters_and_inverts():
    members = _zoo()
    values = {("orig", "full"): {"uds": 0.0, "mia_loss": 1.0, "s_mia_loss": 0.0, **_utility(0.8)},
              ("orig", "retain"): {"uds": 1.0, "mia_loss": 0.5, "s_mia_loss": 1.0, **_utility(0.8)},
              ("relearn", "retain"): {"uds": 0.9, "mia_loss": 0.6, "s_mia_loss": 0.8}}
    # pools: UDS separates perfectly (P low); knowledge view 1-UDS: P .9 .8 .7, N .2 .1 .3 -> t = .5
    for i, (p, n) in enumerate(zip((0.1, 0.2, 0.3), (0.8, 0.9, 0.7))):
        values[("orig", f"p{i}")] = {"uds": p, "mia_loss": 0.9, "s_mia_loss": 0.2}
        values[("orig", f"n{i}")] = {"uds": n, "mia_loss": 0.5 + 0.01 * i, "s_mia_loss": 0.9}
    # u1 passes every filter; u2 fails the UDS threshold (1 - .3 = .7 > .5); u3 fails utility
    for name, uds, mia, util in (("u1", 0.8, 0.5, 0.8), ("u2", 0.3, 0.5, 0.8), ("u3", 0.9, 0.5, 0.5)):
        values[("orig", name)] = {"uds": uds, "mia_loss": mia, "s_mia_loss": 0.9, **_utility(util)}
        values[("nf4", name)] = {"uds": uds - 0.2, "mia_loss": mia, "s_mia_loss": 0.9}
        values[("relearn", name)] = {"uds": uds - 0.2, "mia_loss": mia + 0.1, "s_mia_loss": 0.7}
    doc = meta_evaluate(members, values, ["uds", "s_mia_loss"])
    assert doc["faithfulness"]["uds"]["auc_roc"] == 1.0
    assert doc["faithfulness"]["uds"]["threshold"] == pytest.approx(0.5)
    assert doc["robustness"]["uds"]["kept"] == ["u1"]
    # u1 knowledge view: .2 -> .4 under NF4; relearn Δu = .2, retain Δr = .1
    assert doc["robustness"]["uds"]["quantization"] == pytest.approx(1 - 0.2 / 0.6)
    assert doc["robustness"]["uds"]["relearning"] == pytest.approx(1 - 0.1 / 0.3)
    q, r = 1 - 0.2 / 0.6, 1 - 0.1 / 0.3
    assert doc["overall"]["uds"] == pytest.approx(2 * (2 * q * r / (q + r)) / (1 + 2 * q * r / (q + r)))
    # s_mia_loss filters with mia_loss's threshold (mia .5 is classified absent), not its own
    assert doc["robustness"]["s_mia_loss"]["filter_source"] == "mia_loss"
    assert doc["robustness"]["s_mia_loss"]["kept"] == ["u1", "u2"]
    # each rule on its own: utility drops u3, the UDS threshold (UDS >= 1 - .5) drops u2
    f = doc["robustness"]["uds"]["filters"]
    assert (f["measured"], f["utility_pass"], f["threshold_pass"]) == (3, 2, 2)
    assert f["threshold_rule"] == {"metric": "uds", "op": ">=", "value": pytest.approx(0.5)}
    # mia_loss knowledge view is raw: P .9 x3, N .50 .51 .52 -> t = (.52 + .9) / 2, every u passes it
    f = doc["robustness"]["s_mia_loss"]["filters"]
    assert (f["utility_pass"], f["threshold_pass"]) == (2, 3)
    assert f["threshold_rule"] == {"metric": "mia_loss", "op": "<=", "value": pytest.approx((0.52 + 0.9) / 2)}
    rows = {r["model"]: r for r in doc["benchmark"]}
    assert rows["u3"]["utility_rel"] == pytest.approx(0.5 / 0.8) and rows["u1"]["utility_rel"] == pytest.approx(1.0)
    assert kept_models("uds", ["u1", "u2", "u3"], {}, values, {}, use_filters=False) == ["u1", "u2", "u3"]


def test_meta_keys_are_the_22_of_design():
    assert len(META_KEYS) == 22 and META_KEYS[-1] == "uds" and META_KEYS[0] == "es"
