"""The toolkit and its extras install into Open-Unlearning's environment without moving its pins."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10
    tomllib = pytest.importorskip("tomli")

from tests.external import OU_SKIP, OU_SOURCE

REPO = Path(__file__).resolve().parents[1]
OU_REQUIREMENTS = OU_SOURCE / "requirements.txt"
EXTRAS = ("quant", "test", "ou")
# deepspeed ships only an sdist whose build imports torch: a resolver cannot read its metadata
# without building it, and no requirement of ours names it
UNRESOLVABLE = {"deepspeed"}


def ou_pins() -> dict[str, Version]:
    if not OU_REQUIREMENTS.is_file():
        pytest.skip(OU_SKIP)
    pins = {}
    for line in OU_REQUIREMENTS.read_text().splitlines():
        req = line.split("#")[0].strip()
        if "==" in req:
            name, version = req.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def our_requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in EXTRAS:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


def test_every_requirement_accepts_the_version_open_unlearning_pins():
    pins = ou_pins()
    assert pins[canonicalize_name("accelerate")] == Version("0.34.2")   # the pin the issue was about
    checked = []
    for req in our_requirements():
        pinned = pins.get(canonicalize_name(req.name))
        if pinned is not None:
            assert req.specifier.contains(pinned, prereleases=True), f"{req} rejects OU's {req.name}=={pinned}"
            checked.append(req.name)
    assert {"torch", "transformers", "accelerate", "bitsandbytes", "hydra-core"} <= set(checked)


@pytest.mark.slow
def test_pip_resolves_open_unlearnings_pins_plus_the_toolkit(tmp_path):
    """pip's own resolver (dry run, no install) over OU's pinned set plus `.[quant,test,ou]`: every
    pin comes out unchanged. Needs the package index (about 5 minutes here)."""
    pins = ou_pins()
    reqs = tmp_path / "ou_pins.txt"
    reqs.write_text("".join(f"{n}=={v}\n" for n, v in pins.items() if n not in UNRESOLVABLE))
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                           "--report", str(report), "-r", str(reqs), f".[{','.join(EXTRAS)}]"],
                          cwd=REPO, capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0 and ("NewConnectionError" in proc.stderr or "No matching distribution" in proc.stderr):
        pytest.skip("package index not reachable")
    assert proc.returncode == 0, proc.stderr[-2000:]
    resolved = {canonicalize_name(i["metadata"]["name"]): Version(i["metadata"]["version"])
                for i in json.loads(report.read_text())["install"]}
    moved = {n: (str(v), str(resolved.get(n))) for n, v in pins.items()
             if n not in UNRESOLVABLE and resolved.get(n) != v}
    assert moved == {}
    assert canonicalize_name("uds") in resolved
