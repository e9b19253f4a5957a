"""Digest manifests of built folders: each file's size and sha256, recorded when the folder is
written and checked before it is used.

A builder (tiny-world model, GGUF conversion, relearned copy, world data and tokenizer) calls
`record(folder)` on its temporary folder before renaming it into place; the manifest
(`digests.json`, itself sealed, `core.sealed`) lists every file but hidden ones (locks, temp
files). `verify(folder)` says what differs: a file missing, added, of another size or of other
content, or a manifest that is itself unreadable (a damaged file like any other). File digests
are remembered per process (`core.digests.file_sha256`), so a folder checked twice in one command
is read once.

A folder built before manifests existed has none: `verify_or_record` checks what can still be
checked (complete safetensors files, `core.atomic.folder_problem`), records the manifest from the
files as they are, says so once on stderr, and verifies the folder from then on.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

from core import atomic, sealed
from core.digests import file_sha256

MANIFEST = "digests.json"
VERSION = 1


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
    """Write `folder/digests.json` (atomically): {"version", "files": {name: {"bytes", "sha256"}}}, sealed."""
    folder = Path(folder)
    files = {name: {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
             for name, path in listed_files(folder).items()}
    return atomic.write_json(folder / MANIFEST, sealed.seal({"version": VERSION, "files": files}),
                             indent=1, sort_keys=True)


def has_manifest(folder: str | os.PathLike) -> bool:
    return (Path(folder) / MANIFEST).exists()


def _recorded(folder: Path) -> tuple[dict | None, str | None]:
    """The manifest's {name: {"bytes", "sha256"}}, or (None, why it is unusable)."""
    path = folder / MANIFEST
    checked = sealed.read_checked(path)
    files = (checked.doc or {}).get("files")
    shape_ok = isinstance(files, dict) and all(
        isinstance(v, dict) and isinstance(v.get("bytes"), int) and isinstance(v.get("sha256"), str)
        for v in files.values())
    if checked.problem or not shape_ok or (checked.doc or {}).get("version") != VERSION:
        return None, f"{path}: digest manifest unreadable ({checked.problem or 'not a manifest of this version'})"
    return files, None


def verify(folder: str | os.PathLike) -> str | None:
    """None when every file matches the folder's manifest, else one line naming the first file
    and what differs. Sizes are compared for every file before any content is hashed."""
    folder = Path(folder)
    recorded, problem = _recorded(folder)
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
        digest = file_sha256(present[name])
        if digest != recorded[name]["sha256"]:
            return (f"{folder / name}: content differs from {MANIFEST} (sha256 {digest[:12]}, "
                    f"recorded {recorded[name]['sha256'][:12]}), size unchanged")
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
