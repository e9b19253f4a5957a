"""benchmarks/bench_ou_eval.py's pure parts: OU's eval.log read into seconds, the summary's ratios,
the value comparison and the shared-key map (no model, no OU run, nothing timed)."""

from __future__ import annotations

import json

import pytest

from benchmarks.bench_ou_eval import (OU_SUITE, SHARED_KEYS, compare_values, ou_log_times, ou_values, per_metric,
                                      summarize)
from uds_leaderboard.inputs import OU_KEYS

LOG = """\
[2026-01-01 10:00:00,000][evaluator][INFO] - Evaluations stored in the experiment directory: ./saves/eval/x
[2026-01-01 10:00:01,500][evaluator][INFO] - ***** Running TOFU evaluation suite *****
[2026-01-01 10:00:01,600][metrics][INFO] - Evaluating forget_Q_A_PARA_Prob
[2026-01-01 10:00:31,500][evaluator][INFO] - Result for metric forget_truth_ratio:\t0.6
[2026-01-01 10:00:31,600][evaluator][INFO] - Result for metric forget_quality:\tNone
\x1b[36m[2026-01-01 10:01:01,600][evaluator][INFO] - Result for metric forget_Q_A_Prob:\t0.1\x1b[0m
"""


def test_ou_log_times(tmp_path):
    (tmp_path / "eval.log").write_text(LOG)
    total, per = ou_log_times(tmp_path / "eval.log")
    assert total == pytest.approx(60.1)
    assert per == pytest.approx({"forget_truth_ratio": 30.0, "forget_quality": 0.1, "forget_Q_A_Prob": 30.0})


def test_ou_log_without_results_is_an_error(tmp_path):
    (tmp_path / "eval.log").write_text(LOG.splitlines()[0] + "\n")
    with pytest.raises(RuntimeError, match="no evaluation suite start"):
        ou_log_times(tmp_path / "eval.log")


def _run(side, rnd, seconds):
    return {"side": side, "round": rnd, "wall_s": seconds + 20, "cpu_s": seconds + 10, "eval_s": seconds,
            "per_metric_s": {"forget_Q_A_Prob": seconds}, "per_key_s": {"prob": seconds / 2, "es": 1.0}}


def test_summary_ratios_of_medians_and_per_round():
    runs = [_run("ou", 1, 300), _run("ours", 1, 100), _run("ou", 2, 400), _run("ours", 2, 50)]
    s = summarize(runs)
    assert s["ou"]["eval_s"] == {"median": 350, "min": 300, "max": 400, "n": 2}
    r = s["ou_over_ours"]["eval_s"]
    assert r["of_medians"] == pytest.approx(350 / 75, abs=1e-3)
    assert (r["per_round"]["min"], r["per_round"]["max"]) == (3.0, 8.0)
    assert "ou_over_ours_ou_parity" not in s
    pm = per_metric(runs)
    assert pm["forget_Q_A_Prob"] == {"ours_keys": ["prob"], "ou_s": 350, "ours_s": 37.5}


def test_compare_values_flags_differences_and_missing_values():
    ou = {k: 0.5 for k in SHARED_KEYS}
    ours = dict(ou, prob=0.5 + 2e-3)
    ours.pop("es")
    v = compare_values(ou, ours, 1e-3)
    assert v["max_abs_diff"] == pytest.approx(2e-3)
    assert v["beyond_tolerance"] == ["es", "prob"]


def test_every_shared_key_but_truth_ratio_is_a_mapped_ou_name():
    """The shared keys are OU's default-suite outputs under the leaderboard's name map; truth_ratio
    is rebuilt from the per-item ratios (its OU aggregate is another formula)."""
    mapped = set(OU_KEYS.values())
    assert set(SHARED_KEYS) - mapped == {"truth_ratio"}
    assert len(SHARED_KEYS) == len(set(SHARED_KEYS)) == 16
    assert list(OU_SUITE)[0] == "forget_truth_ratio"


def test_ou_values_reads_every_agg_value_and_per_item_ratios(tmp_path):
    """TOFU_EVAL.json holds the pre-computes (mia_min_k, model utility's parts) that
    TOFU_SUMMARY.json leaves out; OU's per-item truth ratios are stored under `score`."""
    evals = {"forget_Q_A_Prob": {"agg_value": 0.2}, "model_utility": {"agg_value": 0.4},
             "privleak": {"agg_value": -70.0}, "mia_min_k": {"agg_value": 0.3, "auc": 0.3},
             "retain_Q_A_Prob": {"agg_value": 0.5}, "forget_quality": {"agg_value": None},
             "forget_truth_ratio": {"agg_value": 0.6, "value_by_index": {"0": {"score": 1.0}, "1": {"score": 3.0}}}}
    (tmp_path / "TOFU_EVAL.json").write_text(json.dumps(evals))
    v = ou_values(tmp_path)
    assert v == pytest.approx({"prob": 0.2, "model_utility": 0.4, "mia_min_k": 0.3, "retain_q_prob": 0.5,
                               "truth_ratio": (0.5 + 0.25) / 2})
