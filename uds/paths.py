"""Where the toolkit keeps what it builds and caches."""

from __future__ import annotations

import os
from pathlib import Path


def uds_home() -> Path:
    """Root of caches and the tiny world: `$UDS_HOME`, default `~/.cache/uds`."""
    env = os.environ.get("UDS_HOME")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "uds"


def world_dir(preset: str, seed: int) -> Path:
    """Folder of one built tiny world: `$UDS_HOME/world/<preset>-<seed>/`."""
    return uds_home() / "world" / f"{preset}-{seed}"


def s1_cache_dir() -> Path:
    return uds_home() / "s1_cache"
