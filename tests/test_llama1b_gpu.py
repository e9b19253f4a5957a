"""The prepared GPU run (benchmarks/llama1b_gpu.py) at a tiny size on the CPU: the `test` world, its
retain model as the unlearned one (UDS exactly 1 in both dtypes: S2 repeats S1's computation), two
output metrics, the reference step said to be left out where no reference checkout is given."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "benchmarks"), str(REPO / "experiments")]   # the GPU run; scale_sanity.py


def test_gpu_script_runs_tiny_on_cpu(test_world, tmp_path, monkeypatch):
    import llama1b_gpu

    monkeypatch.delenv("UDS_REFERENCE_REPO", raising=False)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "gpu.json"
    assert llama1b_gpu.main(["--device", "cpu", "--preset", "test", "--unlearned", "retain", "--batch-size", "4",
                             "--metrics", "prob,truth_ratio", "--metrics-batch-size", "8", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["device"] == "cpu" and doc["gpu"] is None and doc["preset"] == "test"
    assert doc["score"]["float32"]["uds"] == 1.0 == doc["score"]["bfloat16"]["uds"]
    assert doc["score"]["float32"]["n_scored"] > 0 and doc["score"]["bf16_vs_fp32"]["max_abs_uds_diff"] == 0.0
    assert doc["metrics"]["exit_status"] == 0
    values = doc["metrics"]["outputs"]["metrics.json"]
    assert {"prob", "truth_ratio"} <= set(values["metrics"])
    assert "left_out" in doc["reference"]


def test_scale_sanity_command_on_the_tiny_world(test_world, tmp_path, monkeypatch):
    """spec §2.9's one command, with the test world's models in place of the checkpoints: UDS(full)
    = 0 and UDS(retain) = 1 exactly (spec parity), so z is 0 and 1 there."""
    import scale_sanity

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "s.json"
    models = "tiny:test/full,tiny:test/base,tiny:test/base,tiny:test/retain"
    assert scale_sanity.main(["--device", "cpu", "--dtype", "float32", "--parity", "spec", "--full", "tiny:test/full",
                              "--retain", "tiny:test/retain", "--models", models, "--batch-size", "4",
                              "--out", str(out)]) == 0
    arch = json.loads(out.read_text())["archs"]["llama32-1b"]
    assert arch["runs"]["full"]["uds"] == 0.0 and arch["runs"]["retain90"]["uds"] == 1.0
    assert arch["z"]["full"] == 0.0 and arch["z"]["retain90"] == 1.0
    assert arch["runs"]["retain95"]["s1_cache"] == "hit"   # S1 computed once, then read
    assert arch["published"]["retain95"] == 0.496
