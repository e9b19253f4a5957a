"""Curve files, the best-checkpoint rule, `uds curve` and the curves in `uds report`:
no model needed, records written by hand."""

from __future__ import annotations

import json
import random

import pytest

from uds_core.curves import append_record, read_curve, start_curve
from uds_core.errors import UdsInputError
from uds.callbacks.best import BestRule

ORIENTATION = {"uds": "erasure", "prob": "knowledge", "retain_q_prob": "utility"}
SETTINGS = {"name": "m", "every": 2, "metrics": ["prob", "retain_q_prob"], "orientation": ORIENTATION,
            "best": "max:uds, retain_q_prob>=0.9x", "full": "F", "retain": "R"}


def records(n: int = 12, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    return [{"step": 2 * i, "uds": rng.random(), "prob": rng.random(), "retain_q_prob": 0.6 + 0.4 * rng.random()}
            for i in range(n)]


def write(path, recs, settings=SETTINGS):
    start_curve(path, settings, 0)
    for r in recs:
        append_record(path, r)
    return path


def test_written_records_read_back_in_order_with_nan_as_null(tmp_path):
    recs = records(4)
    recs[2]["prob"] = float("nan")
    c = read_curve(write(tmp_path / "c.jsonl", recs))
    assert c.settings == SETTINGS and c.name == "m"
    assert [r["step"] for r in c.records] == [0, 2, 4, 6] and c.records[2]["prob"] is None
    assert c.records[1] == recs[1]


def test_a_resumed_run_keeps_the_records_up_to_its_step(tmp_path):
    path = write(tmp_path / "c.jsonl", records(6))       # steps 0..10
    kept = start_curve(path, SETTINGS, 6)
    assert [r["step"] for r in kept] == [0, 2, 4, 6] == [r["step"] for r in read_curve(path).records]
    assert start_curve(path, SETTINGS, 0) == [] and read_curve(path).records == []


@pytest.mark.parametrize("text, problem", [("", "empty"), ('{"a": 1}\n', "not a curve header"),
                                          ('{"curve": "uds", "settings": {}}\n{"uds": 1}\n', "integer `step`"),
                                          ('{"curve": "uds", "settings": {}}\nnot json\n', ":2: not JSON")])
def test_what_is_not_a_curve_is_said(tmp_path, text, problem):
    (tmp_path / "x.jsonl").write_text(text)
    with pytest.raises(ValueError, match=problem):
        read_curve(tmp_path / "x.jsonl")


@pytest.mark.parametrize("seed", range(5))
def test_rule_picks_what_a_direct_search_picks(seed):
    recs = records(15, seed)
    recs[3]["error"] = "RuntimeError: x"
    ok = [r for r in recs if "error" not in r]
    floor = 0.9 * ok[0]["retain_q_prob"]
    eligible = [r for r in ok if r["retain_q_prob"] >= floor]
    want = max(eligible, key=lambda r: (r["uds"], -r["step"]))["step"] if eligible else None
    assert BestRule.parse("uds, retain_q_prob>=0.9x", ORIENTATION).best_step(recs) == want
    assert BestRule.parse("prob", ORIENTATION).best_step(recs) == min(ok, key=lambda r: (r["prob"], r["step"]))["step"]
    absolute = [r for r in ok if r["retain_q_prob"] >= 0.8]
    want_abs = max(absolute, key=lambda r: (r["prob"], -r["step"]))["step"] if absolute else None
    assert BestRule.parse("max:prob, retain_q_prob>=0.8", ORIENTATION).best_step(recs) == want_abs


def test_rule_text_round_trips_and_bad_rules_are_refused():
    for text in ("max:uds", "min:prob, retain_q_prob>=0.5", "max:uds, retain_q_prob>=0.9x"):
        assert BestRule.parse(text, ORIENTATION).text() == text
    for bad in ("rouge", "up:uds", "uds, retain_q_prob<0.5", "uds, nope>=1"):
        with pytest.raises(UdsInputError):
            BestRule.parse(bad, ORIENTATION)


def test_uds_curve_writes_a_png_and_names_the_chosen_step(tmp_path, uds):
    recs = records(8)
    rule = BestRule.parse(SETTINGS["best"], ORIENTATION)
    for i, r in enumerate(recs):
        r["best_step"] = rule.best_step(recs[:i + 1])
    write(tmp_path / "a.jsonl", recs)
    (tmp_path / "notes.jsonl").write_text('{"other": 1}\n')   # in a folder: passed over
    r = uds("curve", "--curves", str(tmp_path), "--out", str(tmp_path / "fig.png"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    best = rule.best_step(recs)
    chosen_uds = next(x["uds"] for x in recs if x["step"] == best)
    assert f"chosen step {best} (UDS {chosen_uds:.4f})" in r.stdout
    bad = uds("curve", "--curves", str(tmp_path / "notes.jsonl"))
    assert bad.returncode == 2 and "not a curve header" in bad.stderr and len(bad.stderr.splitlines()) == 1


def test_report_reads_curves_into_its_page_data(tmp_path):
    from uds.site.payload import build_payload
    from uds.site.readers import read_results
    from uds.site.writer import write_site

    recs = records(5)
    recs.append({"step": 10, "error": "RuntimeError: boom"})
    recs[-2]["best_step"] = 4
    recs[-1]["best_step"] = 4
    write(tmp_path / "res" / "m.jsonl", recs)
    results = read_results([tmp_path / "res"])
    assert len(results.curves) == 1 and not results.skipped
    index, _ = build_payload(results, {})
    (doc,) = index["curves"]
    assert doc["keys"] == ["uds", "prob", "retain_q_prob"] and doc["best_step"] == 4
    assert [r["values"]["uds"] for r in doc["records"][:5]] == [r["uds"] for r in recs[:5]]
    assert doc["records"][5]["error"] == "RuntimeError: boom"
    index_js = (write_site(results, tmp_path / "site").parent / "data" / "index.js").read_text()
    assert json.dumps(recs[0]["uds"]) in index_js and (tmp_path / "site" / "curves.js").is_file()
