"""Shared fixtures: one `test`-preset tiny world, built once and kept between runs.

The world lives under `<repo>/.uds_home/tests` (git-ignored), so a second test run reuses it;
a fresh clone builds it once (about a minute on 2 cores).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.external import TOFU_DIR, TOFU_SKIP  # imported first: sets the data variables

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


# --- the quick tier ------------------------------------------------------------------------------
# `pytest -m quick`: the tests that need no trained, converted or loaded world model, no browser and
# no outside data (pure formulas, parsing, registries, reports on small files); for the inner loop.
HEAVY_FIXTURES = frozenset({"test_world", "smol_converted", "fresh_gguf_home", "gguf_home", "zoo", "trained_zoo",
                            "tiny_world", "world", "models", "folders", "uds", "tofu_dir"})
# needing none of those, these still train a model or start fresh interpreters (seconds each)
NOT_QUICK = frozenset({
    "tests/test_progress.py::test_training_loop_logs_steps_when_stderr_is_a_file",
    "tests/test_progress.py::test_training_loop_is_silent_when_quiet",
    "tests/test_faults.py::test_a_second_world_builder_waits_for_the_first_and_reuses_its_data",
    "tests/test_cli_errors.py::test_score_command_does_not_import_the_metrics_stack",
    "tests/test_cli_errors.py::test_real_process_exits_2_without_traceback",
    "tests/test_probe_cli.py::test_real_process_malformed_line",
    "tests/test_audit_chance.py::test_published_chance_is_the_shared_datas",
    "tests/test_doc_tables.py::test_a_changed_number_in_the_doc_is_caught_and_rewritten",
    "tests/test_doc_tables.py::test_check_command_exit_codes",
    "tests/test_doc_tables.py::test_a_changed_number_in_the_file_is_caught",
    "tests/test_recipe_digests.py::test_the_measuring_code_digest_covers_the_metric_families",
    "tests/test_wheel_names.py::test_the_wheel_installs_the_layouts_packages_only",
    "tests/test_quiet.py::test_quiet_libraries_in_a_fresh_interpreter",
})


def pytest_collection_modifyitems(config, items):
    for item in items:
        heavy = HEAVY_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        if heavy or item.nodeid in NOT_QUICK or any(item.get_closest_marker(m) for m in ("slow", "browser")):
            continue
        item.add_marker(pytest.mark.quick)
    items[:] = in_file_order(items)


# --- the order files are handed to the two workers -----------------------------------------------
# xdist (`--dist loadfile --no-loadscope-reorder`) deals whole files in this order to whichever
# worker is free. A long file that builds the `test` world goes first; the GGUF files (their own
# conversion, no world) and then the quick files keep the other worker busy meanwhile, so no worker
# waits on the world's lock; the other world files follow, the long ones and then most tests first,
# so the last files dealt are short. Order only: every file's tests and fixtures are the same in any order.
FIRST = "tests/test_campaign_run.py"   # the world's build, then the longest file of the suite
# world files of few tests but long (end-to-end runs in fresh interpreters): dealt before the many-test
# files, not last, where one would keep a worker busy alone at the end
LONG = ("tests/test_faults.py", "tests/test_world_build.py", "tests/test_split_scores.py",
        "tests/test_curve_callback.py", "tests/test_faults_content.py", "tests/test_llama1b_gpu.py")
GGUF_FIXTURES = frozenset({"smol_converted", "fresh_gguf_home", "gguf_home"})


def in_file_order(items: list) -> list:
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)

    def rank(path: str) -> tuple[int, int]:
        tests = [t for t in files[path] if not t.get_closest_marker("slow")] or files[path]
        if path == FIRST:
            group = 0
        elif any(GGUF_FIXTURES.intersection(getattr(t, "fixturenames", ())) for t in tests):
            group = 1
        elif all(t.get_closest_marker("quick") for t in tests):
            group = 2
        else:
            group = 3 if path in LONG else 4
        return group, -len(tests)
    return [item for path in sorted(files, key=rank) for item in files[path]]
