"""`uds metrics` stopped part-way keeps its finished metrics; a rerun computes only the rest and
writes the same `metrics.json` as a run never stopped."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from metrics.registry import REGISTRY, computation_order
from metrics.result import MetricResult
from uds import metrics_resume as resume

KEYS = "prob,truth_ratio,rouge,cka"   # teacher-forced, generation and hidden-state work


def _replace_compute(monkeypatch, key: str, compute) -> None:
    monkeypatch.setitem(REGISTRY, key, dataclasses.replace(REGISTRY[key], compute=compute))


def _stop(ctx):
    raise KeyboardInterrupt


def _must_not_run(ctx):
    raise AssertionError("a kept metric was computed again")


def _metrics_run(uds, out, *extra: str):
    return uds("metrics", "--model", "tiny:test/full", "--metrics", KEYS, "--out", str(out), *extra)


def _without_seconds(doc: dict) -> dict:
    return doc | {"settings": {k: v for k, v in doc["settings"].items() if k != "seconds"}}


def test_heavier_work_comes_later_and_ties_keep_their_order():
    assert computation_order(["cka", "rouge", "fisher_masked_0.01", "prob", "truth_ratio"]) == \
        ["prob", "truth_ratio", "rouge", "cka", "fisher_masked_0.01"]
    # model_utility uses no work itself: its dependencies' generation places it
    assert computation_order(["model_utility", "prob"]) == ["prob", "model_utility"]


def test_a_record_comes_back_as_metrics_json_prints_it():
    r = MetricResult(float("nan"), [0.5, float("inf"), None], {"ci95": (0.1, math.nan), "note": object})
    back = resume.from_record(json.loads(json.dumps(resume.to_record(r), allow_nan=False)))
    assert back.value is None and back.per_example == [0.5, None, None]
    assert back.info["ci95"] == [0.1, None] and back.info["note"] == str(object)
    assert resume.from_record(resume.to_record(MetricResult(0.25))).per_example is None


def test_an_interrupted_run_resumes_to_the_uninterrupted_result(test_world, tmp_path, uds, monkeypatch):
    whole = _metrics_run(uds, tmp_path / "whole")
    assert whole.returncode == 0, whole.stderr
    assert not (tmp_path / "whole" / resume.PARTIAL).exists()   # removed once metrics.json is written

    out = tmp_path / "stopped"
    with monkeypatch.context() as mp:
        _replace_compute(mp, "cka", _stop)
        stopped = _metrics_run(uds, out)
    assert stopped.returncode == 130 and "a rerun resumes" in stopped.stderr
    assert not (out / "metrics.json").exists()
    kept = json.loads((out / resume.PARTIAL).read_text())["results"]
    assert list(kept) == ["prob", "truth_ratio", "rouge"]   # all three finished before cka

    with monkeypatch.context() as mp:
        for key in kept:
            _replace_compute(mp, key, _must_not_run)
        resumed = _metrics_run(uds, out)
    assert resumed.returncode == 0, resumed.stderr
    assert "3 metric(s) kept" in resumed.stderr
    assert not (out / resume.PARTIAL).exists()
    a = json.loads((tmp_path / "whole" / "metrics.json").read_text())
    b = json.loads((out / "metrics.json").read_text())
    assert list(b["metrics"]) == KEYS.split(",")
    assert _without_seconds(a) == _without_seconds(b)


@pytest.mark.parametrize("spoil", ["other settings", "corrupt"])
def test_kept_metrics_of_another_run_are_computed_again(spoil, test_world, tmp_path, uds, monkeypatch):
    out = tmp_path / "out"
    with monkeypatch.context() as mp:
        _replace_compute(mp, "cka", _stop)
        assert _metrics_run(uds, out, "--max-new-tokens", "8").returncode == 130
    if spoil == "corrupt":
        (out / resume.PARTIAL).write_text('{"identity": ')
    calls = []
    real = REGISTRY["prob"].compute
    _replace_compute(monkeypatch, "prob", lambda ctx: calls.append(1) or real(ctx))
    extra = ("--max-new-tokens", "9") if spoil == "other settings" else ("--max-new-tokens", "8")
    proc = _metrics_run(uds, out, *extra)
    assert proc.returncode == 0, proc.stderr
    assert calls == [1] and "starting over" in proc.stderr


def test_a_model_is_identified_by_its_content_where_its_manifest_holds(test_world, tmp_path):
    import os
    import shutil

    from meta_eval.population import folder_stamp
    from tests.checks import flip_middle_byte
    from uds_core.manifest import MANIFEST

    built = test_world / "models" / "full"
    copy = Path(shutil.copytree(built, tmp_path / "full"))   # a rebuild elsewhere: same bytes, other times
    for f in copy.iterdir():
        os.utime(f, ns=(7, 7))
    assert folder_stamp(copy) != folder_stamp(built)
    assert resume.model_identity(str(copy)) == resume.model_identity(str(built))
    assert resume.model_identity(str(copy)).startswith("content:")
    flip_middle_byte(copy / "model.safetensors")   # other weights: another identity
    assert resume.model_identity(str(copy)) != resume.model_identity(str(built))
    (copy / MANIFEST).unlink()   # no manifest: the folder stamp, as cached measurements use it
    assert resume.model_identity(str(copy)) == folder_stamp(copy)


def test_content_digest_follows_the_files_not_the_folder(tmp_path):
    import hashlib
    import os
    import shutil

    import torch
    from safetensors.torch import save_file

    from tests.checks import flip_middle_byte
    from uds_core import manifest

    folder = tmp_path / "model"
    folder.mkdir()
    save_file({"w": torch.arange(4096, dtype=torch.float32)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text('{"hidden_size": 64}')
    manifest.record(folder)

    copy = Path(shutil.copytree(folder, tmp_path / "elsewhere"))
    os.utime(copy / "model.safetensors", ns=(1, 1))   # another time: the same content
    assert resume.content_digest(copy) == resume.content_digest(folder) is not None
    # by hand: sha256 of the hash name and each file's name, size and digest as the manifest records them
    files = json.loads((folder / manifest.MANIFEST).read_text())["files"]
    text = "xxh3_128;" + ";".join(f"{n}:{v['bytes']}:{v['digest']}" for n, v in sorted(files.items()))
    assert resume.content_digest(folder) == hashlib.sha256(text.encode()).hexdigest()
    flip_middle_byte(copy / "model.safetensors")   # a changed byte: no content identity, the manifest no longer holds
    assert resume.content_digest(copy) is None
    (folder / manifest.MANIFEST).unlink()
    assert resume.content_digest(folder) is None
