"""Digest manifests of built folders: each file's size and content digest, recorded when the
folder is written and checked before it is used.

A builder (tiny-world model, GGUF conversion, relearned copy, world data and tokenizer) calls
`record(folder)` on its temporary folder before renaming it into place; the manifest
(`digests.json`, itself sealed, `uds_core.sealed`) lists every file but hidden ones (locks, temp
files) with its size and xxh3-128 digest (the hash it names; `uds_core.digests` says why not
sha256). `verify(folder)` says what differs: a file missing, added, of another size or of other
content, or a manifest that is itself unreadable (a damaged file like any other). File digests
are remembered per process (`uds_core.digests.file_digest`), so a folder checked twice in one
command is read once.

A folder built before manifests existed has none: `verify_or_record` checks what can still be
checked (complete safetensors files, `uds_core.atomic.safetensors_problem`), records the manifest from
the files as they are, says so once on stderr, and verifies the folder from then on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from uds_core import atomic, sealed
from uds_core.digests import HASHES, file_digest

MANIFEST = "digests.json"
VERSION = 1
HASH = "xxh3_128"   # what `record` writes; `verify` reads the one the manifest names


def listed_files(folder: Path) -> dict[str, Path]:
    """Relative POSIX name -> path of every file a manifest covers (hidden ones and the manifest
    itself left out)."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts) and rel.as_posix() != MANIFEST:
            out[rel.as_posix()] = path
    return out


def record(folder: str | os.PathLike) -> Path:
    """Write `folder/digests.json` (atomically): {"version", "hash": HASH, "files": {name:
    {"bytes", "digest"}}}, sealed."""
    folder = Path(folder)
    files = {name: {"bytes": path.stat().st_size, "digest": file_digest(path, HASH)}
             for name, path in listed_files(folder).items()}
    doc = {"version": VERSION, "hash": HASH, "files": files}
    return atomic.write_json(folder / MANIFEST, sealed.seal(doc), indent=1, sort_keys=True)


def update(folder: str | os.PathLike, names: list[str]) -> None:
    """Record anew the entries of `names` (files its builder edited on purpose); the others are
    kept as recorded, so damage elsewhere is still seen. An unreadable manifest is left as it is
    (the next `verify` reports it)."""
    folder = Path(folder)
    recorded, hash_name, problem = _recorded(folder)
    if problem:
        return
    for name in names:
        path = folder / name
        recorded[name] = {"bytes": path.stat().st_size, "digest": file_digest(path, hash_name)}
    doc = {"version": VERSION, "hash": hash_name, "files": recorded}
    atomic.write_json(folder / MANIFEST, sealed.seal(doc), indent=1, sort_keys=True)


def has_manifest(folder: str | os.PathLike) -> bool:
    return (Path(folder) / MANIFEST).exists()


def _recorded(folder: Path) -> tuple[dict | None, str, str | None]:
    """(the manifest's {name: {"bytes", "digest"}}, its hash name, None), or (None, "", why it
    is unusable)."""
    path = folder / MANIFEST
    checked = sealed.read_checked(path)
    doc = checked.doc or {}
    files = doc.get("files")
    shape_ok = isinstance(files, dict) and all(
        isinstance(v, dict) and isinstance(v.get("bytes"), int) and isinstance(v.get("digest"), str)
        for v in files.values())
    if checked.problem or not shape_ok or doc.get("version") != VERSION or doc.get("hash") not in HASHES:
        why = checked.problem or "not a manifest of this version"
        return None, "", f"{path}: digest manifest unreadable ({why})"
    return files, doc["hash"], None


def verify(folder: str | os.PathLike) -> str | None:
    """None when every file matches the folder's manifest, else one line naming the first file
    and what differs. Sizes are compared for every file before any content is hashed."""
    folder = Path(folder)
    recorded, hash_name, problem = _recorded(folder)
    if problem:
        return problem
    present = listed_files(folder)
    for name in sorted(set(recorded) | set(present)):
        if name not in present:
            return f"{folder / name}: missing (listed in {MANIFEST})"
        if name not in recorded:
            return f"{folder / name}: not listed in {MANIFEST} (added after the build)"
        size = present[name].stat().st_size
        if size != recorded[name]["bytes"]:
            return f"{folder / name}: {size} bytes where {MANIFEST} records {recorded[name]['bytes']}"
    for name in sorted(recorded):
        digest = file_digest(present[name], hash_name)
        if digest != recorded[name]["digest"]:
            return (f"{folder / name}: content differs from {MANIFEST} ({hash_name} {digest[:12]}, "
                    f"recorded {recorded[name]['digest'][:12]}), size unchanged")
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def verify_or_record(folder: str | os.PathLike, log: Callable[[str], None] = _stderr) -> str | None:
    """`verify`, or for a folder without a manifest (built before digests): its safetensors
    files checked for completeness, then its manifest recorded from the files as they are (said
    on `log`). Returns the problem, None when the folder can be used."""
    folder = Path(folder)
    if has_manifest(folder):
        return verify(folder)
    for weights in sorted(folder.glob("*.safetensors")):   # all that can be said of it without a record
        problem = atomic.safetensors_problem(weights)
        if problem:
            return f"{weights}: {problem}"
    record(folder)
    log(f"{folder}: built before content digests; recorded {MANIFEST} from its files as they are "
        "(checked on every later use)")
    return None


def checked(folder: Path, quiet: bool, damaged: Callable[[str], str]) -> bool:
    """Whether `folder`'s files match its manifest. `quiet` (a look before taking a lock) says and
    writes nothing, and a folder without a manifest is not whole; otherwise a damaged folder is
    said on stderr in one line, `damaged(problem)`, and a folder made before manifests gets one
    recorded (`verify_or_record`)."""
    if quiet:
        return has_manifest(folder) and verify(folder) is None
    problem = verify_or_record(folder)
    if problem:
        _stderr(damaged(problem))
    return problem is None
