"""experiments/llama1b.py metrics across attempts: phases summed by hand, and docs/llama1b.md's
metrics table showing a run in progress, then the finished one with its attempt count."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from llama1b import _recorded_attempt, _summed_phases

from uds_analyses.doc_tables.llama1b import metrics_table


def _attempt(wall: float, rss: float, seconds: dict, tokens: int) -> dict:
    return {"wall_s": wall, "peak_rss_gb": rss, "exit_status": 130,
            "phases": {"seconds": seconds, "counts": {"generation": {"generated_tokens": tokens}},
                       "total_seconds": sum(seconds.values())}}


ATTEMPTS = [_attempt(100.0, 9.5, {"teacher_forced": 40.0, "generation": 55.5}, 700),
            _attempt(30.0, 11.25, {"fisher": 20.0, "generation": 4.5}, 50)]


def test_phases_are_summed_over_attempts():
    summed = _summed_phases(ATTEMPTS)
    assert summed["seconds"] == {"teacher_forced": 40.0, "generation": 60.0, "fisher": 20.0}
    assert summed["counts"] == {"generation": {"generated_tokens": 750}}
    assert summed["total_seconds"] == 120.0


def test_table_shows_the_run_in_progress_then_the_whole_run(tmp_path):
    run = tmp_path / "metrics_bfloat16_run"
    run.mkdir()
    (run / "attempts.json").write_text(json.dumps(ATTEMPTS))
    (run / "metrics.partial.json").write_text(json.dumps({"identity": "x", "results": {"es": {}, "prob": {}}}))
    table = metrics_table(tmp_path)
    assert "2 attempt(s), 2 metrics kept" in table and "**130** (0.04 h), peak RSS 11.25 GB" in table
    assert "whole run not measured yet" in table.strip().splitlines()[-1]

    whole = {"uds_command": "uds metrics", "threads": 2, "exit_status": 0, "wall_s": 130.0, "peak_rss_gb": 11.25,
             "phases": _summed_phases(ATTEMPTS), "attempts": ATTEMPTS}
    (tmp_path / "metrics_bfloat16.json").write_text(json.dumps(whole))
    table = metrics_table(tmp_path)
    assert "in 2 attempts" in table and "| generation | 60 | 50% |" in table


def test_the_finishing_attempt_keeps_the_earlier_ones(tmp_path):
    (tmp_path / "attempts.json").write_text(json.dumps(ATTEMPTS[:1]))

    def finishing() -> dict:   # the run finishes: its metrics.json appears before the record is written
        (tmp_path / "metrics.json").write_text("{}")
        return ATTEMPTS[1]

    assert _recorded_attempt(tmp_path, finishing) == ATTEMPTS
    assert json.loads((tmp_path / "attempts.json").read_text()) == ATTEMPTS


def test_a_folder_of_a_finished_run_starts_a_new_record(tmp_path):
    (tmp_path / "attempts.json").write_text(json.dumps(ATTEMPTS[:1]))
    (tmp_path / "metrics.json").write_text("{}")   # an earlier run finished here
    assert _recorded_attempt(tmp_path, lambda: ATTEMPTS[1]) == ATTEMPTS[1:]


def test_an_attempt_without_a_phase_clock_is_a_row_of_its_own(tmp_path):
    by_hand = {"wall_s": 50.0, "peak_rss_gb": 9.0, "phases": None, "kept_before": []}
    clocked = ATTEMPTS[1] | {"kept_before": ["es", "prob", "rouge"]}
    whole = {"uds_command": "uds metrics", "threads": 2, "exit_status": 0, "wall_s": 80.0, "peak_rss_gb": 11.25,
             "phases": _summed_phases([by_hand, clocked]), "attempts": [by_hand, clocked]}
    (tmp_path / "metrics_bfloat16.json").write_text(json.dumps(whole))
    table = metrics_table(tmp_path)
    # shares of 50 + 20 + 4.5 = 74.5 s: 67%, 27%, 6%
    assert "| not clocked: attempt 1, which finished 3 metrics | 50 | 67% |" in table
    assert "| fisher | 20 | 27% |" in table and "| generation | 4 | 6% |" in table
    assert "**80** (0.02 h), peak RSS 11.25 GB" in table and "not measured yet" not in table
