"""A whole LoRA world, small: `test-lora` (the `test` world's data and shape, every model but the base a
LoRA adapter) built, scored and measured through the same code as the `qwen` world.

Checked against things not computed by the code under test: UDS of full is 0 and of retain 1
exactly; the adapter folder named as a path (loaded merged, docs/adapters.md) scores as the world's
stacked unmerged model; `uds metrics --metrics all` runs on the stacked models.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# the whole world is built here (a base trained, three adapters): minutes of the default run's 15, so it
# runs with the slow tests; tests/test_lora_world.py keeps the LoRA plumbing in the default run
pytestmark = pytest.mark.slow

PRESET = "test-lora"
NPO = "npo_lr1e-3_b01_a1_ep5"


@pytest.fixture(scope="module")
def world() -> Path:
    from checkpoints.world.build import build_world

    return build_world(PRESET, 0, progress=False, names=["full", "retain", NPO])


def test_models_are_adapters_on_their_parents(world):
    for name, base in (("full", f"tiny:{PRESET}/base"), ("retain", f"tiny:{PRESET}/base"),
                       (NPO, f"tiny:{PRESET}/full")):
        folder = world / "models" / name
        assert json.loads((folder / "adapter_config.json").read_text())["base_model_name_or_path"] == base
        assert not (folder / "model.safetensors").exists()
    assert (world / "models" / "base" / "model.safetensors").is_file()   # a base trained here is a full model


def _score(uds, out: Path, unlearned: str) -> tuple[dict, list[dict]]:
    proc = uds("score", "--unlearned", unlearned, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines() if line.strip()]
    return json.loads((out / "summary.json").read_text()), rows


def test_uds_invariants_and_the_adapter_folder_as_a_spec(world, uds, tmp_path):
    full, full_rows = _score(uds, tmp_path / "full", f"tiny:{PRESET}/full")
    retain, retain_rows = _score(uds, tmp_path / "retain", f"tiny:{PRESET}/retain")
    assert full["uds"] == 0.0 and retain["uds"] == 1.0 and full["n_scored"] > 0
    assert all(d == 0.0 for r in full_rows for d in r["s2_delta"])
    assert all(r["s1_delta"] == r["s2_delta"] for r in retain_rows)
    stacked, stacked_rows = _score(uds, tmp_path / "npo", f"tiny:{PRESET}/{NPO}")
    merged, merged_rows = _score(uds, tmp_path / "npo-folder", str(world / "models" / NPO))
    assert merged["full"] == f"tiny:{PRESET}/full"   # an adapter goes with its base's world
    assert 0.0 < stacked["uds"] < 1.0
    assert abs(stacked["uds"] - merged["uds"]) < 1e-5
    for a, b in zip(stacked_rows, merged_rows):
        assert max(abs(x - y) for x, y in zip(a["s2_delta"], b["s2_delta"])) < 1e-4


def test_metrics_all_on_the_stacked_models(world, uds, tmp_path):
    proc = uds("metrics", "--model", f"tiny:{PRESET}/{NPO}", "--metrics", "all", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    values = json.loads((tmp_path / "metrics.json").read_text())["metrics"]
    fisher = [v for k, v in values.items() if k.startswith("fisher_masked_")]
    assert len(fisher) == 3 and all(v is not None and 0.0 <= v <= 1.0 for v in fisher)
    assert sum(v is None for v in values.values()) <= 1   # fluency may have no measure
