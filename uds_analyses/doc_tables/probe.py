"""docs/probe.md's generated tables from `experiments/probe_ladder.py`'s ladder.json (QA corpus), its
passages JSON (`--corpus passages`, the long-passage corpus) and
`experiments/probe_repetition.py`'s results.json."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from uds_analyses.doc_tables.markdown import fixed, table

_rate = partial(fixed, digits=2)   # rates: two decimals, "n/a" where undefined


def ladder_table(path: Path) -> str:
    """One row per model: verbatim rate per level on the targets, on holdout authors at the last
    level, semantic accuracy and refusal rates, probe rows per second."""
    d = json.loads(path.read_text())
    s, counts = d["summary"], d["rows_per_model"]
    levels, first, last = s["settings"]["levels"], s["settings"]["levels"][0], s["settings"]["levels"][-1]
    rows = []
    for spec, m in s["models"].items():
        lv = m["levels"]
        hold = m["groups"].get("holdout", {}).get(last, {}).get("verbatim_rate")
        rows.append([spec.rsplit("/", 1)[-1], *(_rate(lv[x]["verbatim_rate"]) for x in levels), _rate(hold),
                     _rate(lv[last]["semantic_acc"]), _rate(lv[first]["refusal_rate"]), _rate(lv[last]["refusal_rate"]),
                     f"{counts[spec] / s['settings']['seconds'][spec]:.0f}"])
    return table(["model", *levels, f"holdout {last}", "semantic acc", f"refusal {first}", f"refusal {last}",
                  "rows/s"], rows)


def repetition_runs(folder: Path) -> dict[int, list[dict]]:
    """`experiments/probe_repetition.py` results.json files of `folder` (one per seed and number of
    passes), grouped by the number of passes over the repeated list, in increasing order."""
    by_passes: dict[int, list[dict]] = {}
    for p in sorted(folder.glob("*.json")):
        r = json.loads(p.read_text())
        by_passes.setdefault(r["settings"]["epochs"], []).append(r)
    return dict(sorted(by_passes.items()))


def seed_bands(runs: list[dict], key: str = "verbatim_rate") -> dict[int, tuple[float, float, float]]:
    """Runs of one number of passes e: per times trained on (count x e), the (mean, min, max) of
    `key` over the runs (seeds) that have that count."""
    e = runs[0]["settings"]["epochs"]
    out = {}
    for c in sorted({c for r in runs for c in r["counts"]}):
        vals = [r[key][str(c)] for r in runs if c in r["counts"]]
        out[c * e] = (sum(vals) / len(vals), min(vals), max(vals))
    return out


def _passes_label(label: str, e: int, seeds: int) -> str:
    return f"{label}, {e} pass{'es' if e > 1 else ''} ({seeds} seeds)"


def repetition_table(folder: Path) -> str:
    """Per number of passes over the repeated list and per times trained on (count x passes), the
    prefix-level verbatim rate and mean LCS (characters) as mean [min, max] over the seeds. The
    0-times column is the table's chance level (chunks the model never trained on)."""
    by_passes = repetition_runs(folder)
    metrics = (("verbatim_rate", "verbatim rate", "{:.2f}"), ("mean_lcs", "mean LCS", "{:.0f}"))
    bands = {(e, key): seed_bands(rs, key) for e, rs in by_passes.items() for key, _, _ in metrics}
    times = sorted({t for band in bands.values() for t in band})
    rows = []
    for e, rs in by_passes.items():
        for key, label, fmt in metrics:
            band = bands[e, key]
            cells = ["" if t not in band else "{} [{}, {}]".format(*map(fmt.format, band[t])) for t in times]
            rows.append([_passes_label(label, e, len(rs)), *cells])
    return table(["times trained on", *map(str, times)], rows)


def repetition_kind_table(folder: Path) -> str:
    """The same runs split by the kind of biography (`by_kind` of results.json): per number of
    passes and kind, the verbatim rate over all seeds' rows pooled, with hits/rows, per times
    trained on; empty where no biography of that kind got that count."""
    by_passes = repetition_runs(folder)
    times = sorted({int(c) * e for e, rs in by_passes.items() for r in rs for k in r["by_kind"].values() for c in k})
    rows = []
    for e, rs in by_passes.items():
        for kind, label in (("forget", "forget-author biographies"), ("other", "other-entity biographies")):
            cells = []
            for t in times:
                got = [r["by_kind"][kind][str(t // e)] for r in rs if t % e == 0 and str(t // e) in r["by_kind"][kind]]
                hits, n = sum(c["hits"] for c in got), sum(c["n"] for c in got)
                cells.append(f"{hits / n:.2f} ({hits}/{n})" if n else "")
            rows.append([_passes_label(label, e, len(rs)), *cells])
    return table(["times trained on", *map(str, times)], rows)


def _passages(path: Path) -> tuple[dict, list[str]]:
    s = json.loads(path.read_text())["summary"]
    return s, s["settings"]["levels"]


def passages_level_table(path: Path) -> str:
    """Long-passage corpus, one row per model: verbatim rate per level on the forget passages, on
    the distractor passages (never trained on) at the last level, mean LCS and refusals at the
    last level, semantic accuracy on the passages' QA (forget, distractors), ladder rows per second."""
    s, levels = _passages(path)
    last = levels[-1]
    rows = []
    for spec, m in s["models"].items():
        lv = m["levels"]
        rows.append([spec.rsplit("/", 1)[-1], *(_rate(lv[x]["verbatim_rate"]) for x in levels),
                     _rate(m["distractors"][last]["verbatim_rate"]), f"{lv[last]['mean_lcs']:.1f}",
                     _rate(lv[last]["refusal_rate"]), _rate(m["semantic_acc"]), _rate(m["distractor_semantic_acc"]),
                     f"{s['settings']['rows'][spec] / s['settings']['seconds'][spec]:.0f}"])
    return table(["model", *levels, f"distractors {last}", f"mean LCS {last}", f"refusal {last}", "semantic acc",
                  "distractors semantic", "rows/s"], rows)


def _hits(cell: dict | None) -> str:
    return "n/a" if cell is None else f"{cell['rate']:.2f} ({cell['hits']}/{cell['n']})"


def passages_position_table(path: Path) -> str:
    """Long-passage corpus, one row per model and level: verbatim rate by the passage's position in
    its author's text (sentence-boundary cuts at the prefix level), then the first-words prefix and
    the semantic accuracy of the passages' QA by the same positions; cells `rate (hits/n)`."""
    s, levels = _passages(path)
    first = next(iter(s["models"].values()))
    pos = list(first["by_position"]["verbatim"][levels[0]])
    rows = []
    for spec, m in s["models"].items():
        name = spec.rsplit("/", 1)[-1]
        # .get: a one-sentence passage has no sentence-boundary cut, a passage without facts no QA
        rows += [[name, lv, *(_hits(m["by_position"]["verbatim"][lv].get(p)) for p in pos)] for lv in levels]
        if "prefix" in levels:
            rows.append([name, "prefix, first words", *(_hits(m["first_words_by_position"].get(p)) for p in pos)])
        rows.append([name, "semantic (QA)", *(_hits(m["by_position"]["semantic"].get(p)) for p in pos)])
    return table(["model", "level", *(f"passage {p}" for p in pos)], rows)


def passages_start_table(path: Path) -> str:
    """Long-passage corpus, prefix level, one row per model: verbatim rate by the sentence of the
    passage the continuation starts at, the first-words prefix, and the verbatim x semantic split
    of the sentence-boundary cuts (semantic = the QA of the continuation's first sentence)."""
    s, _ = _passages(path)
    starts = list(next(iter(s["models"].values()))["by_start"])
    rows = []
    for spec, m in s["models"].items():
        sp = m["split_2x2_prefix"]
        rows.append([spec.rsplit("/", 1)[-1], *(_hits(m["by_start"].get(k)) for k in starts),
                     _rate(m["first_words"]["verbatim_rate"]), _rate(m["first_words_distractors"]["verbatim_rate"]),
                     *(str(sp[k]) for k in ("verbatim_semantic", "verbatim_only", "semantic_only", "neither"))])
    return table(["model", *(f"from sentence {k}" for k in starts), "first words", "distractors first words",
                  "verbatim+semantic", "verbatim only", "semantic only", "neither"], rows)
