"""Content digests of files and model folders (a hash of the bytes, streamed).

Two hashes: sha256 (identities that are committed or compared across machines: the campaign's
model fingerprints, GGUF cache keys) and xxh3-128 (`xxhash`: the damage check of built folders,
`uds_core.manifest`, run before every use of a model, where sha256 was a measurable part of a
command's time, benchmarks/bench_verify.py; damage is accidental, not an adversary).

A model folder's digest covers its weight files and its config: two folders with the same digest
hold the same model whatever their paths or modification times; any changed byte of the weights
changes it.

A file is hashed once per process and hash: its digest is remembered under (path, inode, size,
mtime), so the several checks of one model within a command read it once, and a file rewritten
since (new inode or mtime) is hashed afresh. A later process hashes it again. A file modified in
the last `RACY_NS` is not remembered: the filesystem's clock ticks coarsely, so a second write
within the same tick would keep its mtime (git's "racily clean" entries).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Callable

import xxhash

CHUNK = 1 << 20   # bytes read at a time
MODEL_FILES = ("*.safetensors", "*.bin", "config.json")
RACY_NS = 2_000_000_000   # nanoseconds: well above any filesystem's timestamp granularity


HASHES: dict[str, Callable] = {"sha256": hashlib.sha256, "xxh3_128": xxhash.xxh3_128}

# (hash name, resolved path, inode, size, mtime_ns) -> hex digest, for this process only
_DIGESTS: dict[tuple[str, str, int, int, int], str] = {}


def file_digest(path: str | os.PathLike, hash_name: str = "sha256") -> str:
    """Hex digest of the file's bytes under `hash_name` (a key of HASHES), remembered within
    the process (see above)."""
    path = Path(path)
    key = (hash_name, *stat_key(path))
    if key in _DIGESTS:
        return _DIGESTS[key]
    h = HASHES[hash_name]()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    digest = h.hexdigest()
    # not remembered if the file changed while it was read, or so lately that it may change unseen
    if (hash_name, *stat_key(path)) == key and time.time_ns() - key[-1] > RACY_NS:
        _DIGESTS[key] = digest
    return digest


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 hex digest of the file's bytes (remembered within the process)."""
    return file_digest(path, "sha256")


def stat_key(path: Path) -> tuple[str, int, int, int]:
    """(resolved path, inode, size, mtime_ns): what a remembered digest is valid for."""
    st = path.stat()
    return str(path.resolve()), st.st_ino, st.st_size, st.st_mtime_ns


def is_remembered(path: Path, hash_name: str) -> bool:
    """Whether the file's digest under `hash_name` is remembered (the next request reads nothing)."""
    return (hash_name, *stat_key(path)) in _DIGESTS


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
