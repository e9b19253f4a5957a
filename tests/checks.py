"""Checks and damage helpers shared by several test files (import them from here, not from another
test file)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """A command that failed on bad input: exit status 2, no traceback, one `uds ...` line holding `needles`."""
    assert proc.returncode == 2, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith("uds "), proc.stderr
    for n in needles:
        assert n in lines[0]


def assert_one_line_message(exc: BaseException, *needles: str) -> str:
    """An input error's message: one line holding every one of `needles`; returned for more checks."""
    text = str(exc)
    assert "\n" not in text
    for n in needles:
        assert n in text, text
    return text


def assert_minimal_entity_windows(prepared, records: list[dict], tok) -> None:
    """Each prepared item's target tokens decode to a text holding its record's entity, and neither
    window one token shorter does (the span is the entity's smallest token window, spec §2.3)."""
    entity = {r["idx"]: (r.get("gt_entity") or r["entity"]).strip() for r in records}
    for item in prepared:
        ids = item.target_ids
        assert entity[item.idx] in tok.decode(ids)
        if len(ids) > 1:
            assert entity[item.idx] not in tok.decode(ids[1:])
            assert entity[item.idx] not in tok.decode(ids[:-1])


def flip_digit_near_middle(path: Path) -> int:
    """Flip the low bit of the first ASCII digit at or after the file's middle (a digit stays a
    digit, so JSON stays valid and the size unchanged); returns its offset."""
    data = bytearray(path.read_bytes())
    at = next(i for i in range(len(data) // 2, len(data)) if 0x30 <= data[i] <= 0x39)
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    return at


def flip_middle_byte(path: Path) -> None:
    """Every bit of the middle byte flipped, in place (size unchanged)."""
    with open(path, "r+b") as fh:
        fh.seek(os.path.getsize(path) // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0xFF]))
