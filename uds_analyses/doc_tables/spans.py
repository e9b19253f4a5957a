"""docs/spans.md's tables from results/spans/ (`experiments/span_validation.py`)."""

from __future__ import annotations

import json
from pathlib import Path

from uds_analyses.doc_tables.markdown import fixed, table

SETS = {"tofu_forget10": "TOFU forget10, hand spans (367)",
        "tofu_forget10_plain": "the same, perturbed answers ignored (plain QA rules only)",
        "test_world": "`test` world forget set, generated spans",
        "small_world": "`small` world forget set, generated spans"}
RELATIONS = {"exact": "the same span", "inside": "inside the hand span (shorter)",
             "around": "around the hand span (longer)", "overlap": "overlapping it, shifted",
             "before": "disjoint, earlier in the answer", "after": "disjoint, later in the answer",
             "none": "no automatic span"}
WORLDS = {"test": "`test`", "small": "`small`", "smol": "`smol` (SmolLM2-135M, TOFU text)"}


def _pct(n: int, of: int) -> str:
    return f"{n} ({100 * n / of:.0f} %)"


def agreement_table(path: Path) -> str:
    """One row per compared set: exact matches, token F1, and token F1 per method."""
    sets = json.loads(path.read_text())["sets"]
    rows = []
    for key, label in SETS.items():
        s = sets[key]
        methods = ", ".join(f"{m} {v['n']} / {fixed(v['token_f1'], 2)}" for m, v in s["by_method"].items())
        rows.append([label, str(s["n"]), _pct(s["exact"], s["n"]), fixed(s["token_f1"]), methods])
    return table(["given spans", "records", "exact match", "token F1", "per method: records / token F1"], rows)


def relation_table(path: Path) -> str:
    """How the automatic spans of TOFU forget10 relate to the hand spans, with a first example each."""
    s = json.loads(path.read_text())["sets"]["tofu_forget10"]
    rows = []
    for rel, meaning in RELATIONS.items():
        recs = [r for r in s["records"] if r["relation"] == rel]
        if not recs:
            continue
        ex = recs[0]
        example = "" if rel == "exact" else f"idx {ex['idx']}: hand “{ex['given']}”, automatic “{ex['auto']}”"
        rows.append([meaning, _pct(len(recs), s["n"]), fixed(sum(r["f1"] for r in recs) / len(recs), 2), example])
    return table(["automatic span is", "records", "token F1", "first example"], rows)


def _world(path: Path) -> dict:
    return json.loads(path.read_text())


def uds_summary_table(folder: Path) -> str:
    """One row per world: span agreement on its forget set and UDS agreement over its models."""
    rows = []
    for world, label in WORLDS.items():
        p = folder / f"uds_{world}.json"
        if not p.is_file():
            continue
        d = _world(p)
        a = d["agreement"]
        rows.append([label, "hand" if world == "smol" else "generated", str(a["n"]), _pct(a["exact"], a["n"]),
                     fixed(a["token_f1"]), str(len(d["unlearned"])), fixed(d["mean_abs_diff_unlearned"], 4),
                     fixed(d["max_abs_diff_unlearned"], 4), fixed(d["spearman_unlearned"])])
    return table(["world", "given spans", "examples", "exact match", "token F1", "unlearned models",
                  "mean abs. ΔUDS", "max abs. ΔUDS", "Spearman ρ"], rows)


def uds_table(path: Path) -> str:
    """One row per model of one world: UDS with the given spans, with the automatic ones, |Δ|."""
    d = _world(path)
    rows = []
    for name, m in d["models"].items():
        rows.append([f"`{name.rsplit('/', 1)[-1]}`", fixed(m["uds_given"], 4), fixed(m["uds_auto"], 4),
                     fixed(m["abs_diff"], 4), f"{m['n_scored_given']} / {m['n_scored_auto']}"])
    return table(["model", "UDS, given spans", "UDS, automatic spans", "abs. Δ", "scored (given / automatic)"], rows)


def splits_table(path: Path) -> str:
    """One row per TOFU forget split: where it lies, how many rows carry a hand span, its retain."""
    d = json.loads(path.read_text())
    rows = []
    for name, s in d["splits"].items():
        rows.append([name, str(s["rows"]), f"{s['full_rows'][0]}-{s['full_rows'][1]}",
                     f"{s['forget10_rows'][0]}-{s['forget10_rows'][1]}", str(s["annotated"]),
                     f"{s['retain']} ({s['retain_rows']} rows)", f"`{s['retain_anchor']}`"])
    return table(["split", "rows", "rows of full.json", "rows of forget10", "hand-annotated rows",
                  "retain split", "default retain anchor (OU)"], rows)
