"""The training time of a build that ran in several attempts.

A world build saves its whole training state after every epoch and a stopped build resumes from
the last one (`checkpoints.world.train`); the model's `recipe.json` then times the last attempt
only. A build unit keeps a small ledger beside the training state: when each attempt started and
from which epoch. An earlier attempt counts from its start to the last save of the training
state (the file's modification time): the part of an epoch cut short by the stop was lost and
trained again, so it is not counted. Times are wall-clock seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from uds_core import atomic


def saved_epoch(resume: Path) -> int:
    """Epochs done in a training-state file (0 when there is none)."""
    if not resume.is_file():
        return 0
    return int(torch.load(resume, map_location="cpu", weights_only=True, mmap=True)["epoch"])


def begin(ledger: Path, resume: Path, *, now: float) -> None:
    """Record an attempt starting at `now` (seconds since the epoch), closing the one before."""
    attempts = json.loads(ledger.read_text()) if ledger.is_file() else []
    epoch = saved_epoch(resume)
    if attempts and "seconds" not in attempts[-1]:
        last = attempts[-1]
        saved = resume.stat().st_mtime if resume.is_file() else None
        progressed = saved is not None and saved > last["started"] and epoch > last["resumed_from_epoch"]
        last["seconds"] = round(saved - last["started"], 1) if progressed else 0.0
        last["reached_epoch"] = epoch if progressed else last["resumed_from_epoch"]
    attempts.append({"started": now, "resumed_from_epoch": epoch})
    atomic.write_json(ledger, attempts)


def finish(ledger: Path, *, last_seconds: float | None, epochs: int) -> dict:
    """The attempts of a build that just finished (the last one timed by `last_seconds`) and
    their total; removes the ledger. The total is None when the first attempt recorded here
    resumed an earlier one, whose time is unknown."""
    attempts = json.loads(ledger.read_text()) if ledger.is_file() else []
    ledger.unlink(missing_ok=True)
    rows = [{"resumed_from_epoch": a["resumed_from_epoch"], "reached_epoch": a["reached_epoch"],
             "seconds": a["seconds"]} for a in attempts[:-1]]
    start = attempts[-1]["resumed_from_epoch"] if attempts else 0
    rows.append({"resumed_from_epoch": start, "reached_epoch": epochs, "seconds": last_seconds})
    unknown = rows[0]["resumed_from_epoch"] > 0 or any(r["seconds"] is None for r in rows)
    return {"attempts": rows, "train_seconds_total": None if unknown else round(sum(r["seconds"] for r in rows), 1)}
