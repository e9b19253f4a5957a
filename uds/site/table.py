"""The leaderboard of `uds report`: every result about one model merged into one row.

A model's identity is its short name with the tiny world kept apart. A checkpoint spec (what `uds
score` and `uds metrics` record) is shortened to its last component: `tiny:smol/npo_x` is world
`tiny:smol`, name `npo_x`; a hub ID or folder path has no world. Names in leaderboard rows and build
manifests are model names already and are taken whole. So `tiny:smol/npo_x` is the `npo_x` of a
results.json, a build manifest or an Open-Unlearning run, but not `tiny:test/npo_x`. A name without
a world joins the one model of that name that has a world; where several worlds have it, it stays
a row of its own.

Sources are taken in a fixed order: `uds score` runs (those with per-layer data first), `uds
metrics` files and Open-Unlearning summaries (as read), leaderboard rows, build manifests; a value
shown is the first source's that has it, and every key on which sources differ is kept with each
source's value and the spread. The records then go through
`meta_eval.leaderboard_rows.leaderboard_rows`, the function `uds leaderboard` uses: the same
aggregates (spec §6.1) and the same default order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from meta_eval.leaderboard_inputs import describe
from meta_eval.leaderboard_rows import leaderboard_rows
from uds.site.model import Results, RowsFile, ScoreRun

ID_KEYS = {"model", "method", "name", "epoch", "epoch_group", "idx", "is_reference", "kind", "seed"}
BUILD_TRAIN_KEYS = ("lr", "epochs", "batch_size")
KINDS = ("score", "metrics", "ou", "leaderboard", "build")


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
    return [Source("leaderboard", str(table.source), str(r["model"]), numeric(r),
                   r.get("method") if isinstance(r.get("method"), str) else None, r.get("epoch")) for r in table.rows]


def sources_of(results: Results) -> list[Source]:
    """Every source in precedence order (see the module docstring)."""
    runs = sorted(results.scores, key=lambda r: not r.examples)        # stable: per-layer data first
    out = []
    for run in runs:
        s = run.summary
        ci = s.get("ci95")
        ci = [number(ci[0]), number(ci[1])] if isinstance(ci, list) and len(ci) == 2 else None
        values = numeric({"uds": s.get("uds"), "n_scored": s.get("n_scored")})
        ci = ci if ci and None not in ci else None
        out.append(Source("score", str(run.source), run.name, values, run=run, ci=ci))
    out += [Source(m.kind, str(m.source), m.name, numeric(m.metrics)) for m in results.metrics]
    for t in sorted(results.tables, key=lambda t: t.kind == "build"):      # stable: leaderboards, then builds
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


def differences(srcs: list[Source]) -> dict[str, dict]:
    """Keys on which sources disagree (beyond float noise): each source's value and the spread."""
    out = {}
    for key in dict.fromkeys(k for s in srcs for k in s.values):
        vals = [[i, s.values[key]] for i, s in enumerate(srcs) if key in s.values]
        lo, hi = min(v for _, v in vals), max(v for _, v in vals)
        if len(vals) > 1 and not math.isclose(lo, hi, rel_tol=1e-9, abs_tol=1e-12):
            out[key] = {"spread": hi - lo, "values": vals}
    return out


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


def merged(world: str | None, short: str, name: str, srcs: list[Source]) -> Model:
    m = Model(name, world, short, srcs)
    for s in srcs:
        for k, v in s.values.items():
            if k not in m.cells:
                m.cells[k] = v
                if k == "uds" and s.kind == "score":
                    m.ci = s.ci
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


def full_utility_of(results: Results) -> dict[str, float]:
    """U_full per epoch group stated by a file (the first file's value wins)."""
    out: dict[str, float] = {}
    for t in results.tables:
        for k, v in t.full_utility.items():
            out.setdefault(k, v)
    return out


def merge_models(results: Results) -> list[tuple[Model, dict]]:
    """(model, its benchmark row) per model, in the leaderboard's default order."""
    groups = group_sources(sources_of(results))
    models = [merged(w, short, name, srcs) for (w, short, srcs), name in zip(groups, display_names(groups))]
    records = [{"model": m.name, "method": m.method, "epoch": m.epoch, **m.cells} for m in models]
    rows = leaderboard_rows(records, full_utility_of(results))
    by_name = {m.name: m for m in models}
    return [(by_name[r["model"]], r) for r in rows]
