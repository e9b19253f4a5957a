"""TOFU's forget and retain splits by name: the one owner of what forget01/05/10 and
retain99/95/90 are. Every command, the meta-evaluation and the Open-Unlearning plug-in ask here.

TOFU orders `full.json` by author, 20 QA pairs each, 200 authors. `forgetNN` is the last NN % of
the authors (the last 40, 200 or 400 rows of full) and `retainMM` the rows before them, so
forget01 and forget05 are the last 40 and 200 rows of forget10. Neither ships here: they are
derived from full.json (whose last 400 rows are forget10, row by row) and the forget10 entity
annotations are mapped onto each split's own row indices (`idx` = row in the split).

A tiny world has one forget set, which plays forget10 (experiments/ou_integration.sh writes it as
Open-Unlearning's forget10); naming forget01 or forget05 for a tiny-world model is bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Mapping, Sequence

from uds_core.errors import UdsInputError

FULL_ROWS = 4000      # TOFU's full.json: 200 authors x 20 QA pairs
FORGET10_ROWS = 400
DEFAULT_SPLIT = "forget10"


@dataclass(frozen=True)
class Split:
    """One forget split and the retain split that completes it to full."""
    name: str      # "forget01"
    retain: str    # "retain99": the rest of full, what the split's retain model is trained on
    rows: int      # QA pairs in the split

    @property
    def offset(self) -> int:
        """Row of forget10 where this split begins (its idx 0)."""
        return FORGET10_ROWS - self.rows

    @property
    def full_rows(self) -> range:
        """The split's rows in full.json."""
        return range(FULL_ROWS - self.rows, FULL_ROWS)

    @property
    def retain_rows(self) -> range:
        """The retain split's rows in full.json."""
        return range(0, FULL_ROWS - self.rows)

    def from_forget10(self, idx: int) -> int | None:
        """The split's row of forget10 row `idx`, None when that row is not in the split."""
        return idx - self.offset if self.offset <= idx < FORGET10_ROWS else None


SPLITS = {s.name: s for s in (Split("forget01", "retain99", 40), Split("forget05", "retain95", 200),
                              Split("forget10", "retain90", 400))}


def get_split(name: str) -> Split:
    """The split called `name`; UdsInputError listing the valid names otherwise."""
    if name not in SPLITS:
        raise UdsInputError(f"unknown forget split {name!r} (choose {', '.join(SPLITS)})")
    return SPLITS[name]


def check_forget10_is_tail(full: Sequence[dict], forget10: Sequence[dict]) -> None:
    """full.json's last 400 rows must be forget10, row by row (question and answer)."""
    if len(full) != FULL_ROWS or len(forget10) != FORGET10_ROWS:
        raise UdsInputError(f"TOFU full has {len(full)} rows and forget10 {len(forget10)}; "
                            f"expected {FULL_ROWS} and {FORGET10_ROWS}")
    tail = full[FULL_ROWS - FORGET10_ROWS:]
    for i, (a, b) in enumerate(zip(tail, forget10)):
        if (a["question"], a["answer"]) != (b["question"], b["answer"]):
            raise UdsInputError(f"TOFU full row {FULL_ROWS - FORGET10_ROWS + i} is not forget10 row {i}")


def derive(full: Sequence[dict], split: Split) -> tuple[list[dict], list[dict]]:
    """(forget rows, retain rows) of `split` from full.json's records, in full's order."""
    if len(full) != FULL_ROWS:
        raise UdsInputError(f"TOFU full has {len(full)} rows, expected {FULL_ROWS}")
    return [full[i] for i in split.full_rows], [full[i] for i in split.retain_rows]


def full_json(tofu_dir: str | Path | None = None) -> Path | None:
    """TOFU's full.json by the data lookup (checkpoints/tofu_files.py: `tofu_dir`, else
    `$UDS_TOFU_DIR`, else the Hub's copy); None when none is at hand."""
    from checkpoints.tofu_files import local_folder, tofu_file

    folder = local_folder(tofu_dir)
    if folder is not None:
        return folder / "full.json" if (folder / "full.json").is_file() else None
    try:
        return tofu_file("full")
    except UdsInputError:
        return None


def read_split_rows(split: Split, tofu_dir: str | Path | None = None) -> list[dict] | None:
    """The split's QA rows derived from `full_json(tofu_dir)`, checked against forget10 beside it
    where a local folder has it; None when no full.json is at hand."""
    from checkpoints.tofu_files import read_records

    path = full_json(tofu_dir)
    if path is None:
        return None
    folder, full = path.parent, read_records(path)
    if (folder / "forget10.json").is_file():
        check_forget10_is_tail(full, read_records(folder / "forget10.json"))
    return derive(full, split)[0]


def annotations_for(split: Split, forget10_records: Sequence[dict]) -> list[dict]:
    """The forget10 annotations of the split's rows, each with `idx` renumbered to its row in
    the split (forget10 idx 360 is forget01 idx 0), in the input's order."""
    out = []
    for rec in forget10_records:
        row = split.from_forget10(int(rec["idx"]))
        if row is not None:
            out.append({**rec, "idx": row})
    return out


def check_records(records: Sequence[dict], split: Split, known: Mapping[int, dict], source: str,
                  against: str = "") -> None:
    """Each record's idx must be a row of the split whose question and answer it carries.
    `known`: row -> its record, every row of the split (derived from full.json) or, without
    full.json, the annotated rows only (a record on another row of the split is then unchecked).
    `against`: the file `known` was read from, named in the message."""
    complete = len(known) >= split.rows
    of = f" in {against}" if against else ""
    for rec in records:
        idx = rec.get("idx")
        inside = isinstance(idx, int) and 0 <= idx < split.rows
        if not inside:
            raise UdsInputError(f"{source}: record idx {idx!r} is not a row of {split.name} (rows 0-{split.rows - 1})")
        ref = known.get(idx)
        if ref is None and not complete:
            continue
        for key in ("question", "answer"):
            if ref is None or rec.get(key) != ref.get(key):
                raise UdsInputError(f"{source}: record idx {idx}: its {key} is not that of {split.name} row {idx}{of}")


def split_world(world, split: Split):
    """A TOFU World seen through `split`: forget = the split's rows (idx renumbered), retain =
    retain90 followed by the forget10 rows before the split (the split's retain set)."""
    if len(world.forget) != FORGET10_ROWS:
        raise UdsInputError(f"{split.name} needs the whole of forget10 ({FORGET10_ROWS} rows); "
                            f"this world's forget set has {len(world.forget)}")
    head, tail = world.forget[:split.offset], world.forget[split.offset:]
    retain = list(world.retain) + [{**it, "idx": len(world.retain) + k} for k, it in enumerate(head)]
    return replace(world, forget=[{**it, "idx": k} for k, it in enumerate(tail)], retain=retain)


def default_retain(full_spec: str, split: Split) -> str | None:
    """The retain anchor that goes with an Open-Unlearning full model for `split` (forget01 ->
    the same architecture's retain99 model), None when `full_spec` names no OU full model."""
    from checkpoints import ou_checkpoints

    return ou_checkpoints.retain_for(full_spec, split.retain)


def tiny_split(name: str | None, spec: str) -> None:
    """A tiny world's one forget set plays forget10; any other split is bad input."""
    if name is not None and get_split(name).name != DEFAULT_SPLIT:
        raise UdsInputError(f"{name} is a TOFU split: the tiny-world model {spec} has one forget set, "
                            f"which plays {DEFAULT_SPLIT} (leave the split out or name {DEFAULT_SPLIT})")
