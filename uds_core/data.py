"""Annotated QA data (docs/design.md): reading, validation and a content hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterator

from uds_core.errors import UdsInputError

REQUIRED = ("idx", "question", "answer", "prefix", "entity")


def jsonl_values(text: str, path: str | Path) -> Iterator[tuple[int, object]]:
    """(1-based line number, parsed value) of each non-blank line; a line that is not JSON raises
    UdsInputError naming the file and the line."""
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield n, json.loads(line)
        except json.JSONDecodeError as exc:
            raise UdsInputError(f"{path}: line {n} is not valid JSON ({exc.msg})") from None


def read_qa(path: str | Path) -> list[dict]:
    """Records of a QA JSON list (each a JSON object); raises UdsInputError when the file is
    missing, empty or not a non-empty list. Fields are checked by the callers."""
    p = Path(path)
    if not p.is_file():
        raise UdsInputError(f"data file not found: {p}")
    text = p.read_text(encoding="utf-8").strip()
    if not text:
        raise UdsInputError(f"data file is empty: {p}")
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UdsInputError(f"data file {p} is not a JSON list ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(records, list) or not records:
        raise UdsInputError(f"data file {p} must hold a non-empty JSON list of QA records")
    return records


def has_span(record: object) -> bool:
    """Whether a record carries an entity annotation (`prefix` and `entity` keys)."""
    return isinstance(record, dict) and "prefix" in record and "entity" in record


def check_annotated(records: list[dict], source: str | Path) -> None:
    """Every record has the annotated fields, a non-empty answer, and an entity that occurs in
    its answer; UdsInputError naming the first record that does not."""
    from uds_core.prompts import entity_char_range, entity_of

    for i, rec in enumerate(records):
        missing = [k for k in REQUIRED if not isinstance(rec, dict) or k not in rec]
        if missing:
            raise UdsInputError(f"data file {source}: record {i} lacks {', '.join(missing)}")
        name = f"data file {source}: record idx {rec['idx']}"
        if not isinstance(rec["answer"], str) or not rec["answer"].strip():
            raise UdsInputError(f"{name} has an empty answer")
        entity = entity_of(rec)
        if not isinstance(entity, str) or not entity.strip():
            raise UdsInputError(f"{name} has an empty entity")
        if entity_char_range(rec["answer"], entity) is None:
            raise UdsInputError(f"{name}: its entity {entity!r} is not in its answer")


def load_annotated(path: str | Path) -> list[dict]:
    """Records of an annotated-QA JSON list; raises UdsInputError on anything unusable."""
    records = read_qa(path)
    check_annotated(records, Path(path))
    return records


def data_hash(records: list[dict]) -> str:
    """SHA-256 of the fields that define the UDS inputs (order matters)."""
    keys = ("idx", "question", "answer", "prefix", "entity", "gt_entity")
    canon = [{k: r.get(k) for k in keys} for r in records]
    return hashlib.sha256(json.dumps(canon, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
