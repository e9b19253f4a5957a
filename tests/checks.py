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
