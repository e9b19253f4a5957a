"""Which code made a result: the digest of a module closure's source, and the git commit.

`code_digest(entries)` follows the import statements (every `import` / `from ... import`, also the
ones inside functions) from the entry modules through the project's own packages and hashes the
syntax tree of every module reached, without docstrings: a comment, a docstring or a reformatting
leaves it unchanged; any change to what the code does changes it. Nothing is imported or executed:
the files are parsed, so a digest can be taken of code that cannot be run here.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parents[1]   # the folder holding the project's top-level packages
PROJECT = ("uds_core", "checkpoints", "metrics", "meta_eval", "uds_analyses", "uds_leaderboard", "uds")


def module_path(module: str, root: Path = ROOT) -> Path | None:
    """The source file of `module` under `root` (a package: its __init__.py); None if there is none."""
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package_modules(package: str, root: Path) -> list[str]:
    """`package.*`: every module of a package folder, its subpackages too (dynamic imports)."""
    folder = root.joinpath(*package.split("."))
    return sorted(".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
                  for p in folder.rglob("*.py"))


def imported_names(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Every dotted name an import statement of `tree` may load (a `from a import b` gives `a` and
    `a.b`, since b may be a module); relative imports resolved against `module`."""
    package = module if is_package else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{alias.name}" for alias in node.names}
    return out


def closure(entries: Iterable[str], *, packages: Iterable[str] = PROJECT, exclude: Iterable[str] = (),
            root: Path = ROOT) -> dict[str, Path]:
    """Module name -> source file of the entry modules and every module of `packages` they reach
    by imports (parents of a module included: importing `a.b` runs `a/__init__.py`). An entry
    `pkg.*` stands for every module of the package. `exclude`: modules neither hashed nor followed."""
    packages, exclude = tuple(packages), set(exclude)
    todo = [m for e in entries for m in (_package_modules(e[:-2], root) if e.endswith(".*") else [e])]
    seen: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        if name in seen or name in exclude:
            continue
        path = module_path(name, root)
        if path is None:
            continue
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        names = imported_names(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py")
        todo += [n for n in names if n.split(".")[0] in packages]
    return dict(sorted(seen.items()))


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def source_digest(source: str) -> str:
    """sha256 of a module's syntax tree without docstrings (comments and layout do not count)."""
    tree = _strip_docstrings(ast.parse(source))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def code_digest(entries: Iterable[str], *, packages: Iterable[str] = PROJECT, exclude: Iterable[str] = (),
                root: Path = ROOT) -> str:
    """A 20-hex digest of the code `closure(entries, ...)` reaches: its module names and their
    `source_digest`s."""
    return _cached(tuple(entries), tuple(packages), tuple(sorted(exclude)), Path(root))


@lru_cache(maxsize=None)
def _cached(entries: tuple[str, ...], packages: tuple[str, ...], exclude: tuple[str, ...], root: Path) -> str:
    mods = closure(entries, packages=packages, exclude=exclude, root=root)
    h = hashlib.sha256()
    for name, path in mods.items():
        h.update(f"{name}\0{source_digest(path.read_text(encoding='utf-8'))}\n".encode())
    return h.hexdigest()[:20]


def clear_cache() -> None:
    """Forget the digests taken so far (tests that edit source files)."""
    _cached.cache_clear()


def code_commit(root: Path = ROOT) -> dict:
    """{"commit": HEAD's hash, "dirty": whether the project's packages differ from it} of the git
    checkout holding `root`; both None outside a checkout (an installed wheel)."""
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": None, "dirty": None}
        folders = [p for p in PROJECT if (root / p).is_dir()]
        status = git("status", "--porcelain", "--untracked-files=no", "--", *folders)
    except OSError:   # no git on this machine
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}
