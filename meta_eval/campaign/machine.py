"""The machine a campaign file was made on, as the file records it."""

from __future__ import annotations

import platform
from pathlib import Path

import torch


def _cpuinfo_field(name: str) -> str | None:
    """The first value of `name` in /proc/cpuinfo (Linux), else None."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":", 1)[0].strip() == name:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_name() -> str:
    """The CPU's model name (Linux), else the architecture."""
    return _cpuinfo_field("model name") or platform.processor() or platform.machine()


def cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux; empty elsewhere)."""
    return set((_cpuinfo_field("flags") or "").split())


def machine() -> dict:
    return {"cpu": cpu_name(), "platform": platform.platform(), "torch": torch.__version__,
            "threads": torch.get_num_threads()}
