"""`uds report` readers and data model on synthetic result folders (no browser, no models)."""

from __future__ import annotations

import csv
import json
import statistics

import pytest

from tests.report_fixtures import qa_records, uds_of, write_audit, write_meta_eval, write_probe, write_score_run
from uds.cli import main
from uds_core.errors import UdsInputError
from uds.site.payload import build_payload, layer_stats
from uds.site.readers import entity_range, read_results, split_prompt


def test_prompt_and_entity_helpers_by_hand():
    assert split_prompt("Question: Who?\nAnswer: It was") == ("Who?", " It was")
    assert split_prompt("no answer marker") == ("", "no answer marker")
    assert entity_range(" Paris, France.", "Paris") == (1, 6)
    assert entity_range(" Paris, France.", " France ") == (8, 14)     # stripped form found
    assert entity_range(" Paris", "Rome") is None


def test_layer_stats_by_hand():
    ex = [{"s1_delta": [0.2, 0.01], "s2_delta": [0.1, 0.02], "ke_layers": [0]},
          {"s1_delta": [0.4, 0.1], "s2_delta": [0.5, 0.05], "ke_layers": [0, 1]},
          {"s1_delta": None, "s2_delta": None, "ke_layers": []}]          # a skipped example counts nowhere
    st = layer_stats(ex, 2)
    assert st["s1_mean"] == pytest.approx([0.3, 0.055]) and st["s2_mean"] == pytest.approx([0.3, 0.035])
    # layer 0: mean(0.1/0.2, clip(0.5/0.4)) = mean(0.5, 1.0); layer 1: KE only in the second, 0.05/0.1
    assert st["ratio_mean"] == pytest.approx([0.75, 0.5]) and st["ke_count"] == [2, 1]


def test_score_folder_examples_carry_question_answer_and_entity_span(tmp_path):
    write_score_run(tmp_path / "run", "tiny:test/npo", n_examples=8, n_layers=5, seed=3)
    res = read_results([tmp_path / "run"])
    assert len(res.scores) == 1 and not res.skipped
    run = res.scores[0]
    items = {r["idx"]: r for r in qa_records(8)}
    for e in run.examples:
        item = items[e["idx"]]
        assert e["question"] == item["question"] and e["answer"] == item["answer"]
        c0, c1 = e["entity_span"]
        assert e["answer"][c0:c1] == item["entity"] and e["answer"][:c0] == item["prefix"] + " "
    _, per_model = build_payload(res, {})
    doc = per_model[0]
    scored = [e for e in doc["examples"] if e.get("s1_delta")]
    for j in range(5):    # per-layer mean over the examples that have deltas, recomputed here
        assert doc["layers"]["s1_mean"][j] == pytest.approx(statistics.mean(e["s1_delta"][j] for e in scored))
    for e in scored:      # UDS_i in the file is the one spec §2 gives for its deltas
        assert e["uds"] == pytest.approx(uds_of(e["s1_delta"], e["s2_delta"])) if e["uds"] is not None else True


def test_layers_csv_stands_in_for_a_missing_examples_file(tmp_path):
    run = tmp_path / "run"
    write_score_run(run, "m", n_examples=4, n_layers=3)
    recs = [json.loads(x) for x in (run / "examples.jsonl").read_text().splitlines()]
    (run / "examples.jsonl").unlink()
    with (run / "layers.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["idx", "layer", "s1_delta", "s2_delta", "ke"])
        for r in recs:
            for j, (a, b) in enumerate(zip(r["s1_delta"] or [], r["s2_delta"] or [])):
                w.writerow([r["idx"], j, repr(a), repr(b), int(j in r["ke_layers"])])
    res = read_results([run])
    got = {e["idx"]: e for e in res.scores[0].examples}
    for r in recs:
        if r["s1_delta"]:
            assert got[r["idx"]]["s1_delta"] == r["s1_delta"] and got[r["idx"]]["ke_layers"] == r["ke_layers"]
    assert any("examples.jsonl" in str(p) and "layers.csv" in why for p, why in res.skipped)


def test_rows_metrics_and_scores_merge_into_one_table(tmp_path):
    summary = write_score_run(tmp_path / "npo_run", "tiny:small/npo_lr1e-4_ep10", seed=1)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "metrics.json").write_text(json.dumps(
        {"model": "tiny:small/npo_lr1e-4_ep10", "metrics": {"es": 0.25, "rouge": float("nan")}, "per_example": {}}))
    with (tmp_path / "board.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerows([["model", "method", "epoch", "overall", "uds"], ["npo_lr1e-4_ep10", "npo", "10", "0.5", "0.9"],
                     ["rmu_x", "rmu", "10", "0.7", ""]])
    res = read_results([tmp_path])
    index, per_model = build_payload(res, {})
    by_name = {m["name"]: m for m in index["models"]}
    # tiny:small/npo_lr1e-4_ep10 is the csv's npo_lr1e-4_ep10
    assert set(by_name) == {"npo_lr1e-4_ep10", "rmu_x"}
    npo = by_name["npo_lr1e-4_ep10"]
    # the score run's own UDS is shown over the leaderboard's 0.9 (and the difference is kept); the
    # other columns are merged in
    assert npo["cells"]["uds"] == summary["uds"] and npo["cells"]["overall"] == 0.5 and npo["cells"]["es"] == 0.25
    assert npo["differs"]["uds"]["values"] == [[0, summary["uds"]], [2, 0.9]]
    assert "rouge" not in npo["cells"] and npo["ci"] == summary["ci95"] and npo["file"] == f"data/m{npo['id']}.js"
    assert by_name["rmu_x"]["cells"] == {"overall": 0.7} and by_name["rmu_x"]["file"] is None
    assert by_name["rmu_x"]["epoch"] == "ep10" and by_name["rmu_x"]["method"] == "rmu"
    assert [c["key"] for c in index["columns"]][:2] == ["uds", "overall"]


def test_meta_eval_dropped_models_and_reasons(tmp_path):
    doc = write_meta_eval(tmp_path / "meta")
    rows = json.loads((tmp_path / "meta" / "results.json").read_text())
    res = read_results([tmp_path / "meta"])
    index, _ = build_payload(res, {})
    meta = index["meta"][0]
    assert [k["key"] for k in meta["keys"]] == list(doc["faithfulness"])
    unlearned = [r for r in rows if r["method"] not in ("full", "retain")]
    for k in meta["keys"]:
        kept = set(doc["robustness"][k["key"]]["kept"])
        want = {r["model"] for r in unlearned if r["model"] not in kept}
        assert {d["model"] for d in k["dropped"]} == want
        for d in k["dropped"]:
            u = next(r["utility_rel"] for r in rows if r["model"] == d["model"])
            assert ("utility_rel" in d["reason"]) == (u < 0.8)
        assert k["auc"] == doc["faithfulness"][k["key"]]["auc_roc"] and k["ci"] == doc["faithfulness"][k["key"]]["ci95"]
    assert meta["values"]["nf4"] == doc["values"]["nf4"] and len(index["models"]) == len(rows)
    assert res.n_rows() == len(rows)           # results.json is read once, though two readers meet it


def test_probe_audit_and_what_is_skipped(tmp_path, capsys):
    write_probe(tmp_path / "probe")
    write_audit(tmp_path / "audit")
    (tmp_path / "cap").mkdir()
    (tmp_path / "cap" / "summary.json").write_text(json.dumps({"alpha": 2.9, "runs": 30}))
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "broken.json").write_text("{not json")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    res = read_results([tmp_path])
    assert len(res.probes) == 1 and len(res.audits) == 1
    reasons = {p.name: why for p, why in res.skipped}
    assert set(reasons) == {"summary.json", "notes.txt", "broken.json", "other.csv"}
    assert "another command" in reasons["summary.json"] and "model" in reasons["other.csv"]
    assert main(["report", "--results", str(tmp_path), "--out", str(tmp_path / "site")]) == 0
    err = capsys.readouterr().err
    assert f"skipped {tmp_path / 'notes.txt'}: not a result file" in err and "1 probe runs, 1 audit runs" in err


def test_bad_input_is_one_line_exit_2(tmp_path, capsys):
    with pytest.raises(UdsInputError):
        read_results([tmp_path / "absent"])
    (tmp_path / "empty").mkdir()
    assert main(["report", "--results", str(tmp_path / "empty"), "--out", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("uds report: error: no results found in") and "\n" not in err
    assert main(["report", "--results", str(tmp_path / "absent")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_a_repeated_results_flag_reads_every_folder(tmp_path, capsys):
    """`--results A --results B C` reads A, B and C (argparse would keep only the last flag's paths)."""
    write_score_run(tmp_path / "a", "tiny:test/npo_x", seed=1)
    write_score_run(tmp_path / "b", "tiny:test/rmu_y", seed=2)
    write_score_run(tmp_path / "c", "tiny:test/graddiff_z", seed=3)
    assert main(["report", "--results", str(tmp_path / "a"), "--results", str(tmp_path / "b"), str(tmp_path / "c"),
                 "--out", str(tmp_path / "site")]) == 0
    assert "report: 3 score runs" in capsys.readouterr().err
    doc = (tmp_path / "site" / "data" / "index.js").read_text()
    assert all(f'"name":"{n}"' in doc for n in ("npo_x", "rmu_y", "graddiff_z"))
