"""`uds leaderboard` from each input form (records file, per-model folders, Open-Unlearning folders,
the published method_results.json layout), in md / csv / html, with the Mem-Privacy scatter."""

from __future__ import annotations

import csv
import io
import json

import pytest

from meta_eval.benchmark import AGGREGATE_KEYS, benchmark_rows
from uds_leaderboard.render import to_html
from uds_leaderboard.rows import leaderboard_rows
from uds_leaderboard.inputs import describe, load_results
from metrics.utility import UTILITY_KEYS
from uds.cli import main

MODELS = ("full", "retain", "npo_lr1e5_b01_a1_ep5", "npo_lr2e5_b01_a1_ep5", "rmu_lr1e5_l5_s10_ep5")


def _raw(i: int) -> dict:
    """Leaf values of model i: distinct, all in (0, 1)."""
    x = 0.1 + 0.15 * i
    return {"es": x, "em": x + 0.05, "paraprob": x / 2, "truth_ratio": 0.5 + x / 5, "uds": 1 - x,
            "s_mia_loss": 1 - x, "s_mia_zlib": 1 - x / 2, "s_mia_min_k": 0.9 - x / 2, "s_mia_min_kpp": 0.8,
            **{k: 0.7 - 0.02 * i for k in UTILITY_KEYS}, "fluency": 0.9 - 0.01 * i}


def _records() -> list[dict]:
    return [{"model": m, "method": describe(m)[0], "epoch": describe(m)[1] or 5, **_raw(i)}
            for i, m in enumerate(MODELS)]


def _check_outputs(tmp_path, results, expected_rows):
    for fmt in ("md", "csv", "html"):
        out = tmp_path / f"board.{fmt}"
        assert main(["leaderboard", "--results", str(results), "--format", fmt, "--out", str(out)]) == 0
        text = out.read_text()
        for m in MODELS:
            assert m in text
        for col in ("model",) + AGGREGATE_KEYS:
            assert col in text
    table = list(csv.DictReader(io.StringIO((tmp_path / "board.csv").read_text())))
    assert [r["model"] for r in table][:2] == ["full", "retain"] and len(table) == len(MODELS)
    for r in table:
        exp = expected_rows[r["model"]]
        for k in AGGREGATE_KEYS:
            assert float(r[k]) == pytest.approx(exp[k], abs=1e-12)
    assert (tmp_path / "board_mem_privacy.png").stat().st_size > 0


def test_records_file(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_records()))
    expected = {r["model"]: r for r in benchmark_rows(_records())}
    assert expected["npo_lr1e5_b01_a1_ep5"]["utility_rel"] < 1.0
    _check_outputs(tmp_path, path, expected)


def test_model_folders_with_metrics_and_uds_summary(tmp_path):
    root = tmp_path / "runs"
    for i, m in enumerate(MODELS):
        folder = root / m
        folder.mkdir(parents=True)
        raw = _raw(i)
        uds = raw.pop("uds")
        (folder / "metrics.json").write_text(json.dumps({"model": m, "metrics": raw}))
        (folder / "summary.json").write_text(json.dumps({"uds": uds, "n_examples": 3}))
    # folders carry no epoch for full/retain: the full record stands for every epoch group
    expected = {r["model"]: r for r in leaderboard_rows(
        [{"model": m, "method": describe(m)[0], "epoch": describe(m)[1], **_raw(i)} for i, m in enumerate(MODELS)])}
    assert expected["npo_lr2e5_b01_a1_ep5"]["utility_rel"] is not None
    _check_outputs(tmp_path, root, expected)


def test_open_unlearning_folders(tmp_path):
    root = tmp_path / "ou"
    for name, mia in (("retain", 0.4), ("npo_lr1e5_b01_a1_ep5", 0.6)):
        f = root / name
        f.mkdir(parents=True)
        (f / "TOFU_SUMMARY.json").write_text(json.dumps({
            "extraction_strength": 0.3, "exact_memorization": 0.5, "forget_Q_A_PARA_Prob": 0.1,
            "forget_truth_ratio": 0.9, "mia_loss": mia, "mia_min_k_plus_plus": mia, "model_utility": 0.6,
            "forget_Q_A_gibberish": 0.8}))
        (f / "TOFU_EVAL.json").write_text(json.dumps({"forget_truth_ratio": {
            "agg_value": 0.9, "value_by_index": {"0": {"truth_ratio": 1.0}, "1": {"truth_ratio": 3.0}}}}))
    records, _ = load_results(root)
    npo = next(r for r in records if r["model"] == "npo_lr1e5_b01_a1_ep5")
    assert (npo["method"], npo["epoch"], npo["es"], npo["mia_min_kpp"]) == ("npo", 5, 0.3, 0.6)
    assert npo["truth_ratio"] == pytest.approx((1 / 2 + 1 / 4) / 2)        # mean 1 / (1 + r), not OU's aggregate
    assert npo["s_mia_loss"] == pytest.approx(1 - 0.2 / 0.4) and npo["fluency"] == 0.8   # retain AUC anchor
    assert "jailbreak_rouge" not in npo and "uds" not in npo


def test_published_layout_reproduces_sanity_values(tmp_path):
    """Leaf values of the published full and retain rows (spec §6.3 sanity: full mem 0.1033, retain
    overall 0.8070), stored as 1 - x and s_* fields, with the file's full_utility."""
    util = dict(zip(UTILITY_KEYS, (0.8669655379652977, 0.7915837238485629, 0.5115173553380573, 0.40675128694658824,
                                   0.847, 0.5228499235405727, 0.4231283552727529, 0.7937321937321938,
                                   0.590356876466129)))
    retain = {"model": "retain", "epoch": "ep10", "method": "retain", "uds": 1.0, "s_loss": 1.0, "s_zlib": 1.0,
              "s_mink": 1.0, "s_minkpp": 1.0, "one_minus_es": 0.9410334254012416, "one_minus_em": 0.40987262561917304,
              "one_minus_paraprob": 0.9449263802386122, "one_minus_truth": 0.43290894326792495,
              "fluency": 0.8994657691195607, **util}
    path = tmp_path / "method_results.json"
    path.write_text(json.dumps({"models": [retain], "full_utility": {"ep5": 0.712369592133051,
                                                                      "ep10": 0.7117632523209635}}))
    rows = leaderboard_rows(*load_results(path))
    assert rows[0]["mem"] == pytest.approx(0.582183839279926, abs=1e-12)
    assert rows[0]["model_utility"] == pytest.approx(0.5905297105697398, abs=1e-12)
    assert rows[0]["utility_rel"] == 1.0 and rows[0]["overall"] == pytest.approx(0.8069569394997369, abs=1e-12)


def test_es_one_shows_mem_zero_and_is_ranked(tmp_path):
    """spec §6.1 as amended: ES = 1 gives Mem 0 (not a blank); Overall follows its formula, so the
    row is ranked, by that (tiny) Overall, below the unlearned models with a positive Mem (the
    references stay first)."""
    records = _records()
    records[2] = records[2] | {"es": 1.0}                 # npo_lr1e5_b01_a1_ep5
    records[0] = records[0] | {"es": 1.0}                 # the full model (the tiny world's case)
    rows = leaderboard_rows(records)
    by = {r["model"]: r for r in rows}
    for m in ("full", "npo_lr1e5_b01_a1_ep5"):
        r = by[m]
        assert r["mem"] == 0.0
        e = 1e-12
        assert r["overall"] == pytest.approx(3 / (1 / e + 1 / (r["privacy"] + e) + 1 / (r["utility_rel"] + e)),
                                             rel=1e-12)
    unlearned = sorted((m for m in by if m not in ("full", "retain")), key=lambda m: -by[m]["overall"])
    assert [r["model"] for r in rows] == ["full", "retain"] + unlearned      # references, then Overall
    assert unlearned[-1] == "npo_lr1e5_b01_a1_ep5"
    path = tmp_path / "results.json"
    path.write_text(json.dumps(records))
    out = tmp_path / "board.csv"
    assert main(["leaderboard", "--results", str(path), "--format", "csv", "--out", str(out)]) == 0
    table = {r["model"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert float(table["npo_lr1e5_b01_a1_ep5"]["mem"]) == 0.0 and table["npo_lr1e5_b01_a1_ep5"]["overall"] != ""
    md = (tmp_path / "board.md")
    assert main(["leaderboard", "--results", str(path), "--out", str(md)]) == 0
    npo_line = next(line for line in md.read_text().splitlines() if "npo_lr1e5_b01_a1_ep5" in line)
    assert npo_line.split("|")[5].strip() == "0"           # the mem column shows 0, not a blank


def test_html_is_self_contained_and_marks_best():
    page = to_html(leaderboard_rows(_records()))
    assert "<script>" in page and "http" not in page.split("<body>")[1]    # no external resources
    assert page.count("<tbody>") == 4                                       # full, retain, npo, rmu
    assert "&#9733;" in page


def test_describe_names():
    assert describe("npo_lr1e5_b01_a1_ep5") == ("npo", 5)           # registry alias
    assert describe("simnpo_lr5e-4_b35_a1_d1_g0125_ep10") == ("simnpo", 10)   # tiny-world name
    assert describe("full") == ("full", None)


def test_bad_results_path(tmp_path, capsys):
    assert main(["leaderboard", "--results", str(tmp_path / "nope.json")]) == 2
    assert "results not found" in capsys.readouterr().err
