"""Shared fixtures: one `test`-preset tiny world, built once and kept between runs.

The world lives under `<repo>/.uds_home/tests` (git-ignored), so a second test run reuses it;
a fresh clone builds it once (about a minute on 2 cores).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.external import TOFU_DIR, TOFU_SKIP  # noqa: F401  (sets the data variables first)

REPO = Path(__file__).resolve().parents[1]
TEST_HOME = REPO / ".uds_home" / "tests"

os.environ.setdefault("UDS_HOME", str(TEST_HOME))
# The suite never asks the network (the Hub's part of the data lookup is tested on loopback):
# offline, a missing file fails at once instead of after huggingface_hub's retries.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The real SmolLM2 GGUF, converted once per session (defined here so every module shares one).
from tests.gguf_fixtures import fresh_gguf_home, gguf_home, smol_converted  # noqa: E402,F401


@pytest.fixture(scope="session")
def test_world() -> Path:
    """Folder of the built `test` preset (base, full, retain)."""
    from checkpoints.world.build import build_world

    return build_world("test", 0, progress=False, names=["base", "full", "retain"])


@pytest.fixture(scope="session")
def tofu_dir() -> Path:
    if not (TOFU_DIR / "forget10.json").is_file():
        pytest.skip(TOFU_SKIP)
    return TOFU_DIR


@pytest.fixture
def uds(monkeypatch, capsys):
    """The command line in-process and offline: `uds(*args, env={...})` returns a
    CompletedProcess-like (args, exit status, stdout, stderr)."""
    import subprocess

    from uds.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        for k, v in (env or {}).items():
            monkeypatch.setenv(k, v)
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)
    return run
