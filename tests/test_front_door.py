"""The README as a front door and the docs as a house: the README's Python example run as written on
the `test` world (its UDS recomputed from the per-layer deltas it returns, and the retain/full
identities of spec §2.5 through the same function), the main command's expected range from the
committed builds read here with json, the docs index and the README's table covering every page,
their links resolving, and every `spec §N.M` / `spec-probes §N.M` in the repository naming a
section the in-repository spec has (no reference to a spec outside the repository)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from uds_analyses.doc_tables.blocks import doc_body
from uds_analyses.doc_tables.registry import BLOCKS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BY_NAME = {b.name: b for b in BLOCKS}
TAU = 0.05   # spec §2.5
SKIP_DIRS = {".venv", ".uds_home", ".git", "node_modules", "__pycache__", "uds_out"}
# the pages that explain where CI checks out the outside inputs (they name the folder beside the clone)
SHARED_ALLOWED = {"docs/testing.md", ".ci/run", ".ci/run-slow", "tests/external.py", "tests/test_front_door.py"}


def _python_example() -> str:
    section = README.read_text().split("## From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _uds_by_hand(examples: list[dict]) -> float:
    """spec §2.5 from the returned deltas: KE layers Δ_S1 > τ, S1-weighted clipped ratios, the mean
    over examples with a KE layer."""
    values = []
    for ex in examples:
        if ex["s1_delta"] is None:
            continue
        ke = [l for l, d in enumerate(ex["s1_delta"]) if d > TAU]
        assert ke == ex["ke_layers"]
        if not ke:
            assert ex["uds"] is None
            continue
        d1 = [ex["s1_delta"][l] for l in ke]
        d2 = [ex["s2_delta"][l] for l in ke]
        value = sum(a * min(max(b / a, 0.0), 1.0) for a, b in zip(d1, d2)) / sum(d1)
        assert ex["uds"] == pytest.approx(value, abs=1e-9)
        values.append(value)
    return sum(values) / len(values)


def test_readme_python_example_runs_as_written(test_world, capsys):
    code = _python_example()
    assert "uds.score(" in code and "tiny:test/" in code
    scope: dict = {}
    exec(compile(code, "README.md", "exec"), scope)   # the README's lines, unchanged
    run = scope["run"]
    out = capsys.readouterr().out
    assert f"UDS {run.uds:.3f}" in out and f"{run.n_scored} of {run.n_examples} examples scored" in out
    assert 0.0 <= run.uds <= 1.0 and run.n_scored >= 1
    assert run.uds == pytest.approx(_uds_by_hand(run.examples), abs=1e-9)
    assert run.ci95[0] <= run.uds <= run.ci95[1]
    assert (run.summary["full"], run.summary["retain"]) == ("tiny:test/full", "tiny:test/retain")   # defaulted


def test_score_identities_and_files(test_world, tmp_path):
    import uds

    retain = uds.score("tiny:test/retain", out=tmp_path / "retain")
    assert retain.uds == 1.0 and all(ex["uds"] in (None, 1.0) for ex in retain.examples)
    assert uds.score("tiny:test/full").uds == 0.0
    written = json.loads((tmp_path / "retain" / "summary.json").read_text())
    assert written["uds"] == 1.0 and written["n_scored"] == retain.n_scored
    assert {p.name for p in (tmp_path / "retain").iterdir()} >= {"summary.json", "examples.jsonl", "layers.csv",
                                                                 "layers.png"}


def test_score_bad_input_is_an_input_error():
    import uds
    from uds_core.errors import UdsInputError

    with pytest.raises(UdsInputError):
        uds.score("tiny:test/full", tau=-1.0)
    with pytest.raises(UdsInputError):
        uds.score("tiny:test/full", parity="open-unlearning")


def test_main_command_range_from_the_committed_builds():
    """Read with json here: the printed line of the shown summary, and the expected range as the
    lowest and highest UDS of the distinct builds widened outwards to 3 decimals."""
    manifest = json.loads((ROOT / "results/reproduce/main_command.json").read_text())
    shown = json.loads((ROOT / manifest["shown"]).read_text())
    body = doc_body(BY_NAME["main-readme"], ROOT)
    lo_ci, hi_ci = shown["ci95"]
    assert (f"UDS = {shown['uds']:.6f} ({shown['n_scored']} of {shown['n_examples']} examples scored; "
            f"95% CI [{lo_ci:.4f}, {hi_ci:.4f}])") in body
    values, prints = [], set()
    for entry in manifest["builds"]:
        d = json.loads((ROOT / entry["file"]).read_text())
        if "model" not in entry:
            value, fp = d["uds"], d["fingerprints"]["unlearned"]
        elif isinstance(d, list):
            value, fp = next(r["uds"] for r in d if r["model"] == entry["model"]), None
        else:
            value, fp = d["models"][entry["model"]]["uds"], d["models"][entry["model"]]["fingerprint"]
        if fp is None or fp not in prints:
            values.append(value)
        prints.add(fp)
    lo, hi = re.search(r"\*\*Expect ([\d.]+) to ([\d.]+)\.\*\*", body).groups()
    assert float(lo) == math.floor(min(values) * 1000) / 1000 and float(hi) == math.ceil(max(values) * 1000) / 1000
    assert float(lo) <= min(values) and max(values) <= float(hi)
    assert f"The {len(values)} builds" in body and len(values) >= 2
    for v in values:
        assert f"{v:.6f}" in body


def test_smol_readme_tolerance_from_the_rebuild():
    body = doc_body(BY_NAME["smol-readme"], ROOT)
    first = {p.parent.name: json.loads(p.read_text())["uds"]
             for p in (ROOT / "results/smol/score").glob("*/summary.json")}
    second = {p.parent.name: json.loads(p.read_text())["uds"]
              for p in (ROOT / "results/smol/rebuild/score").glob("*/summary.json")}
    moved = [abs(first[n] - second[n]) for n in second if first[n] != second[n]]
    assert re.search(r"within ([\d.e+-]+);", body) and float(re.search(r"within ([\d.e+-]+);", body)[1]) == \
        pytest.approx(max(moved), rel=0.05)
    for name in second:
        assert f"`{name}`" in body.split("Tolerance", 1)[1]


def _pages() -> set[str]:
    return {p.name for p in (ROOT / "docs").glob("*.md") if p.name != "README.md"}


def test_docs_index_and_readme_table_list_every_page():
    index = (ROOT / "docs/README.md").read_text()
    table = README.read_text().split("## Documentation", 1)[1].split("\n## ", 1)[0]
    for page in sorted(_pages()):
        assert f"]({page}" in index, f"docs/{page} is missing from docs/README.md's index"
        assert f"](docs/{page})" in table, f"docs/{page} is missing from the README's table of docs pages"


def test_readme_is_a_front_door():
    text = README.read_text()
    lines = text.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move long sections to docs/"
    assert lines[3].startswith("bash setup.sh && .venv/bin/uds score --unlearned tiny:small/rmu_lr1e-4_l5_s10_ep10")
    assert lines[4].startswith("bash setup.sh && .venv/bin/python -m pytest -q")


@pytest.mark.parametrize("doc", ["README.md", "docs/README.md", "docs/design.md", "docs/results.md",
                                 "docs/usage.md", "docs/tiny_world.md", "docs/spec.md", "docs/spec-probes.md"])
def test_links_resolve(doc):
    path = ROOT / doc
    for target in re.findall(r"\]\(([^)\s]+)\)", path.read_text()):
        if target.startswith(("http://", "https://", "#")):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve()
        assert dest.exists(), f"{doc}: link to {target}"
        if anchor and dest.name in ("spec.md", "spec-probes.md"):
            assert f'<a id="{anchor}"></a>' in dest.read_text(), f"{doc}: no anchor {target}"


def _text_files():
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if SKIP_DIRS & set(rel.parts) or not path.is_file():
            continue
        if path.suffix in {".py", ".md", ".sh", ".js", ".html", ".yaml", ".toml"} or str(rel) in (".ci/run",
                                                                                                   ".ci/run-slow"):
            yield str(rel), path.read_text(errors="replace")


def test_spec_references_name_sections_of_the_in_repository_spec():
    anchors = {page: set(re.findall(r'<a id="([\d.]+)"></a>', (ROOT / f"docs/{page}.md").read_text()))
               for page in ("spec", "spec-probes")}
    assert {"0", "2.5", "5.7", "6.1", "12"} <= anchors["spec"] and {"1.2", "2.4", "3.8"} <= anchors["spec-probes"]
    bad, outside = [], []
    for rel, text in _text_files():
        for n, line in enumerate(text.splitlines(), 1):
            for page, sec in re.findall(r"\b(spec|spec-probes) §(\d+(?:\.\d+)*)", line):
                if sec not in anchors[page]:
                    bad.append(f"{rel}:{n}: {page} §{sec}")
            if re.search(r"\bSPEC(?:-probes)?\.md\b|\bSPEC(?:-probes)? \d|\bDESIGN\.md\b", line):
                outside.append(f"{rel}:{n}: {line.strip()[:100]}")
            if "../shared" in line and rel not in SHARED_ALLOWED:
                outside.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not bad, "references to sections the spec lacks:\n" + "\n".join(bad)
    assert not outside, ("references to a spec outside the repository (cite docs/spec.md as `spec §N.M`, "
                         "docs/design.md by path):\n" + "\n".join(outside))
