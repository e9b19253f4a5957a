"""docs/performance.md's and the README's tables of meta-evaluation measurements, the straightforward path against
the fast one, from `benchmarks/bench_measure.py`'s JSON."""

from __future__ import annotations

import json
from pathlib import Path

from uds_analyses.doc_tables.markdown import table

OTHER = "metric_formulas"


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def _x(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def _checks(d: dict) -> tuple[float, int, int]:
    """Largest |value difference| between the paths, generations token-identical, generations."""
    jobs = d["checks"]["jobs"].values()
    return (max(j["max_abs_value_diff"] for j in jobs), sum(j["generations_identical"] for j in jobs),
            sum(j["generations"] for j in jobs))


def summary_table(path: Path) -> str:
    """Per setting of the unlearned model and for the three together: seconds of each path, the
    speed-up, the floor and the fast path's multiple of it; then the value and token checks."""
    d = _doc(path)
    s, runs = d["summary"], d["runs"]
    rows = []
    for label in s["settings"]:
        old, new = runs["old"][label], runs["new"][label]
        rows.append([label, f"{old['total_seconds']:.0f}", f"{new['total_seconds']:.0f}",
                     _x(old["total_seconds"], new["total_seconds"]), f"{new['total_floor_seconds']:.0f}",
                     _x(new["total_seconds"], new["total_floor_seconds"]),
                     _x(old["total_seconds"], new["total_floor_seconds"])])
    if len(s["settings"]) > 1:
        rows.append([f"**the {len(s['settings'])} together**", f"**{s['old_seconds']:.0f}**",
                     f"**{s['new_seconds']:.0f}**", f"**{s['speedup']:.2f}**", f"**{s['floor_seconds']:.0f}**",
                     f"**{s['new_x_floor']:.2f}**", f"**{_x(s['old_seconds'], s['floor_seconds'])}**"])
    head = ["setting", "straightforward, s", "fast, s", "speed-up", "floor, s", "fast / floor",
            "straightforward / floor (the most any path could gain)"]
    worst, same, total = _checks(d)
    r, m = d["rates"], d["machine"]
    return (table(head, rows)
            + f"\n`tiny:{d['preset']}/{d['model']}`, batch {d['batch_size']}, at most {d['max_new_tokens']} new "
              f"tokens, {d['threads']} torch thread(s), {m['cpu']}, torch {m['torch']}. Largest |difference| of any "
              f"metric value between the paths: {worst:.1e}; generations token-identical: {same} of {total}. "
              f"Rates measured in the same run: decoder blocks {r['body']:.0f} tokens/s, LM head with log-softmax "
              f"{r['head']:.0f} rows/s, greedy decoding of a full batch {r['decode']:.0f} tokens/s.\n")


def phase_table(path: Path) -> str:
    """Per phase of each measured job: seconds on each path, the speed-up, the floor and the fast
    path's multiple of it (the formulas' floor is the fast path's own time)."""
    d = _doc(path)
    runs = d["runs"]
    rows = []
    for label in runs["new"]:
        old, new = runs["old"][label], runs["new"][label]
        for ph in sorted(set(old["seconds"]) | set(new["seconds"])):
            o, n = old["seconds"].get(ph, 0.0), new["seconds"].get(ph, 0.0)
            f = new["floor_seconds"].get(ph, 0.0)
            rows.append([label, ph.replace("_", " "), f"{o:.1f}", f"{n:.1f}", _x(o, n), f"{f:.1f}", _x(n, f)])
    return table(["job", "phase", "straightforward, s", "fast, s", "speed-up", "floor, s", "fast / floor"], rows)


def threads_table(path: Path) -> str:
    """`benchmarks/bench_threads.py`: the wall seconds of each round of both ways, their medians
    and the ratio."""
    d = _doc(path)
    ways = list(d["seconds"])
    rows = [[w, ", ".join(f"{t:.1f}" for t in d["seconds"][w]), f"{d['median_seconds'][w]:.1f}"] for w in ways]
    median = "median (the upper of two), s" if d["rounds"] == 2 else "median, s"
    text = table(["way", "wall seconds, each round", median], rows)
    return text + (f"\nUnits: {', '.join(f'`{u}`' for u in d['units'])} of `tiny:{d['preset']}`, "
                   f"each in its own process; {d['cores']} cores ({d['os_cpu_count']} seen by the OS), "
                   f"{d['rounds']} rounds alternating which way goes first. Sequential / side by side: "
                   f"**{d['sequential_over_side_by_side']:.2f}**.\n")


def readme_table(folder: Path) -> str:
    """The README's performance figures: one row per committed `bench_measure*.json` run of the
    folder (both paths over the run's settings), then the range of the speed-up and of fast / floor
    over the runs, and Open-Unlearning's eval against ours from `bench_ou_eval.json` when present."""
    runs = sorted(folder.glob("bench_measure*.json"))
    rows, ups, floors = [], [], []
    for path in runs:
        d = _doc(path)
        s = d["summary"]
        worst, same, total = _checks(d)
        ups.append(s["old_seconds"] / s["new_seconds"])
        floors.append(s["new_seconds"] / s["floor_seconds"])
        rows.append([f"`{path.name}`", f"`{d['preset']}`", ", ".join(s["settings"]), f"{s['old_seconds']:.0f}",
                     f"{s['new_seconds']:.0f}", f"{ups[-1]:.2f}", f"{floors[-1]:.2f}",
                     _x(s["old_seconds"], s["floor_seconds"]), f"{worst:.1e}" if worst else "0", f"{same} of {total}"])
    if not rows:
        return "No `bench_measure*.json` run is committed yet.\n"
    head = ["run", "model", "settings", "straightforward, s", "fast, s", "speed-up", "fast / floor",
            "straightforward / floor", "largest value difference", "generations token-identical"]
    out = table(head, rows) + (f"\nOver these {len(rows)} runs the fast path is **{min(ups):.2f}-{max(ups):.2f}x** "
                               f"faster at identical values and **{min(floors):.2f}-{max(floors):.2f}x** the floor "
                               f"(the seconds move with the machine's load; the ratios less).\n")
    ou = folder / "bench_ou_eval.json"
    if ou.exists():
        s = _doc(ou)["summary"]
        cpu = s["ou"]["cpu_s"]["median"] / s["ours"]["cpu_s"]["median"]
        out += (f"Open-Unlearning's own eval takes **{cpu:.2f}x** our CPU seconds for the same metrics on the same "
                f"model (`{ou.name}`, median of {s['ou']['cpu_s']['n']} round(s)).\n")
    return out


def fisher_batch1_table(folder: Path) -> str:
    """`benchmarks/bench_fisher_batch1.py` runs of the folder: Fisher seconds of the spec §4.5 path and
    of a per-item batch-1 backward for full, retain and one unlearned model, the speed-up, the
    largest relative entry difference and the three Fisher-masked scores' differences."""
    rows = []
    for path in sorted(folder.glob("bench_fisher_batch1*.json")):
        d = _doc(path)
        diffs = [v["abs_diff"] for v in d["scores"].values()]
        rows.append([f"`{d['preset']}`", f"`{d['model']}`", str(d["items"]), f"{d['seconds']['batch4']:.1f}",
                     f"{d['seconds']['batch1']:.1f}", _x(d["seconds"]["batch4"], d["seconds"]["batch1"]),
                     "yes" if d["entries_identical"] else "no", f"{d['max_rel_entry_diff']:.1e}",
                     f"{max(diffs):.1e}"])
    head = ["world", "scored model", "items", "spec §4.5 path, s", "batch-1 backward, s", "speed-up",
            "entries identical", "largest relative entry difference", "largest score difference (abs.)"]
    return table(head, rows)
