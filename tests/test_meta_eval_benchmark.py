"""Benchmark aggregation (spec §6.1) on hand-computed rows: plain HM for Mem, +1e-12 for the others,
utility_rel against the same epoch group's full utility with clipping at 1."""

from __future__ import annotations

import pytest

from meta_eval.benchmark import benchmark_rows, epoch_group

NINE = ("retain_q_prob retain_q_rouge retain_truth_ratio ra_q_prob ra_q_rouge ra_truth_ratio "
        "wf_q_prob wf_q_rouge wf_truth_ratio").split()
E = 1e-12


def _leaves(**over) -> dict:
    row = {"es": 0.2, "em": 0.5, "paraprob": 0.1, "truth_ratio": 0.6,
           "s_mia_loss": 0.5, "s_mia_zlib": 0.25, "s_mia_min_k": 1.0, "s_mia_min_kpp": 0.5, "uds": 0.8,
           **{k: 0.5 for k in NINE}, "ra_q_rouge": 0.25, "fluency": 0.9}
    return row | over


def test_hand_computed_row():
    full5 = {"model": "full", "method": "full", "epoch": 5, **{k: 0.75 for k in NINE}, "fluency": 0.75}
    full10 = {"model": "full10", "method": "full", "epoch": "ep10", **{k: 0.5 for k in NINE}, "fluency": 0.5}
    unl5 = {"model": "u5", "method": "npo", "epoch": 5, **_leaves()}
    unl10 = {"model": "u10", "method": "npo", "epoch": "ep10", **_leaves()}
    rows = {r["model"]: r for r in benchmark_rows([full5, full10, unl5, unl10])}
    r = rows["u5"]
    # Mem: plain HM of 1 - x = (.8, .5, .9, .4): 4 / (1.25 + 2 + 10/9 + 2.5) = 36 / 61.75
    assert r["mem"] == pytest.approx(36 / 61.75, abs=1e-15)
    pm = 4 / (1 / (0.5 + E) + 1 / (0.25 + E) + 1 / (1 + E) + 1 / (0.5 + E))
    assert r["privacy_mia"] == pytest.approx(pm, abs=1e-15) and pm == pytest.approx(4 / 9, abs=1e-11)
    priv = 2 / (1 / (pm + E) + 1 / (0.8 + E))
    assert r["privacy"] == pytest.approx(priv, abs=1e-15)
    mu = 9 / (8 / (0.5 + E) + 1 / (0.25 + E))           # = 0.45
    assert r["model_utility"] == pytest.approx(mu, abs=1e-15)
    u = 2 / (1 / (mu + E) + 1 / (0.9 + E))              # = 0.6
    assert r["utility"] == pytest.approx(u, abs=1e-15) and u == pytest.approx(0.6, abs=1e-11)
    mu_full5 = 9 / (9 / (0.75 + E))
    u_full5 = 2 / (1 / (mu_full5 + E) + 1 / (0.75 + E))
    assert r["utility_rel"] == pytest.approx(u / (u_full5 + E), abs=1e-15)   # ~0.8, from the ep5 full
    assert r["overall"] == pytest.approx(3 / (1 / (36 / 61.75 + E) + 1 / (priv + E) + 1 / (r["utility_rel"] + E)),
                                         abs=1e-15)
    assert rows["u10"]["utility_rel"] == 1.0           # 0.6 / 0.5 clipped at 1 (ep10 full)
    assert rows["full"]["utility_rel"] == pytest.approx(1.0) and rows["full"]["epoch"] == "ep5"


def test_variant_choice_at_zero():
    r = benchmark_rows([{"model": "m", "method": "npo", "epoch": 5,
                         **_leaves(es=1.0, s_mia_loss=0.0, s_mia_zlib=0.0, s_mia_min_k=0.0, s_mia_min_kpp=0.0)}])[0]
    assert r["mem"] == 0.0                      # plain HM at its limit: a zero term gives Mem 0 (spec §6.1)
    assert r["privacy_mia"] == 1e-12            # HM_eps of four zeros is exactly 1e-12
    assert r["utility_rel"] is None and r["overall"] is None     # no full model in the group
    assert r["overall_no_uds"] is None          # plain HM view: still null at a zero component (spec §6.1)


def test_mem_zero_enters_overall_by_its_formula():
    """ES = 1 (the tiny full model): Mem = 0 and Overall = HM_eps(0, privacy, utility_rel) by hand."""
    full = {"model": "full", "method": "full", "epoch": 5, **{k: 0.75 for k in NINE}, "fluency": 0.75}
    rows = {r["model"]: r for r in benchmark_rows([full, {"model": "u", "method": "npo", "epoch": 5,
                                                           **_leaves(es=1.0)}])}
    r = rows["u"]
    assert r["mem"] == 0.0
    pm = 4 / (1 / (0.5 + E) + 1 / (0.25 + E) + 1 / (1 + E) + 1 / (0.5 + E))
    priv = 2 / (1 / (pm + E) + 1 / (0.8 + E))
    mu = 9 / (8 / (0.5 + E) + 1 / (0.25 + E))
    u = 2 / (1 / (mu + E) + 1 / (0.9 + E))
    u_full = 2 / (1 / (9 / (9 / (0.75 + E)) + E) + 1 / (0.75 + E))
    rel = u / (u_full + E)
    assert r["utility_rel"] == pytest.approx(rel, abs=1e-15)
    assert r["overall"] == pytest.approx(3 / (1 / (0 + E) + 1 / (priv + E) + 1 / (rel + E)), rel=1e-12)
    assert 2.9e-12 < r["overall"] < 3.1e-12     # dominated by the zero, but defined
    # a negative term (impossible for values in [0, 1]) stays undefined
    assert benchmark_rows([{"model": "v", "method": "npo", "epoch": 5, **_leaves(em=1.5)}])[0]["mem"] is None


def test_open_unlearning_model_utility_mean():
    """--parity open-unlearning: model utility = scipy.stats.hmean of the nine (no epsilon)."""
    from scipy.stats import hmean

    nine = [0.5] * 8 + [0.25]
    row = _leaves(**dict(zip(NINE, nine)))
    ou = benchmark_rows([{"model": "u", "method": "npo", "epoch": 5, **row}], parity="open-unlearning")[0]
    spec = benchmark_rows([{"model": "u", "method": "npo", "epoch": 5, **row}])[0]
    assert ou["model_utility"] == float(hmean(nine)) == pytest.approx(0.45, abs=1e-15)
    assert spec["model_utility"] == pytest.approx(9 / (8 / (0.5 + E) + 1 / (0.25 + E)), abs=1e-15)
    # HM_eps exceeds the plain HM by dHM/deps * eps = HM^2 / 9 * (8 / 0.5^2 + 1 / 0.25^2) * eps = 1.08e-12
    assert spec["model_utility"] - ou["model_utility"] == pytest.approx(0.45 ** 2 / 9 * 48 * E, rel=1e-3)
    zero = benchmark_rows([{"model": "z", "method": "npo", "epoch": 5, **_leaves(wf_q_rouge=0.0)}],
                          parity="open-unlearning")[0]
    assert zero["model_utility"] == 0.0         # scipy: a zero in gives 0 out (HM_eps: 9e-12)


def test_missing_parts_keep_stored_values_and_epoch_groups():
    r = benchmark_rows([{"model": "m", "method": "x", "epoch": None, "mem": 0.3, "uds": 0.5}])[0]
    assert r["mem"] == 0.3 and r["privacy"] is None and r["overall"] is None
    assert [epoch_group(e) for e in (5, "5", "ep10", "epoch10", None)] == ["ep5", "ep5", "ep10", "ep10", None]
    explicit = benchmark_rows([{"model": "u", "method": "npo", "epoch": 5, **_leaves()}], {"ep5": 1.2})[0]
    assert explicit["utility_rel"] == pytest.approx(0.6 / (1.2 + E))


def test_privacy_mia_reads_the_four_retain_normalised_attacks_of_the_registry():
    """benchmark.py names spec §6.1's s_mia_* keys itself (to import without the metric stack): the
    same four the MIA family registers."""
    from meta_eval.benchmark import S_MIA_KEYS
    from metrics.families.mia import ATTACKS

    assert S_MIA_KEYS == tuple(f"s_mia_{a}" for a in ATTACKS)
