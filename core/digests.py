"""Content digests of files and model folders (sha256 of the bytes, streamed).

A model folder's digest covers its weight files and its config: two folders with the same digest
hold the same model whatever their paths or modification times; any changed byte of the weights
changes it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CHUNK = 1 << 20   # bytes read at a time
MODEL_FILES = ("*.safetensors", "*.bin", "config.json")


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 hex digest of the file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            h.update(block)
    return h.hexdigest()


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
