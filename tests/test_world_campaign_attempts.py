"""The training time of a world build stopped and resumed (uds/world_campaign/attempts.py): each
attempt counts from its start to the last training state it saved, and the totals below are
worked out by hand from the times the test sets."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from uds.world_campaign import attempts


def _save_state(resume: Path, epoch: int, at: float) -> None:
    torch.save({"epoch": epoch, "losses": [0.5] * epoch}, resume)
    os.utime(resume, (at, at))


def test_a_build_in_one_attempt_is_its_own_time(tmp_path):
    ledger, resume = tmp_path / "ledger.json", tmp_path / "state.pt"
    attempts.begin(ledger, resume, now=1000.0)
    out = attempts.finish(ledger, last_seconds=812.5, epochs=6)
    assert out == {"attempts": [{"resumed_from_epoch": 0, "reached_epoch": 6, "seconds": 812.5}],
                   "train_seconds_total": 812.5}
    assert not ledger.exists()


def test_a_stopped_attempt_counts_up_to_its_last_saved_epoch(tmp_path):
    ledger, resume = tmp_path / "ledger.json", tmp_path / "state.pt"
    attempts.begin(ledger, resume, now=1000.0)
    _save_state(resume, 3, at=1300.0)            # epoch 3 saved 300 s in; the stop came later
    attempts.begin(ledger, resume, now=2000.0)   # the second attempt resumes at epoch 3
    out = attempts.finish(ledger, last_seconds=250.0, epochs=6)
    assert out["attempts"] == [{"resumed_from_epoch": 0, "reached_epoch": 3, "seconds": 300.0},
                               {"resumed_from_epoch": 3, "reached_epoch": 6, "seconds": 250.0}]
    assert out["train_seconds_total"] == 550.0


def test_attempts_that_saved_nothing_count_zero(tmp_path):
    ledger, resume = tmp_path / "ledger.json", tmp_path / "state.pt"
    attempts.begin(ledger, resume, now=1000.0)
    _save_state(resume, 2, at=1200.0)
    attempts.begin(ledger, resume, now=2000.0)   # stopped before saving epoch 3
    attempts.begin(ledger, resume, now=3000.0)
    out = attempts.finish(ledger, last_seconds=500.0, epochs=6)
    assert [(a["resumed_from_epoch"], a["reached_epoch"], a["seconds"]) for a in out["attempts"]] == [
        (0, 2, 200.0), (2, 2, 0.0), (2, 6, 500.0)]
    assert out["train_seconds_total"] == 700.0


def test_a_build_resumed_before_the_ledger_has_no_total(tmp_path):
    ledger, resume = tmp_path / "ledger.json", tmp_path / "state.pt"
    _save_state(resume, 3, at=500.0)            # an attempt nobody timed
    attempts.begin(ledger, resume, now=1000.0)
    out = attempts.finish(ledger, last_seconds=862.4, epochs=6)
    assert out["attempts"] == [{"resumed_from_epoch": 3, "reached_epoch": 6, "seconds": 862.4}]
    assert out["train_seconds_total"] is None


def test_no_ledger_means_one_attempt_of_unknown_start(tmp_path):
    out = attempts.finish(tmp_path / "absent.json", last_seconds=None, epochs=5)
    assert out == {"attempts": [{"resumed_from_epoch": 0, "reached_epoch": 5, "seconds": None}],
                   "train_seconds_total": None}


class _Stop(Exception):
    pass


def test_the_build_unit_times_every_attempt_of_a_stopped_build(test_world, tmp_path, monkeypatch):
    """A real build of the `test` world, stopped right after its first epoch's training state is
    saved, then run again: the unit's record has both attempts and their sum."""
    import shutil

    import checkpoints.world.train as train
    from uds.world_campaign.units import build

    home = tmp_path / "home"
    for part in ("data", "tokenizer", "zoo.json", "models/base", "models/full"):   # the world but its zoo
        src, dst = test_world / part, home / "world" / "test-0" / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copy(src, dst)
    monkeypatch.setenv("UDS_HOME", str(home))
    save = train.save_train_state

    def save_then_stop(path, epoch, *args, **kwargs):
        save(path, epoch, *args, **kwargs)
        raise _Stop

    monkeypatch.setattr(train, "save_train_state", save_then_stop)
    name = "npo_lr2e-4_b01_a1_ep5"
    try:
        build("tiny:test", name, tmp_path)
    except _Stop:
        pass
    monkeypatch.setattr(train, "save_train_state", save)
    out = build("tiny:test", name, tmp_path)
    first, last = out["attempts"]
    assert (first["resumed_from_epoch"], first["reached_epoch"]) == (0, 1) and first["seconds"] > 0
    assert (last["resumed_from_epoch"], last["reached_epoch"]) == (1, 5) and last["seconds"] == out["train_seconds"]
    assert out["train_seconds_total"] == round(first["seconds"] + last["seconds"], 1)
    left = {p.suffix for p in (home / "world" / "test-0" / "models").glob(f".{name}.*")}
    assert left == {".lock"}   # the ledger and the training state are removed


def test_prepare_rebuilds_a_missing_model_to_the_same_weights_and_names_them(test_world, tmp_path, monkeypatch):
    """On a machine with the world but without an unlearned model, preparing (full, that model)
    rebuilds it alone: its rebuilt folder holds the same weights as the one built before (every
    tensor equal), and full, already built, is reported as such. The quickest model of the zoo to
    train (an RMU of full) keeps it short; tests/test_world_build.py retrains retain to its weights."""
    import shutil

    import torch
    from safetensors.torch import load_file

    from checkpoints.world.build import ensure_model
    from uds.world_campaign.units import prepare, weights_of
    from uds_core.fingerprint import state_digest

    name = "rmu_lr2e-4_l2_s10_ep5"
    before = ensure_model("test", 0, name, progress=False)     # in the session's world (other tests use it)
    home = tmp_path / "home"
    for part in ("data", "tokenizer", "zoo.json", "models/base", "models/full"):
        src, dst = test_world / part, home / "world" / "test-0" / part
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    monkeypatch.setenv("UDS_HOME", str(home))
    out = prepare("tiny:test", ["full", name])["models"]
    assert list(out) == ["full", name]
    assert out["full"]["rebuilt_seconds"] is None and out[name]["rebuilt_seconds"] > 0
    rebuilt = home / "world" / "test-0" / "models" / name
    a, b = load_file(str(rebuilt / "model.safetensors")), load_file(str(before / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert out[name]["weights"] == state_digest(b) == weights_of(rebuilt)
    assert out["full"]["weights"] == state_digest(load_file(str(test_world / "models" / "full" / "model.safetensors")))
    b[next(iter(b))].view(-1)[0] += 1.0   # one value changed (the first is always sampled): another digest
    assert state_digest(b) != out[name]["weights"]
