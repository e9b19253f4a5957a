"""The built wheel, installed (not editable) in a fresh venv, scores with its defaults: the
annotated forget10 file ships inside it (setup.py's build step), found without UDS_TOFU_DIR and
without this checkout. Slow (builds a venv: minutes); run with `-m slow`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import TOFU_DIR as TOFU
from tests.conftest import TOFU_SKIP

REPO = Path(__file__).resolve().parents[1]
UNLEARNED = "tiny:test/npo_lr2e-4_b01_a1_ep10"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{cmd}: {proc.stderr[-2000:]}"
    return proc


def _tree_copy(dst: Path) -> None:
    """The files git would commit (tracked and untracked-but-not-ignored), tests left out."""
    listed = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO).stdout.split()
    for rel in sorted(set(listed)):
        src = REPO / rel
        if src.is_file() and not rel.startswith("tests/"):
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            (dst / rel).write_bytes(src.read_bytes())


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_scores_with_its_defaults(test_world, tmp_path):
    if not (TOFU / "forget10_annotated.json").is_file():
        pytest.skip(TOFU_SKIP)
    src, dist, venv = tmp_path / "src", tmp_path / "dist", tmp_path / "venv"
    _tree_copy(src)
    env = {k: v for k, v in os.environ.items() if k not in ("UDS_TOFU_DIR", "PYTHONPATH")}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)],
         env=env | {"UDS_TOFU_DIR": str(TOFU)})
    wheel = next(dist.glob("uds-*.whl"))
    _run([sys.executable, "-m", "venv", str(venv)])
    _run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], env=env)
    run_env = env | {"UDS_HOME": os.environ["UDS_HOME"], "HF_HUB_OFFLINE": "1"}
    where = _run([str(venv / "bin" / "python"), "-c",
                  "from checkpoints.specs import default_references; import uds; "
                  "print(default_references('some-owner/some-model')[2]); print(uds.__file__)"],
                 cwd=tmp_path, env=run_env).stdout.split()
    assert where[0].startswith(str(venv)) and where[0].endswith("uds_core/package_data/forget10_annotated.json")
    assert where[1].startswith(str(venv))                          # the installed copy, not this checkout
    assert json.loads(Path(where[0]).read_text()) == json.loads((TOFU / "forget10_annotated.json").read_text())
    # the metric families of the installed package: scanned ones and the probe's entry point
    keys = _run([str(venv / "bin" / "python"), "-c", "from metrics.registry import REGISTRY; print(*REGISTRY)"],
                cwd=tmp_path, env=run_env).stdout.split()
    assert {"es", "uds", "mem_bits", "verbatim_rate", "semantic_acc"} <= set(keys) and len(keys) == len(set(keys)) == 40
    # tiny model, its own world's defaults; then the OU-default data (the packaged TOFU file)
    out = tmp_path / "tiny"
    _run([str(venv / "bin" / "uds"), "score", "--unlearned", UNLEARNED, "--out", str(out)], cwd=tmp_path, env=run_env)
    mine = tmp_path / "here"
    _run([sys.executable, "-m", "uds", "score", "--unlearned", UNLEARNED, "--out", str(mine)], cwd=REPO)
    got, want = (json.loads((d / "summary.json").read_text()) for d in (out, mine))
    assert got["uds"] == pytest.approx(want["uds"], abs=1e-9) and got["n_scored"] == want["n_scored"]
    models = test_world / "models"
    real = tmp_path / "real_data"
    _run([str(venv / "bin" / "uds"), "score", "--unlearned", str(models / "npo_lr2e-4_b01_a1_ep10"),
          "--full", str(models / "full"), "--retain", str(models / "retain"), "--out", str(real)],
         cwd=tmp_path, env=run_env)
    summary = json.loads((real / "summary.json").read_text())
    assert summary["data"] == where[0] and summary["n_examples"] == 367
