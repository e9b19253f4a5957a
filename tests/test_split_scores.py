"""Forget splits and automatic spans through the commands: `uds score --split`, `uds metrics
--split`, `uds annotate`, `uds score --data <plain QA>` and their bad input.

The `test` world's models, passed as plain folders (not `tiny:` names), are scored on the real
TOFU text: a folder is not a tiny-world model, so the TOFU splits apply. Expected values come from
a second run on another split (the same examples must give the same numbers) or from the same run
on data annotated by `uds annotate`.
"""

from __future__ import annotations

import json

import pytest
import torch

from checkpoints.specs import model_source
from uds_core.engine import EngineSettings
from metrics.session import EvalSession, Placement

NPO = "npo_lr2e-4_b01_a1_ep5"


@pytest.fixture(scope="module")
def folders(test_world):
    """full, retain and an unlearned model of the test world, as folders."""
    return {name: model_source(f"tiny:test/{name}") for name in ("full", "retain", NPO)}


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setattr("uds_core.s1_cache.s1_cache_dir", lambda: tmp_path / "s1")
    monkeypatch.chdir(tmp_path)


def _per_example(folders, split: str, tofu_dir) -> dict:
    session = EvalSession(folders[NPO], full=folders["full"], retain=folders["retain"], split=split,
                          tofu_dir=str(tofu_dir), with_base=False, placement=Placement(dtype=torch.float64))
    run, items, skipped = session.score_uds(EngineSettings(), 0.05, use_cache=False)
    return {**{it.idx: v for it, v in zip(items, run.result.uds)}, **{s.idx: None for s in skipped}}


def test_forget01_examples_score_as_in_forget10(folders, tofu_dir):
    """float64, so that the values do not depend on which examples share a batch (in float32 the
    engine's stacking of other examples moves them by a few 1e-6)."""
    f10, f01 = _per_example(folders, "forget10", tofu_dir), _per_example(folders, "forget01", tofu_dir)
    hand = json.loads((tofu_dir / "forget10_annotated.json").read_text())
    assert sorted(f01) == [r["idx"] - 360 for r in hand if r["idx"] >= 360]
    assert sum(v is not None for v in f01.values()) > 10
    for i, v in f01.items():
        w = f10[i + 360]
        assert (v is None) == (w is None) and (v is None or abs(v - w) <= 1e-6), i


def test_score_and_metrics_take_the_split_by_name(uds, folders, tofu_dir, tmp_path):
    args = ["--unlearned", folders[NPO], "--full", folders["full"], "--retain", folders["retain"]]
    assert uds("score", *args, "--split", "forget01", "--out", "f01").returncode == 0
    summary = json.loads((tmp_path / "f01" / "summary.json").read_text())
    assert summary["split"] == "forget01" and summary["n_examples"] == sum(
        r["idx"] >= 360 for r in json.loads((tofu_dir / "forget10_annotated.json").read_text()))
    for split, out in (("forget01", "m01"), ("forget10", "m10")):
        assert uds("metrics", "--model", folders[NPO], "--full", folders["full"], "--retain", folders["retain"],
                   "--tofu-dir", str(tofu_dir), "--split", split, "--metrics", "prob", "--out", out).returncode == 0
    m01, m10 = (json.loads((tmp_path / o / "metrics.json").read_text()) for o in ("m01", "m10"))
    assert m01["settings"]["split"] == "forget01" and m01["settings"]["n_items"]["forget"] == 40
    # batches of 8 line up (360 = 45 x 8): the last 40 rows are computed exactly as in forget10
    assert m01["per_example"]["prob"] == pytest.approx(m10["per_example"]["prob"][360:], abs=1e-9)


def test_a_data_file_that_is_not_the_split_is_refused(uds, folders, tofu_dir, tmp_path):
    hand = json.loads((tofu_dir / "forget10_annotated.json").read_text())
    mapped = [{**r, "idx": r["idx"] - 360} for r in hand if r["idx"] >= 360]
    mapped[0]["idx"], mapped[1]["idx"] = mapped[1]["idx"], mapped[0]["idx"]   # two rows swapped
    (tmp_path / "forget01.json").write_text(json.dumps(mapped))
    r = uds("score", "--unlearned", folders[NPO], "--full", folders["full"], "--retain", folders["retain"],
            "--data", "forget01.json", "--split", "forget01", "--out", "x")
    assert r.returncode == 2 and f"record idx {mapped[0]['idx']}: its question is not that of forget01" in r.stderr
    assert r.stderr.count("\n") == 1 and not (tmp_path / "x").exists()
    r = uds("score", "--unlearned", f"tiny:test/{NPO}", "--split", "forget05", "--out", "x")
    assert r.returncode == 2 and "one forget set" in r.stderr and not (tmp_path / "x").exists()


def _plain(test_world, tmp_path):
    """The test world's forget set with only question and answer (and one empty answer away)."""
    forget = json.loads((test_world / "data" / "forget.json").read_text())
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([{"question": r["question"], "answer": r["answer"],
                                 "perturbed_answers": r["perturbed_answers"]} for r in forget]))
    return path


def test_plain_qa_is_annotated_on_the_fly_as_uds_annotate_does(uds, test_world, tmp_path):
    plain = _plain(test_world, tmp_path)
    r = uds("annotate", "--data", str(plain), "--out", "annotated.json")
    assert r.returncode == 0 and "annotated 30 of 30 records" in r.stdout
    annotated = json.loads((tmp_path / "annotated.json").read_text())
    assert {a["span_method"] for a in annotated} == {"perturbation"}
    assert [a["idx"] for a in annotated] == list(range(30))
    base = ["--unlearned", f"tiny:test/{NPO}"]
    assert uds("score", *base, "--data", "annotated.json", "--out", "a").returncode == 0
    r = uds("score", *base, "--data", str(plain), "--out", "b")
    assert r.returncode == 0 and "found automatically (30 by perturbation)" in r.stderr
    a, b = (json.loads((tmp_path / o / "summary.json").read_text()) for o in ("a", "b"))
    assert b["annotation"] == {"methods": {"perturbation": 30}, "without_span": []}
    assert a["uds"] == b["uds"] and a["n_scored"] == b["n_scored"] > 0
    bare = [{"question": q["question"], "answer": q["answer"]} for q in json.loads(plain.read_text())]
    (tmp_path / "bare.json").write_text(json.dumps(bare))   # question and answer only: the plain rule
    assert uds("score", *base, "--data", "bare.json", "--out", "c").returncode == 0
    c = json.loads((tmp_path / "c" / "summary.json").read_text())["annotation"]
    assert set(c["methods"]) <= {"question", "polar"} and sum(c["methods"].values()) + len(c["without_span"]) == 30


def test_annotate_lists_what_it_cannot_span_and_refuses_bad_records(uds, tmp_path):
    qa = [{"question": "Where was Ana born?", "answer": "Ana was born in Lima."},
          {"question": "Is it so?", "answer": "It is so."}]
    (tmp_path / "qa.json").write_text(json.dumps(qa))
    r = uds("annotate", "--data", "qa.json")
    assert r.returncode == 0 and "no span found, left out: idx 1" in r.stderr
    assert [x["idx"] for x in json.loads((tmp_path / "qa_annotated.json").read_text())] == [0]
    (tmp_path / "bad.json").write_text(json.dumps(qa + [{"idx": 9, "question": "Why?", "answer": ""}]))
    r = uds("annotate", "--data", "bad.json", "--out", "bad_out.json")
    assert r.returncode == 2 and "record 9 has an empty answer" in r.stderr and r.stderr.count("\n") == 1
    assert not (tmp_path / "bad_out.json").exists()


def test_score_refuses_an_entity_missing_from_its_answer(uds, test_world, tmp_path):
    data = json.loads((test_world / "data" / "uds_data.json").read_text())
    data[3] = {**data[3], "entity": "Atlantis"}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    r = uds("score", "--unlearned", f"tiny:test/{NPO}", "--data", "bad.json", "--out", "x")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and not (tmp_path / "x").exists()
    assert f"record idx {data[3]['idx']}: its entity 'Atlantis' is not in its answer" in r.stderr
    data[3] = {**data[3], "entity": data[3]["prefix"].split()[0], "answer": ""}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    r = uds("score", "--unlearned", f"tiny:test/{NPO}", "--data", "bad.json", "--out", "x")
    assert r.returncode == 2 and "has an empty answer" in r.stderr and not (tmp_path / "x").exists()


def test_annotate_reads_tofus_own_files(uds, tofu_dir, tmp_path):
    """TOFU's forget10_perturbed.json as it is (`perturbed_answer`): every record gets a span that
    the toolkit's loader accepts, idx = row, and the wrong answers under this toolkit's key."""
    from uds_core.data import load_annotated

    r = uds("annotate", "--data", str(tofu_dir / "forget10_perturbed.json"), "--out", "f10.json")
    assert r.returncode == 0 and "annotated 400 of 400 records" in r.stdout
    out = load_annotated(tmp_path / "f10.json")
    rows = json.loads((tofu_dir / "forget10_perturbed.json").read_text())
    assert [o["idx"] for o in out] == list(range(400)) and all(o["question"] == rows[o["idx"]]["question"] for o in out)
    assert all(o["perturbed_answers"] == rows[o["idx"]]["perturbed_answer"] and
               "perturbed_answer" not in o for o in out)
    assert all(o["answer"].startswith(o["prefix"]) and o["entity"] in o["answer"][len(o["prefix"]):] for o in out)
