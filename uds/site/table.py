"""The leaderboard of `uds report`: every result about one model merged into one row.

A model's identity is its short name with the tiny world kept apart. A checkpoint spec (what `uds
score` and `uds metrics` record) is shortened to its last component: `tiny:smol/npo_x` is world
`tiny:smol`, name `npo_x`; a hub ID or folder path has no world. Names in leaderboard rows and build
manifests are model names already and are taken whole. So `tiny:smol/npo_x` is the `npo_x` of a
results.json, a build manifest or an Open-Unlearning run, but not `tiny:test/npo_x`. A name without
a world joins the one model of that name that has a world; where several worlds have it, it stays
a row of its own.

Which value a cell shows is a stated rule (PRECEDENCE, said on the page): sources are taken by
kind (`uds score` runs with per-layer data, score summaries, `uds metrics` files, Open-Unlearning
summaries, leaderboard rows, build manifests), and among sources of one kind by the order of the
paths given to `--results`, then the shallowest path below it (a canonical result folder before a
rebuild nested in it), then A to Z; a value shown is the first source's that has it. A key on
which sources differ at the printed precision (and by at least half a unit of the last printed
digit) is kept with each source's value and the spread; smaller disagreements are counted, not
flagged. The reference's published table (`kind` "published") is kept apart: its values are the
row only for a model no other source has, else a comparison beside ours. The records then go
through `uds_leaderboard.rows.leaderboard_rows`, the function `uds leaderboard` uses: the
same aggregates (spec §6.1) and the same default order.

Each model belongs to one population: the references (full, retain), the unlearned models, the
P/N pool members of a meta-evaluation zoo, the base model. The leaderboard shows the first two by
default and ranks a model within its own population.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from uds_leaderboard.inputs import describe
from uds_leaderboard.rows import REFERENCES, display_number, leaderboard_rows
from uds.site.columns import format_of
from uds.site.model import Results, RowsFile, ScoreRun

ID_KEYS = {"model", "method", "name", "epoch", "epoch_group", "idx", "is_reference", "kind", "seed"}
BUILD_TRAIN_KEYS = ("lr", "epochs", "batch_size")
KINDS = ("score", "metrics", "ou", "leaderboard", "build", "published")
PRECEDENCE = ("A cell shows the first source that has the value, taken in this order: uds score runs with "
              "per-layer data, score summaries, uds metrics files, Open-Unlearning summaries, leaderboard rows, "
              "build manifests; among sources of one kind, the path given first to --results, then the "
              "shallowest folder below it (a canonical result folder before a rebuild nested in it), then A to Z.")
POPULATIONS = ("reference", "unlearned", "pool", "base")
# the leaderboard's published comparison: these values of the reference's table beside ours
PUBLISHED_KEYS = ("uds", "mem", "privacy", "utility_rel", "overall")


@dataclass
class Source:
    """One file's values for one model. `values`: key -> finite float."""
    kind: str                      # KINDS
    path: str
    spec: str                      # the model's name as this file gives it
    values: dict[str, float]
    method: str | None = None      # as the file states it (leaderboard rows, build manifests)
    epoch: object = None
    run: ScoreRun | None = None
    ci: list[float] | None = None


def number(value: object) -> float | None:
    """A finite float, else None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def identity(name: str, is_spec: bool = True) -> tuple[str | None, str]:
    """(world, short name): `tiny:smol/npo_x` -> ("tiny:smol", "npo_x"), `tiny:npo_x` -> ("tiny:small",
    "npo_x") (docs/design.md: preset small); a spec `org/name` or a folder path -> (None, its last
    component); a model name that is not a spec -> (None, the name)."""
    text = name.strip()
    m = re.match(r"^tiny:(?:([^/]+)/)?(.+)$", text)
    if m:
        return f"tiny:{m.group(1) or 'small'}", m.group(2).rstrip("/")
    if not is_spec:
        return None, text
    return None, text.rstrip("/").split("/")[-1] or text


def numeric(record: dict) -> dict[str, float]:
    """The finite numeric fields of a record that are values, not identity."""
    return {str(k): v for k, v in ((k, number(x)) for k, x in record.items()) if v is not None and k not in ID_KEYS}


def build_source(row: dict, path: str) -> Source:
    """A build manifest's entry: its training columns, and a method from its kind."""
    train = row.get("train") if isinstance(row.get("train"), dict) else {}
    hparams = row.get("hparams") if isinstance(row.get("hparams"), dict) else {}
    values = numeric({k: train.get(k) for k in BUILD_TRAIN_KEYS} | hparams
                     | {"train_seconds": row.get("train_seconds")})
    kind = row.get("kind")
    method = {"unlearned": row.get("method"), "full": "full", "retain": "retain", "base": "base",
              "pool": f"pool {hparams.get('pool', '')}".strip()}.get(kind, row.get("method"))
    return Source("build", path, str(row.get("name")), values, method if isinstance(method, str) else None)


def table_sources(table: RowsFile) -> list[Source]:
    if table.kind == "build":
        return [build_source(r, str(table.source)) for r in table.rows]
    return [Source(table.kind, str(table.source), str(r["model"]), numeric(r),
                   r.get("method") if isinstance(r.get("method"), str) else None, r.get("epoch")) for r in table.rows]


def place(path: Path, roots: list[Path]) -> tuple[int, int, str]:
    """Where a file stands in the precedence within its kind: (index of the first given path that
    holds it, its depth below that path, the path itself for A to Z)."""
    for i, root in enumerate(roots):
        try:
            return i, len(path.relative_to(root).parts), str(path)
        except ValueError:
            continue
    return len(roots), len(path.parts), str(path)


def sources_of(results: Results) -> list[Source]:
    """Every source in precedence order (PRECEDENCE)."""
    roots = results.roots
    out = []
    for run in sorted(results.scores, key=lambda r: (not r.examples, place(r.source, roots))):
        s = run.summary
        ci = s.get("ci95")
        ci = [number(ci[0]), number(ci[1])] if isinstance(ci, list) and len(ci) == 2 else None
        values = numeric({"uds": s.get("uds"), "n_scored": s.get("n_scored")})
        ci = ci if ci and None not in ci else None
        out.append(Source("score", str(run.source), run.name, values, run=run, ci=ci))
    metrics = sorted(results.metrics, key=lambda m: (m.kind != "metrics", place(m.source, roots)))
    out += [Source(m.kind, str(m.source), m.name, numeric(m.metrics)) for m in metrics]
    order = ("leaderboard", "build", "published")
    for t in sorted(results.tables, key=lambda t: (order.index(t.kind), place(t.source, roots))):
        out += table_sources(t)
    return out


def group_sources(sources: list[Source]) -> list[tuple[str | None, str, list[Source]]]:
    """(world, short name, its sources in precedence order) per model, in order of first source."""
    by_short: dict[str, dict[str | None, list[int]]] = {}
    for i, s in enumerate(sources):
        world, short = identity(s.spec, s.kind in ("score", "metrics"))
        by_short.setdefault(short, {}).setdefault(world, []).append(i)
    out = []
    for short, worlds in by_short.items():
        named = [w for w in worlds if w is not None]
        if len(named) == 1 and None in worlds:
            worlds = {named[0]: sorted(worlds[named[0]] + worlds[None])}
        out += [(w, short, idx) for w, idx in worlds.items()]
    return [(w, short, [sources[i] for i in idx]) for w, short, idx in sorted(out, key=lambda m: m[2][0])]


def printed(key: str, value: float) -> str:
    """A value as the page prints it in its column (the rule of uds/site/assets/app.js fmtCol)."""
    fmt = format_of(key)
    if fmt.startswith("f"):
        return display_number(value, int(fmt[1:])) or ""
    if fmt == "int":
        return str(round(value))
    return repr(value)


def half_unit(key: str) -> float:
    """Half a unit of the last printed digit of a column: the smallest spread flagged."""
    fmt = format_of(key)
    if fmt.startswith("f"):
        return 0.5 * 10.0 ** -int(fmt[1:])
    return 0.5 if fmt == "int" else 0.0


def differences(srcs: list[Source]) -> tuple[dict[str, dict], dict[str, float]]:
    """(flagged, below): keys on which sources disagree where it shows: the values print differently
    in the key's column and the spread is at least half a unit of the last printed digit; each with
    every source's value, its printed text and the spread. `below`: key -> spread of the keys that
    differ beyond float noise (1e-9 relative) but not where it shows. Published sources are a
    comparison, not a run: left out."""
    flagged, below = {}, {}
    srcs_in = [(i, s) for i, s in enumerate(srcs) if s.kind != "published"]
    for key in dict.fromkeys(k for _, s in srcs_in for k in s.values):
        vals = [[i, s.values[key]] for i, s in srcs_in if key in s.values]
        if len(vals) < 2:
            continue
        lo, hi = min(v for _, v in vals), max(v for _, v in vals)
        if math.isclose(lo, hi, rel_tol=1e-9, abs_tol=1e-12):
            continue
        texts = [printed(key, v) for _, v in vals]
        if len(set(texts)) > 1 and hi - lo >= half_unit(key) * (1 - 1e-9):
            flagged[key] = {"spread": hi - lo, "values": vals, "printed": texts,
                            "printed_spread": printed(key, hi - lo)}
        else:
            below[key] = hi - lo
    return flagged, below


def population_of(method: str | None, member_kind: str | None) -> str:
    """The model's population (POPULATIONS): references by method, pool members by their method
    ("pool P") or by a meta-evaluation's member list, the base model by method; the rest unlearned."""
    if method in REFERENCES:
        return "reference"
    if method == "base" or member_kind == "base":
        return "base"
    if (method or "").startswith("pool") or member_kind == "pool":
        return "pool"
    return "unlearned"


@dataclass
class Model:
    """One merged row before aggregation."""
    name: str                      # shown; unique
    world: str | None
    short: str
    sources: list[Source]
    cells: dict[str, float] = field(default_factory=dict)
    ci: list[float] | None = None
    method: str | None = None
    epoch: object = None
    published: dict[str, float] = field(default_factory=dict)    # the reference's values beside ours
    population: str = "unlearned"


def merged(world: str | None, short: str, name: str, srcs: list[Source]) -> Model:
    m = Model(name, world, short, srcs)
    ours = [s for s in srcs if s.kind != "published"]
    for s in ours or srcs:
        for k, v in s.values.items():
            if k not in m.cells:
                m.cells[k] = v
                if k == "uds" and s.kind == "score":
                    m.ci = s.ci
    if ours:
        pub = next((s for s in srcs if s.kind == "published"), None)
        m.published = dict(pub.values) if pub else {}
    guess_method, guess_epoch = describe(short)
    m.method = next((s.method for s in srcs if s.kind != "build" and s.method), None) \
        or next((s.method for s in srcs if s.method), None) or guess_method
    m.epoch = next((s.epoch for s in srcs if s.kind == "leaderboard" and s.epoch is not None), None) or guess_epoch
    return m


def display_names(groups: list[tuple[str | None, str, list[Source]]]) -> list[str]:
    """The short name, or world/short where two models share a short name."""
    count: dict[str, int] = {}
    for _, short, _ in groups:
        count[short] = count.get(short, 0) + 1
    return [short if count[short] == 1 or world is None else f"{world}/{short}" for world, short, _ in groups]


def full_utility_of(results: Results, only_published: bool) -> dict[str, float]:
    """U_full per epoch group stated by a file (the first file's value wins); the published table's
    only where it is all there is (ours come from our own full model)."""
    out: dict[str, float] = {}
    for t in results.tables:
        if t.kind != "published" or only_published:
            for k, v in t.full_utility.items():
                out.setdefault(k, v)
    return out


def member_kinds(results: Results) -> dict[str, str]:
    """Model name -> its kind in a meta-evaluation's member list (the first that names it)."""
    out: dict[str, str] = {}
    for meta in results.meta:
        members = meta.doc.get("members")
        for name, m in (members.items() if isinstance(members, dict) else ()):
            if isinstance(m, dict) and isinstance(m.get("kind"), str):
                out.setdefault(str(name), m["kind"])
    return out


def merge_models(results: Results) -> list[tuple[Model, dict]]:
    """(model, its benchmark row) per model, in the leaderboard's default order."""
    sources = sources_of(results)
    groups = group_sources(sources)
    models = [merged(w, short, name, srcs) for (w, short, srcs), name in zip(groups, display_names(groups))]
    kinds = member_kinds(results)
    for m in models:
        m.population = population_of(m.method, kinds.get(m.short))
    only_published = all(s.kind == "published" for s in sources)
    records = [{"model": m.name, "method": m.method, "epoch": m.epoch, **m.cells} for m in models]
    rows = leaderboard_rows(records, full_utility_of(results, only_published))
    by_name = {m.name: m for m in models}
    return [(by_name[r["model"]], r) for r in rows]
