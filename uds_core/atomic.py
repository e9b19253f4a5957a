"""Writes that are never seen half done, per-artefact locks, and checks of files read back.

- `atomic_file(path)`: yields a temporary path in the same folder; on success the file is fsynced
  and renamed over `path` (`os.replace`, atomic on POSIX), on any failure it is removed. A reader
  therefore sees the previous file or the new one, never a prefix, even if the writer is killed.
- A full disk (ENOSPC, EDQUOT) becomes one `UdsInputError` line naming the file; the previous
  file is untouched.
- `file_lock(path)`: an exclusive `fcntl.flock` on `.<name>.lock` beside the artefact, so two
  processes that need the same artefact build it once (the second waits, then reads it).
- `safetensors_problem(path)`: whether a weights file is complete (header parses, its size is the
  header's), so a truncated model is rebuilt instead of silently loaded.
"""

from __future__ import annotations

import errno
import json
import os
import struct
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from uds_core.errors import UdsInputError

_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself (the directory entry); not all filesystems allow it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_tree(folder: str | os.PathLike) -> None:
    """fsync every file of `folder` and the folder itself (before renaming it into place)."""
    folder = Path(folder)
    for f in folder.rglob("*"):
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    _fsync_dir(folder)


@contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling of `path` to write; it replaces `path` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:   # the writer may have used its own handle (savefig, csv)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno in _DISK_FULL:
            raise UdsInputError(f"no space left on the device while writing {path}; "
                                f"{'the previous file is intact' if path.exists() else 'nothing was written'}; "
                                "free some space and rerun") from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_file(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | os.PathLike, obj: Any, **dump_kwargs: Any) -> Path:
    """`json.dumps(obj, **dump_kwargs)` written atomically (serialised first: a bad value writes nothing)."""
    return write_text(path, json.dumps(obj, **dump_kwargs) + "\n")


def read_json(path: str | os.PathLike, what: str = "file") -> Any | None:
    """The parsed JSON at `path`; None when absent. A corrupt file raises one-line `UdsInputError`."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise UdsInputError(f"{what} {path} is corrupt ({exc}); delete it and rerun") from exc


@contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock tied to artefact `path` (POSIX flock; elsewhere no lock)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:   # Windows: no flock; single-process use stays correct
        yield
        return
    with open(path.with_name(f".{path.name}.lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def safetensors_problem(path: str | os.PathLike) -> str | None:
    """None if `path` is a complete safetensors file, else a short reason.

    The format is an 8-byte little-endian header length, a JSON header giving each tensor's
    byte range, then the data; a file cut short is smaller than the header's last offset.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                return f"{size} bytes, shorter than its header length field"
            (n,) = struct.unpack("<Q", raw)
            if n > size - 8:
                return f"header of {n} bytes does not fit in {size} bytes"
            header = json.loads(fh.read(n))
    except (OSError, ValueError) as exc:
        return f"unreadable header ({exc})"
    ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
    expected = 8 + n + max(ends, default=0)
    if size != expected:
        return f"{size} bytes where its header says {expected}"
    return None


def folder_problem(folder: str | os.PathLike) -> str | None:
    """None if every `*.safetensors` file in `folder` is complete, else the first file's reason."""
    for f in sorted(Path(folder).glob("*.safetensors")):
        reason = safetensors_problem(f)
        if reason:
            return f"{f.name}: {reason}"
    return None
