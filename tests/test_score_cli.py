"""`uds score` end to end on tiny random models saved to folders (no downloads)."""

import csv
import json
from collections import Counter

import pytest

from tests.engine_fixtures import RECORDS, saved_score_models, tiny_model
from uds_core import capture, engine
from uds.cli import main


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return saved_score_models(tmp_path_factory.mktemp("world"), {"qwen": tiny_model("qwen2")})


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def _score(world, unlearned, *extra):
    return main(["score", "--unlearned", world[unlearned], "--full", world["full"], "--retain", world["retain"],
                 "--data", world["data"], "--device", "cpu", "--batch-size", "2", *extra])


def _summary(out):
    return json.loads((out / "summary.json").read_text())


def test_score_writes_the_four_files(world, tmp_path, capsys):
    assert _score(world, "half") == 0
    out = tmp_path / "uds_out" / "half"  # default --out: uds_out/<unlearned name>
    assert sorted(p.name for p in out.iterdir()) == ["examples.jsonl", "layers.csv", "layers.png", "summary.json"]
    s = _summary(out)
    assert 0.0 < s["uds"] < 1.0 and s["n_examples"] == 6 and s["tau"] == 0.05 and s["layers"] == 3
    assert s["n_skipped"] == 6 - s["n_scored"] and s["skipped_reasons"]["entity_span_not_found"] == 1
    assert s["ci95"][0] <= s["uds"] <= s["ci95"][1] and s["s1_cache"] == "miss"
    assert set(s["fingerprints"]) == {"full", "retain", "unlearned", "tokenizer"}
    assert s["unlearned"] == world["half"] and s["dtype"] == "float32" and s["device"] == "cpu"
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    assert [r["idx"] for r in rows] == [r["idx"] for r in RECORDS]
    assert rows[5]["uds"] is None and rows[5]["skipped_reason"] == "entity_span_not_found"
    for r in rows[:5]:
        assert len(r["s1_delta"]) == 3 and len(r["s2_delta"]) == 3
        assert (r["uds"] is None) == (r["skipped_reason"] == "no_ke_layer") == (r["ke_layers"] == [])
    with (out / "layers.csv").open() as f:
        table = list(csv.DictReader(f))
    assert len(table) == 5 * 3 and set(table[0]) == {"idx", "layer", "s1_score", "s2_score", "s1_delta",
                                                     "s2_delta", "ratio", "ratio_clipped", "ke"}
    assert f"UDS = {s['uds']:.6f}" in capsys.readouterr().out


def test_references_give_exact_identities_and_reuse_s1(world, tmp_path, monkeypatch):
    assert _score(world, "half", "--out", "a") == 0
    calls = Counter()
    real = engine._forward

    def counting(model, batch):
        calls[model.name_or_path] += 1
        return real(model, batch)

    monkeypatch.setattr(engine, "_forward", counting)
    real_capture = capture._capture_pass  # the fast engine's only whole-model forwards

    def counting_capture(model, *args, **kwargs):
        calls[model.name_or_path] += 1
        return real_capture(model, *args, **kwargs)

    monkeypatch.setattr(capture, "_capture_pass", counting_capture)
    assert _score(world, "full", "--out", "b") == 0
    s = _summary(tmp_path / "b")
    assert s["uds"] == 0.0 and s["s1_cache"] == "hit"
    assert calls[world["retain"]] == 0 and calls[world["full"]] == 3 * 2  # 3 batches x (target + source capture)
    assert _score(world, "retain", "--out", "c") == 0
    s = _summary(tmp_path / "c")
    assert s["uds"] == 1.0 and s["n_scored"] >= 1
    rows = [json.loads(line) for line in (tmp_path / "c" / "examples.jsonl").read_text().splitlines()]
    assert all(r["uds"] == 1.0 for r in rows if r["uds"] is not None)


def test_no_s1_cache_and_options(world, tmp_path):
    assert _score(world, "half", "--out", "d", "--no-s1-cache", "--component", "mlp", "--logprob-dtype", "float32",
                  "--tau", "0.01") == 0
    s = _summary(tmp_path / "d")
    assert s["s1_cache"] == "off" and s["component"] == "mlp" and s["tau"] == 0.01
    assert not (tmp_path / "home" / "s1_cache").exists()
    assert _score(world, "half", "--out", "e", "--reference-last-layer") == 0
    assert _summary(tmp_path / "e")["reference_last_layer"] is True
    assert _summary(tmp_path / "e")["parity"] == "reference"          # the flag is an alias of --parity reference
    assert _score(world, "half", "--out", "f", "--parity", "reference", "--no-s1-cache") == 0
    assert _summary(tmp_path / "f")["reference_last_layer"] is True
    assert _summary(tmp_path / "f")["uds"] == _summary(tmp_path / "e")["uds"]


def _one_line_error(capsys, needle, exactly_one=True):
    err = capsys.readouterr().err.strip()
    errors = [line for line in err.splitlines() if line.startswith("uds score: error:")]
    assert "Traceback" not in err and len(errors) == 1 and needle in errors[0]
    assert not exactly_one or err.splitlines() == errors


def test_bad_input_exits_2(world, tmp_path, capsys):
    assert main(["score", "--unlearned", world["half"], "--full", world["full"], "--retain", world["retain"],
                 "--data", str(tmp_path / "missing.json")]) == 2
    _one_line_error(capsys, "missing.json")
    assert main(["score", "--unlearned", str(tmp_path / "nope"), "--full", world["full"],
                 "--retain", world["retain"], "--data", world["data"]]) == 2
    _one_line_error(capsys, "nope")
    assert _score(world, "qwen") == 2
    _one_line_error(capsys, "architecture family differs", exactly_one=False)  # after loading bars
    assert _score(world, "half", "--component", "attn", "--reference-last-layer") == 2
    _one_line_error(capsys, "--reference-last-layer")
    assert _score(world, "half", "--parity", "spec", "--reference-last-layer") == 2
    _one_line_error(capsys, "contradicts --parity spec")


def test_negative_tau_is_refused(world, capsys):
    assert _score(world, "half", "--tau", "-0.1") == 2
    _one_line_error(capsys, "--tau")
