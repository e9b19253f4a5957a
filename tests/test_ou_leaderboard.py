"""`uds leaderboard` on Open-Unlearning results written with the uds plug-in (`uds`, `uds_<key>`
entries), and extra registry columns appearing only when results hold them."""

from __future__ import annotations

import csv
import io
import json

import pytest

from uds_leaderboard.render import ID_COLUMNS, SHOWN, to_markdown
from uds_leaderboard.rows import leaderboard_rows
from uds_leaderboard.inputs import load_results
from metrics.registry import REGISTRY
from uds.cli import main

OU_NATIVE = {"extraction_strength": 0.3, "exact_memorization": 0.5, "forget_Q_A_PARA_Prob": 0.1,
             "mia_loss": 0.6, "mia_zlib": 0.6, "mia_min_k": 0.6, "mia_min_k_plus_plus": 0.6, "model_utility": 0.6}
EXTRA = next((k for k in REGISTRY if REGISTRY[k].orientation == "knowledge" and k.startswith("mem_bits")), None)


def _write(folder, summary: dict | None = None, evals: dict | None = None) -> None:
    folder.mkdir(parents=True)
    if summary is not None:
        (folder / "TOFU_SUMMARY.json").write_text(json.dumps(summary))
    if evals is not None:
        (folder / "TOFU_EVAL.json").write_text(json.dumps(evals))


def _header(md: str) -> list[str]:
    return [c.strip() for c in md.splitlines()[0].strip("|").split("|")]


def test_plugin_keys_are_read_from_ou_summaries(tmp_path):
    root = tmp_path / "saves" / "eval"
    _write(root / "retain", OU_NATIVE | {"uds": 1.0, "uds_cka": 0.9, "uds_logit_lens": 0.95})
    _write(root / "npo_lr1e5_b01_a1_ep5", OU_NATIVE | {"uds": 0.25, "uds_cka": 0.4, "uds_logit_lens": 0.5,
                                                       "uds_not_a_metric": 7.0})
    # only TOFU_EVAL.json (OU writes the summary from its agg_values): a null agg_value stays absent
    _write(root / "graddiff_lr1e5_a1_ep5", evals={"uds": {"agg_value": 0.75, "value_by_index": {}},
                                                  "uds_cka": {"agg_value": None}})
    records = {r["model"]: r for r in load_results(root)[0]}
    npo = records["npo_lr1e5_b01_a1_ep5"]
    assert (npo["uds"], npo["cka"], npo["logit_lens"], npo["es"]) == (0.25, 0.4, 0.5, 0.3)
    assert "not_a_metric" not in npo and "uds_not_a_metric" not in npo
    assert records["graddiff_lr1e5_a1_ep5"]["uds"] == 0.75 and "cka" not in records["graddiff_lr1e5_a1_ep5"]
    rows = {r["model"]: r for r in leaderboard_rows(list(records.values()))}
    assert rows["npo_lr1e5_b01_a1_ep5"]["privacy"] is not None   # UDS enters Privacy = HM(MIA, UDS)
    out = tmp_path / "board.csv"
    assert main(["leaderboard", "--results", str(root), "--out", str(out)]) == 0
    table = {r["model"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert float(table["npo_lr1e5_b01_a1_ep5"]["uds"]) == 0.25 and float(table["retain"]["cka"]) == 0.9


def test_default_table_is_unchanged_without_extra_metrics(tmp_path):
    records = [{"model": "retain", "method": "retain", "epoch": 5, "uds": 1.0, "es": 0.1},
               {"model": "npo_a_ep5", "method": "npo", "epoch": 5, "uds": 0.5, "es": 0.2, "cka": 0.3}]
    md = to_markdown(leaderboard_rows(records))
    assert _header(md) == list(ID_COLUMNS + SHOWN)
    assert md.endswith("every column is higher = better.\n")


@pytest.mark.skipif(EXTRA is None, reason="no knowledge-oriented mem_bits metric in the registry yet")
def test_extra_registry_metric_gets_a_column_marked_by_its_orientation(tmp_path):
    root = tmp_path / "saves"
    _write(root / "retain", OU_NATIVE | {"uds": 1.0, f"uds_{EXTRA}": 0.0})
    _write(root / "npo_lr1e5_b01_a1_ep5", OU_NATIVE | {"uds": 0.5, f"uds_{EXTRA}": 3.0})
    _write(root / "rmu_lr1e5_l5_s10_ep5", OU_NATIVE | {"uds": 0.6, f"uds_{EXTRA}": 1.5})
    out = tmp_path / "board.md"
    assert main(["leaderboard", "--results", str(root), "--out", str(out)]) == 0
    md = out.read_text()
    assert _header(md) == list(ID_COLUMNS + SHOWN) + [EXTRA]
    rmu = next(line for line in md.splitlines() if line.startswith("| rmu_"))
    assert rmu.rstrip(" |").endswith("**1.500**")   # knowledge-oriented: the lowest is best (3 decimals)
    assert f"lower = better: {EXTRA}" in md
