"""The import structure: layers without cycles (docs/design.md, Layers).

Layers, lowest first: `uds_core` (the foundation: engine, hooks, loading, prompts; imports nothing of
the project) <- `checkpoints` (spec resolution, the registry of real checkpoints, the tiny world)
<- `metrics` (the metric families, the registry, the evaluation session) <- `uds_analyses` and
`meta_eval` (two wings side by side that do not import each other) <- `uds_leaderboard` (the
leaderboards, on the benchmark aggregation) <- `uds` (the front door: the command line, the commands,
the Open-Unlearning plug-in, the device and executor flags). A module
imports only from its own package or lower layers, nothing imports a command module but the
command line, and no set of modules imports itself in a cycle. Every import statement counts:
top-level, inside functions and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("uds_core", "checkpoints", "metrics", "uds_analyses", "meta_eval", "uds_leaderboard", "uds")
COMMANDS = ("uds.cli", "uds.__main__", "uds.commands")
LAYERS = {"uds_core": 0, "checkpoints": 1, "metrics": 2, "uds_analyses": 3, "meta_eval": 3, "uds_leaderboard": 4,
          "uds": 5}
TOP = 5


def module_files(root: Path = REPO) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the four packages under `root`."""
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `module` imports anywhere in its file (a `from X import Y` of a
    submodule Y counts as importing X.Y)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node)
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        found |= {n for n in names if n in known and n != module}
    return found


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    files = module_files(root)
    known = set(files)
    return {m: imports_of(m, p, known) for m, p in files.items()}


def _within(module: str, roots: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def package(module: str) -> str:
    return module.split(".")[0]


def layer(module: str) -> int:
    return LAYERS[package(module)]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            if _within(d, COMMANDS) and m != "uds.__main__":
                bad.append(f"{m} imports the command module {d}")
            elif layer(d) > layer(m):
                bad.append(f"{m} (layer {layer(m)}) imports {d} (layer {layer(d)})")
            elif layer(d) == layer(m) and package(d) != package(m):
                bad.append(f"{m} imports {d}, a module of the other wing of layer {layer(m)}")
    return bad


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_layers_are_respected():
    assert layer_violations(import_graph()) == []


def test_the_checks_fail_on_a_planted_cycle(tmp_path):
    """A copy of the tree with one lazy import added that closes a cycle (engine -> commands.score
    -> engine) is caught by both checks: the checks can fail."""
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            target = tmp_path / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    engine = tmp_path / "uds_core" / "engine.py"
    engine.write_text(engine.read_text() + "\n\ndef _planted():\n    from uds.commands import score  # noqa\n")
    graph = import_graph(tmp_path)
    assert any({"uds_core.engine", "uds.commands.score"} <= set(c) for c in cycles(graph))
    assert "uds_core.engine imports the command module uds.commands.score" in layer_violations(graph)


def _copy_tree(root: Path) -> None:
    for package_name in PACKAGES:
        for path in (REPO / package_name).rglob("*.py"):
            target = root / path.relative_to(REPO)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())


def test_the_checks_fail_on_an_upward_and_a_sideways_import(tmp_path):
    """Planted in a copy: the foundation importing the checkpoints layer, and one wing importing
    the other; each is reported."""
    _copy_tree(tmp_path)
    loading = tmp_path / "uds_core" / "loading.py"
    loading.write_text(loading.read_text() + "\n\ndef _up():\n    from checkpoints import specs  # noqa\n")
    grid = tmp_path / "uds_analyses" / "capacity" / "grid.py"
    grid.write_text(grid.read_text() + "\n\ndef _side():\n    from meta_eval import store  # noqa\n")
    bad = layer_violations(import_graph(tmp_path))
    assert "uds_core.loading (layer 0) imports checkpoints.specs (layer 1)" in bad
    assert "uds_analyses.capacity.grid imports meta_eval.store, a module of the other wing of layer 3" in bad


def test_the_foundation_imports_nothing_of_the_project():
    graph = import_graph()
    outside = {m: sorted(d for d in deps if package(d) != "uds_core")
               for m, deps in graph.items() if package(m) == "uds_core"}
    assert {m: d for m, d in outside.items() if d} == {}


@pytest.mark.parametrize("module, expected", [("uds_core.engine", 0), ("checkpoints.world.build", 1),
                                              ("metrics.registry", 2), ("meta_eval.measure", 3),
                                              ("uds_leaderboard.rows", 4),
                                              ("uds.commands.score", TOP), ("uds.cli", TOP),
                                              ("uds.ou.handlers", TOP)])
def test_layer_of(module, expected):
    assert layer(module) == expected
