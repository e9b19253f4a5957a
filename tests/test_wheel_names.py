"""The wheel's installed import names: the layout's seven top-level packages and nothing generic beside
them; the docs' table generators stay in the checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYOUT = {"uds", "uds_core", "checkpoints", "metrics", "meta_eval", "uds_analyses", "uds_leaderboard"}


def _source_copy(dest: Path) -> Path:
    """The build inputs and every top-level folder that is an importable package (tests and
    benchmarks included, so that the wheel's package filter is what keeps them out), copied so
    that the build writes nothing into the checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy2(ROOT / name, dest / name)
    for folder in ROOT.iterdir():
        if folder.is_dir() and not folder.name.startswith(".") and (folder / "__init__.py").is_file():
            shutil.copytree(folder, dest / folder.name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_the_wheel_installs_the_layouts_packages_only(tmp_path):
    src = _source_copy(tmp_path / "src")
    assert {"tests"} <= {p.name for p in src.iterdir()}            # a package the filter must leave out
    # --no-build-isolation: the venv's setuptools builds it offline
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = zipfile.ZipFile(next((tmp_path / "dist").glob("uds-*.whl"))).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == LAYOUT
    assert not [n for n in names if n.startswith("uds_analyses/doc_tables/")]
    assert [n for n in names if n.startswith("uds/ou/configs/") and n.endswith(".yaml")]
