"""Content digests of files and model folders (sha256 of the bytes, streamed).

A model folder's digest covers its weight files and its config: two folders with the same digest
hold the same model whatever their paths or modification times; any changed byte of the weights
changes it.

A file is hashed once per process: its digest is remembered under (path, inode, size, mtime), so
the several checks of one model within a command read it once, and a file rewritten since (new
inode or mtime) is hashed afresh. A later process hashes it again. A file modified in the last
`RACY_NS` is not remembered: the filesystem's clock ticks coarsely, so a second write within the
same tick would keep its mtime (git's "racily clean" entries).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

CHUNK = 1 << 20   # bytes read at a time
MODEL_FILES = ("*.safetensors", "*.bin", "config.json")
RACY_NS = 2_000_000_000   # nanoseconds: well above any filesystem's timestamp granularity


# (resolved path, inode, size, mtime_ns) -> sha256 hex, for this process only
_SHA256: dict[tuple[str, int, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 hex digest of the file's bytes (remembered within the process, see above)."""
    path = Path(path)
    key = _stat_key(path)
    if key in _SHA256:
        return _SHA256[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    digest = h.hexdigest()
    # not remembered if the file changed while it was read, or so lately that it may change unseen
    if _stat_key(path) == key and time.time_ns() - key[3] > RACY_NS:
        _SHA256[key] = digest
    return digest


def _stat_key(path: Path) -> tuple[str, int, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns


def forget_hashes() -> None:
    """Drop the remembered digests: the next check of every file reads it again."""
    _SHA256.clear()


def model_folder_digest(folder: str | os.PathLike) -> str:
    """sha256 over the names and digests of the folder's weight files and config.json."""
    folder = Path(folder)
    files = sorted({f for pattern in MODEL_FILES for f in folder.glob(pattern) if f.is_file()})
    if not files:
        raise FileNotFoundError(f"{folder}: no model files ({', '.join(MODEL_FILES)})")
    h = hashlib.sha256()
    for f in files:
        h.update(f"{f.name}:{file_sha256(f)};".encode())
    return h.hexdigest()
