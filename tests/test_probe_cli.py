"""`uds probe` end to end on the test world, its bad-input errors, and the registered metrics."""

from __future__ import annotations

import json
import subprocess


from tests.checks import assert_one_line_error



ROW = {"doc_id": "b1", "title": "Book One", "position": 0, "text": "It was a dark and stormy night."}


def _corpus(tmp_path, lines):
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return str(p)


def test_malformed_line_names_line_number(tmp_path, uds):
    path = _corpus(tmp_path, [json.dumps(ROW), json.dumps({**ROW, "position": 1}), '{"doc_id": "b1", "title"'])
    assert_one_line_error(uds("probe", "--model", "tiny:test/full", "--corpus", path), "line 3")


def test_unknown_level(tmp_path, uds):
    path = _corpus(tmp_path, [json.dumps(ROW)])
    assert_one_line_error(uds("probe", "--model", "tiny:test/full", "--corpus", path, "--levels", "weak,shout"),
                          "shout")


def test_min_lcs_zero(tmp_path, uds):
    path = _corpus(tmp_path, [json.dumps(ROW)])
    assert_one_line_error(uds("probe", "--model", "tiny:test/full", "--corpus", path, "--min-lcs", "0"),
                          "--min-lcs")


def test_full_recites_forget_passages_retain_does_not(tmp_path, uds):
    """Full was fine-tuned on the forget QA documents, retain never saw them: at the prefix level
    full reproduces them, retain does so about as rarely as on never-trained holdout authors."""
    out = tmp_path / "p"
    proc = uds("probe", "--model", "tiny:test/full", "--model", "tiny:test/retain", "--corpus", "tiny:test",
               "--levels", "prefix", "--samples", "1", "--distractors", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "summary.json").read_text())
    full, retain = doc["models"]["tiny:test/full"], doc["models"]["tiny:test/retain"]
    assert full["levels"]["prefix"]["verbatim_rate"] > 0.7
    assert retain["levels"]["prefix"]["verbatim_rate"] < 0.1
    assert abs(retain["levels"]["prefix"]["verbatim_rate"]
               - retain["groups"]["holdout"]["prefix"]["verbatim_rate"]) < 0.1
    assert full["levels"]["prefix"]["n"] == 30 * 2            # 3 forget authors x 10 facts, greedy + 1 sample
    rows = [json.loads(l) for l in (out / "rows.jsonl").read_text().splitlines()]
    assert {r["model"] for r in rows} == {"tiny:test/full", "tiny:test/retain"}
    assert (out / "heatmap.png").stat().st_size > 0


def test_registered_metrics(tmp_path, uds):
    proc = uds("metrics", "--model", "tiny:test/full", "--metrics", "verbatim_rate,semantic_acc",
               "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "metrics.json").read_text())
    assert doc["metrics"]["verbatim_rate"] > 0.7 and doc["metrics"]["semantic_acc"] > 0.7
    assert len(doc["per_example"]["verbatim_rate"]) == 30


def test_real_process_malformed_line(tmp_path):
    """The same error from a real process: one line on stderr, exit 2, no library noise."""
    import sys
    from pathlib import Path

    path = _corpus(tmp_path, [json.dumps(ROW), "{bad"])
    proc = subprocess.run([sys.executable, "-m", "uds", "probe", "--model", "tiny:test/full", "--corpus", path],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert_one_line_error(proc, "line 2")
