"""Where the toolkit keeps what it builds and caches."""

from __future__ import annotations

import os
import re
from pathlib import Path


def safe_name(text: str) -> str:
    """`text` with every run of characters other than word characters, `.` and `-` replaced by `_`:
    the one rule that turns a spec, a label or a zoo tag into a file or folder name."""
    return re.sub(r"[^\w.-]+", "_", text)


def uds_home() -> Path:
    """Root of caches and the tiny world: `$UDS_HOME`, default `~/.cache/uds`."""
    env = os.environ.get("UDS_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "uds"


def world_dir(preset: str, seed: int) -> Path:
    """Folder of one built tiny world: `$UDS_HOME/world/<preset>-<seed>/`."""
    return uds_home() / "world" / f"{preset}-{seed}"


def s1_cache_dir() -> Path:
    return uds_home() / "s1_cache"


# Data files shipped inside the wheel: setup.py's build step copies them into the built package
# when the build has them at hand ($UDS_TOFU_DIR); the source tree keeps none.
PACKAGE_DATA = Path(__file__).resolve().parent / "package_data"
ANNOTATED_FORGET10 = "forget10_annotated.json"


def packaged_file(name: str) -> Path | None:
    """A data file shipped in the installed package, or None when this install has none."""
    path = PACKAGE_DATA / name
    return path if path.is_file() else None
