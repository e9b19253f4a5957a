"""UDS on the trained `test` world: the identities of spec §2.5 and monotonicity along a
full -> retain weight interpolation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from transformers import AutoTokenizer, LlamaForCausalLM

from uds.cli import main
from uds_core.data import load_annotated
from uds_core.engine import EngineSettings
from uds_core.prompts import prepare_examples
from uds_core.sanity import interpolation_curve


def score(tmp_path, unlearned: str) -> tuple[dict, list[dict]]:
    out = tmp_path / unlearned.replace(":", "_").replace("/", "_")
    assert main(["score", "--unlearned", unlearned, "--out", str(out), "--no-s1-cache"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    examples = [json.loads(l) for l in (out / "examples.jsonl").read_text().splitlines()]
    assert {"summary.json", "examples.jsonl", "layers.csv", "layers.png"} <= {p.name for p in out.iterdir()}
    return summary, examples


def test_retain_as_unlearned_scores_one_on_every_example(test_world, tmp_path):
    summary, examples = score(tmp_path, "tiny:test/retain")
    scored = [e for e in examples if e["uds"] is not None]
    assert len(scored) >= 0.9 * len(examples) and summary["n_scored"] == len(scored)
    assert all(abs(e["uds"] - 1.0) <= 1e-6 for e in scored)
    assert summary["uds"] == pytest.approx(1.0, abs=1e-6)


def test_full_as_unlearned_scores_zero(test_world, tmp_path):
    summary, examples = score(tmp_path, "tiny:test/full")
    assert all(abs(e["uds"]) <= 1e-6 for e in examples if e["uds"] is not None)
    assert summary["uds"] == pytest.approx(0.0, abs=1e-6)


def test_uds_rises_along_full_to_retain_interpolation(test_world):
    full = LlamaForCausalLM.from_pretrained(test_world / "models" / "full").eval()
    retain = LlamaForCausalLM.from_pretrained(test_world / "models" / "retain").eval()
    tok = AutoTokenizer.from_pretrained(test_world / "models" / "full")
    examples = prepare_examples(load_annotated(test_world / "data" / "uds_data.json"), tok)
    curve = interpolation_curve(full, retain, examples, EngineSettings(batch_size=16))
    assert curve[0] == pytest.approx(0.0, abs=1e-6) and curve[-1] == pytest.approx(1.0, abs=1e-6)
    assert np.all(np.diff(curve) > 0), curve
