"""The annotated forget records a run scores (UDS and the representation metrics).

A named TOFU split without a data file: the split's rows of the annotated forget10 file (idx
renumbered to the split's rows). A data file: its records, checked against the split when one
is named; records without spans get automatic ones (uds_core/spans), and `annotation` says how many
by which rule and which were left out. Hand spans are never replaced.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from checkpoints import splits
from checkpoints.specs import default_tofu_annotated
from uds_core.data import check_annotated, has_span, load_annotated, read_qa
from uds_core.errors import UdsInputError


@dataclass(frozen=True)
class ForgetRecords:
    records: list[dict]
    annotation: dict | None = None   # {"methods": {rule: count}, "without_span": [idx]} when spans were found here


def read_forget_records(path: str | Path, split: splits.Split | None, derive: bool,
                        tofu_dir: str | None = None) -> ForgetRecords:
    """The records of `path`; with `derive`, the `split`'s rows of that annotated forget10 file."""
    if derive:
        return ForgetRecords(splits.annotations_for(split, load_annotated(path)))
    raw = read_qa(path)
    found = ForgetRecords(raw) if all(has_span(r) for r in raw) else annotate(raw, path)
    check_annotated(found.records, path)
    if split is not None:
        rows, source = split_rows(split, tofu_dir)
        splits.check_records(found.records, split, rows, str(path), against=source)
    return found


def annotate(raw: list, path: str | Path) -> ForgetRecords:
    """Automatic spans for the records that have none; bad input when none is found at all."""
    from uds_core.spans.annotate import annotate_records

    records, without = annotate_records(raw, str(path))
    if not records:
        raise UdsInputError(f"{path}: no record has an entity span, and none was found automatically; "
                            "annotate it by hand (prefix, entity) or see `uds annotate`")
    return ForgetRecords(records, {"methods": dict(Counter(r["span_method"] for r in records)),
                                   "without_span": without})


def split_rows(split: splits.Split, tofu_dir: str | None = None) -> tuple[dict[int, dict], str]:
    """(row -> QA of the split, the file it was read from): every row, from full.json, where the
    TOFU files are at hand; else the annotated rows (of the annotated forget10 file the data
    lookup finds)."""
    rows = splits.read_split_rows(split, tofu_dir)
    if rows is not None:
        return dict(enumerate(rows)), str(splits.full_json(tofu_dir))
    path = default_tofu_annotated(tofu_dir)
    return {r["idx"]: r for r in splits.annotations_for(split, load_annotated(path))}, str(path)
