"""Fault injection: a writer killed mid-write, truncated weights, a corrupt S1 cache entry, a full
disk, two `uds score` at once. What each guarantees is tabled in docs/reliability.md."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from uds_core import atomic
from uds_core.errors import UdsInputError
from tests.engine_fixtures import folders, score_args  # noqa: F401 (folders: the saved score models fixture)

REPO = Path(__file__).resolve().parents[1]


# -- a writer killed mid-write -------------------------------------------------------------------

KILLED_WRITER = """
import sys, time
from uds_core import atomic
with atomic.atomic_file(sys.argv[1]) as tmp:
    with open(tmp, "wb") as fh:
        fh.write(b"N" * 1_000_000)
        fh.flush()
        print("MID", flush=True)
        time.sleep(120)   # killed here
"""


@pytest.mark.parametrize("previous", [b"OLD RESULT\n", None])
def test_killed_writer_leaves_the_previous_file_or_none(tmp_path, previous):
    target = tmp_path / "summary.json"
    if previous is not None:
        target.write_bytes(previous)
    proc = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(target)], stdout=subprocess.PIPE, cwd=REPO)
    try:
        assert proc.stdout.readline().strip() == b"MID"
        # mid-write: a megabyte is in the temp file, the target is still the old one
        assert (target.read_bytes() if target.exists() else None) == previous
    finally:
        proc.kill()
        proc.wait()
    assert (target.read_bytes() if target.exists() else None) == previous
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "summary.json"]
    assert all(n.startswith(".summary.json.") and n.endswith(".tmp") for n in leftovers)  # hidden, never read
    atomic.write_text(target, "NEW\n")   # the rerun
    assert target.read_text() == "NEW\n"


# -- a full disk ------------------------------------------------------------------------------------

def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_full_disk_is_one_clear_error_and_keeps_the_previous_file(tmp_path, monkeypatch):
    target = tmp_path / "metrics.json"
    atomic.write_json(target, {"prob": 0.5})
    monkeypatch.setattr(atomic.os, "fsync", _disk_full)
    with pytest.raises(UdsInputError, match="no space left") as err:
        atomic.write_json(target, {"prob": 0.9})
    assert "\n" not in str(err.value) and "previous file is intact" in str(err.value)
    assert json.loads(target.read_text()) == {"prob": 0.5}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]   # the temp file is gone too


def test_other_os_errors_are_not_called_a_full_disk(tmp_path, monkeypatch):
    def denied(*a, **k):
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(atomic.os, "fsync", denied)
    with pytest.raises(PermissionError):
        atomic.write_text(tmp_path / "x.txt", "x")
    assert list(tmp_path.iterdir()) == []


# -- truncated weights --------------------------------------------------------------------------

def test_safetensors_check_catches_every_cut(tmp_path):
    path = tmp_path / "model.safetensors"
    # 100 + 10x10 float32 = 800 data bytes after the 8-byte length and the JSON header
    save_file({"a": torch.zeros(100), "b": torch.ones(10, 10)}, str(path))
    whole = path.read_bytes()
    header_len = int.from_bytes(whole[:8], "little")
    assert len(whole) == 8 + header_len + 800
    assert atomic.safetensors_problem(path) is None
    for cut in (len(whole) - 1, 8 + header_len + 400, 8 + header_len, 20, 3, 0):
        path.write_bytes(whole[:cut])
        assert atomic.safetensors_problem(path) is not None, cut
    path.write_bytes(whole + b"\0")   # trailing bytes: not what was saved either
    assert "where its header says" in atomic.safetensors_problem(path)


def test_truncated_world_model_is_reported_and_rebuilt(test_world, tmp_path, monkeypatch, capsys):
    from checkpoints.world import build

    home = tmp_path / "home"
    shutil.copytree(test_world, home / "world" / test_world.name, symlinks=True)
    monkeypatch.setenv("UDS_HOME", str(home))
    weights = home / "world" / test_world.name / "models" / "retain" / "model.safetensors"
    intact = weights.read_bytes()
    weights.write_bytes(intact[: len(intact) // 2])
    rebuilt = []

    # the real one trains for a minute
    def fake_train_and_save(preset, seed, r, digest, folder, progress, device="cpu", callbacks_for=None):
        rebuilt.append(r.name)
        weights.write_bytes(intact)
        return folder

    monkeypatch.setattr(build, "_train_and_save", fake_train_and_save)
    capsys.readouterr()
    assert build.ensure_model("test", 0, "retain", progress=False) == weights.parent
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert rebuilt == ["retain"]
    assert len(err) == 1 and "retain" in err[0] and "model.safetensors" in err[0] and "rebuilding" in err[0], err
    build.ensure_model("test", 0, "retain", progress=False)   # whole again: used, not rebuilt
    assert rebuilt == ["retain"] and capsys.readouterr().err == ""


# -- a corrupt S1 cache entry ---------------------------------------------------------------------

def test_corrupt_s1_entry_is_reported_rebuilt_and_never_used(folders, tmp_path, monkeypatch, capsys):
    from uds.cli import main

    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    assert main(score_args(folders, tmp_path / "a")) == 0
    first = json.loads((tmp_path / "a" / "summary.json").read_text())
    entries = list((tmp_path / "home").rglob("s1_*.json"))
    assert first["s1_cache"] == "miss" and len(entries) == 1
    good = entries[0].read_text()
    entries[0].write_text(good[: len(good) // 2])   # cut mid-number, as a crashed copy would leave it
    capsys.readouterr()
    assert main(score_args(folders, tmp_path / "b")) == 0
    err = [l for l in capsys.readouterr().err.splitlines() if "S1 cache" in l]
    second = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert len(err) == 1 and "unusable" in err[0] and str(entries[0]) in err[0]
    assert second["s1_cache"] == "miss" and second["uds"] == first["uds"]   # recomputed, same number
    assert json.loads(entries[0].read_text()) == json.loads(good)            # and rewritten whole
    assert main(score_args(folders, tmp_path / "c")) == 0
    assert json.loads((tmp_path / "c" / "summary.json").read_text())["s1_cache"] == "hit"


def test_full_disk_during_score_keeps_previous_results(folders, tmp_path, monkeypatch, capsys):
    from uds.cli import main

    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    out = tmp_path / "out"
    assert main(score_args(folders, out, "--no-s1-cache")) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()
    monkeypatch.setattr(atomic.os, "fsync", _disk_full)
    assert main(score_args(folders, out, "--no-s1-cache", "--tau", "0.1")) == 2
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and err[0].startswith("uds score: error: no space left"), err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before   # every file as it was, no temp


# -- two processes at once ----------------------------------------------------------------------

def _run_two(args_a: list[str], args_b: list[str], env: dict, timeout: float) -> list[subprocess.CompletedProcess]:
    procs = [subprocess.Popen([sys.executable, "-m", "uds", *a], cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for a in (args_a, args_b)]
    done = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return done


def _same_outputs(a: Path, b: Path) -> dict:
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a, b))
    states = sorted((sa.pop("s1_cache"), sb.pop("s1_cache")))
    sa.pop("elapsed_s"), sb.pop("elapsed_s")
    assert sa == sb
    for name in ("examples.jsonl", "layers.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    return {"s1_states": states, "uds": sa["uds"]}


def test_two_scores_at_once_share_one_s1_computation(folders, tmp_path):
    """Same S1 key in two processes: one computes it (miss), the other waits on the entry's lock
    and reads it (hit); both write identical results."""
    env = {**os.environ, "UDS_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "UDS_QUIET": "1"}
    runs = _run_two(score_args(folders, tmp_path / "a"), score_args(folders, tmp_path / "b"), env, 300)
    for r in runs:
        assert r.returncode == 0, r.stderr
    same = _same_outputs(tmp_path / "a", tmp_path / "b")
    assert same["s1_states"] == ["hit", "miss"]
    assert len(list((tmp_path / "home").rglob("s1_*.json"))) == 1


WAITING_BUILDER = """
import sys
from checkpoints.world.store import ensure_world_data
print("READY", flush=True)
print(open(ensure_world_data("test", 0) / "uds_data.json").read())
"""


def test_a_second_world_builder_waits_for_the_first_and_reuses_its_data(tmp_path, monkeypatch):
    """Two `uds score` on a new home both start by building the world's data. While one holds the
    data's lock, the other waits, then takes what the first wrote rather than writing its own.
    (Before the locks both wrote the same `data.tmp`, and one could delete or rename the other's.)"""
    import time

    from checkpoints.world.store import build_lock
    from uds_core.paths import world_dir

    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    folder = world_dir("test", 0) / "data"
    env = {**os.environ, "UDS_QUIET": "1"}
    with build_lock(folder):   # this test is the first builder, mid-build
        proc = subprocess.Popen([sys.executable, "-c", WAITING_BUILDER], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "READY"
        time.sleep(3)           # the second builder reaches the lock and must wait there
        assert proc.poll() is None
        folder.mkdir(parents=True)
        (folder / "uds_data.json").write_text('{"written_by": "the first builder"}')
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert json.loads(out) == {"written_by": "the first builder"}


@pytest.mark.slow
def test_two_scores_on_a_fresh_home_build_the_world_once(tmp_path):
    """Two `uds score` of a tiny `test` model on an empty UDS_HOME: data, tokenizer, base, full,
    retain and the unlearned model are each built by one process, and both print the same UDS."""
    env = {**os.environ, "UDS_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "UDS_PROGRESS_INTERVAL": "30"}
    spec = "tiny:test/npo_lr2e-4_b01_a1_ep5"
    runs = _run_two(["score", "--unlearned", spec, "--out", str(tmp_path / "a")],
                    ["score", "--unlearned", spec, "--out", str(tmp_path / "b")], env, 1500)
    for r in runs:
        assert r.returncode == 0, r.stderr
    same = _same_outputs(tmp_path / "a", tmp_path / "b")
    assert same["s1_states"] == ["hit", "miss"]
    assert runs[0].stdout.splitlines()[0] == runs[1].stdout.splitlines()[0]   # "UDS = ..." identical
    models = tmp_path / "home" / "world" / "test-0" / "models"
    for name in ("base", "full", "retain", "npo_lr2e-4_b01_a1_ep5"):
        assert atomic.folder_problem(models / name) is None and (models / name / "recipe.json").is_file()
    assert not list(models.glob(".*.tmp")) and not list(models.glob(".*.resume-*.pt"))
