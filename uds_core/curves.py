"""The curve file of an evaluation during training (`uds.callbacks.UdsCallback`): JSON lines.

Line 1 is the header, `{"curve": "uds", "version": 1, "settings": {...}}` (the anchors, the
schedule, the metric keys and their orientations, the best-checkpoint rule). Every later line is
one evaluation: `step` (optimiser steps done; 0 = the model before training), `epoch` (float),
`uds`, one value per output metric key (null where undefined), `train_loss` (the last logged
training loss; null at step 0), `eval_seconds` (wall seconds of this evaluation),
`train_seconds` (wall seconds of training since the previous evaluation ended), `best_step`
(the step the rule prefers so far; null before any evaluation meets it) and, for an evaluation
that failed, `error` (one line) instead of the values. Lines are appended and flushed one at a
time, so a run that stops keeps every evaluation it finished. Reading needs no torch.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uds_core import atomic
from uds_core.numbers import finite_or_none

CURVE_KIND, CURVE_VERSION = "uds", 1


@dataclass
class Curve:
    """A read curve file: its settings and its evaluation records in file order."""
    path: Path
    settings: dict
    records: list[dict] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.settings.get("name") or self.path.stem)

    def scored(self) -> list[dict]:
        """The records of evaluations that finished (no `error`)."""
        return [r for r in self.records if "error" not in r]

    def best_step(self) -> int | None:
        """The checkpoint the rule chose: the last record's `best_step`."""
        return next((r.get("best_step") for r in reversed(self.records) if "best_step" in r), None)


def is_header(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("curve") == CURVE_KIND and isinstance(doc.get("settings"), dict)


def read_curve(path: str | Path) -> Curve:
    """The curve in `path`; ValueError (naming the file and line) for anything else."""
    path = Path(path)
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not lines:
        raise ValueError(f"{path}: empty, not a curve file")
    docs = []
    for n, line in enumerate(lines, 1):
        try:
            docs.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg})") from exc
    if not is_header(docs[0]):
        raise ValueError(f"{path}: its first line is not a curve header ({{\"curve\": \"{CURVE_KIND}\", ...}})")
    bad = [n for n, d in enumerate(docs[1:], 2) if not (isinstance(d, dict) and isinstance(d.get("step"), int))]
    if bad:
        raise ValueError(f"{path}:{bad[0]}: an evaluation record needs an integer `step`")
    return Curve(path, docs[0]["settings"], docs[1:])


def _line(doc: dict) -> str:
    return json.dumps(doc, allow_nan=False, sort_keys=False) + "\n"


def _append(path: Path, doc: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(_line(doc))
        f.flush()
        os.fsync(f.fileno())   # an evaluation written is an evaluation kept, whatever stops the run


def start_curve(path: Path, settings: dict, from_step: int) -> list[dict]:
    """Begin writing at `from_step`: a fresh file (header only) when training starts at step 0;
    for a run resumed at `from_step`, the earlier file's records up to that step are kept (later
    ones belonged to the interrupted part, which is trained again). Returns the kept records."""
    kept: list[dict] = []
    if from_step > 0 and path.is_file():
        try:
            kept = [r for r in read_curve(path).records if r["step"] <= from_step]
        except ValueError:
            kept = []
    header = {"curve": CURVE_KIND, "version": CURVE_VERSION, "settings": settings}
    atomic.write_text(path, "".join(_line(d) for d in [header, *kept]))
    return kept


def append_record(path: Path, record: dict) -> None:
    """Append one evaluation record (non-finite floats written as null)."""
    _append(path, {k: finite_or_none(v) if isinstance(v, float) else v for k, v in record.items()})


def check_writable(path: Path) -> str | None:
    """Why `path` cannot be written as a curve file (None: it can). Creates missing parent
    folders; creates no file."""
    if path.is_dir():
        return "is a folder"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"its folder cannot be made ({exc.strerror or exc})"
    target = path if path.exists() else path.parent
    return None if os.access(target, os.W_OK) else "not writable"
