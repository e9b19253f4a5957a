"""How fast the report's leaderboard is with 150 models, in headless Chromium from file://.

Synthetic inputs in the real formats: a results.json of 150 models with every benchmark leaf
(tests/report_fixtures.py), and a `uds score` folder for every third model (so rows merge runs and
carry a UDS interval). Built with `uds report`, then, per repeat, in a fresh page: load (navigation
start to the drawn table), sorts of the default view (headline columns), every column group switched
on (click to the next frame), sorts with all groups shown (a click on a header to the next frame
after the redraw; several columns, both ways), and filters (typing into the text filter, choosing a
method; to the next frame). Prints medians and maxima in ms and, with --json, writes them with the
machine's core count and load.

    python benchmarks/bench_leaderboard.py [--models 150] [--repeats 5] [--json results/report/bench_leaderboard.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import browser
from tests.report_fixtures import write_results_json, write_score_run
from uds.cli import main

READY = "return window.UDSreport && UDSreport.ready && !!document.querySelector('#lb-table tbody tr')"

# the click (or input event) runs the page's handler, which redraws synchronously; the time runs to
# the next frame after it, so style, layout and paint of the new table are included
TIMED = """const done = arguments[arguments.length - 1], t0 = performance.now();
{action}
requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));"""
SORT_KEYS = ("overall", "uds", "mem", "name", "es", "s_mia_loss", "fluency")


def build(root: Path, n_models: int) -> tuple[Path, float]:
    rows = write_results_json(root / "in" / "results.json", n_models, seed=0)
    for i, r in enumerate(rows[::3]):
        write_score_run(root / "in" / "score" / f"run{i:03d}", f"tiny:bench/{r['model']}", n_examples=6, n_layers=4,
                        seed=i, depth=0.5)
    t0 = time.perf_counter()
    assert main(["report", "--results", str(root / "in"), "--out", str(root / "site")]) == 0
    return root / "site" / "index.html", time.perf_counter() - t0


def timed(driver, action: str, *args) -> float:
    return driver.execute_async_script(TIMED.replace("{action}", action), *args)


def one_page(driver, url: str, out: dict[str, list[float]]) -> int:
    driver.get("about:blank")
    driver.get(url)
    browser.wait_until(driver, READY)
    out["load"].append(driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0]; return n.domContentLoadedEventEnd - n.startTime"))
    for key in ("uds", "mem", "name"):
        for _ in range(2):
            out["sort, headline view"].append(timed(driver, "document.querySelector(arguments[0]).click();",
                                                    f"th[data-key='{key}']"))
    for box in driver.find_elements("css selector", "#lb-groups input"):
        out["group on"].append(timed(driver, "document.querySelector(arguments[0]).click();",
                                     f"#lb-groups input[data-group='{box.get_attribute('data-group')}']"))
    cells = driver.execute_script("return document.querySelectorAll('#lb-table tbody td').length")
    for key in SORT_KEYS:
        for _ in range(2):                                    # high to low, then low to high
            out["sort, all groups"].append(timed(driver, "document.querySelector(arguments[0]).click();",
                                                 f"th[data-key='{key}']"))
    for text in ("npo", "lr1", "zzz", ""):
        out["filter text"].append(timed(driver, """const box = document.querySelector('#lb-filter');
            box.value = arguments[0]; box.dispatchEvent(new Event('input'));""", text))
    for method in ("rmu", "simnpo", ""):
        out["filter method"].append(timed(driver, """const s = document.querySelector('#lb-method');
            s.value = arguments[0]; s.dispatchEvent(new Event('change'));""", method))
    return cells


def measure(index: Path, repeats: int) -> dict:
    d = browser.chromium_driver()
    d.set_script_timeout(30)
    times: dict[str, list[float]] = {k: [] for k in ("load", "sort, headline view", "group on", "sort, all groups",
                                                       "filter text", "filter method")}
    try:
        for _ in range(repeats):
            cells = one_page(d, index.as_uri(), times)
        rows = d.execute_script("return UDSreport.data.models.length")
        version = d.capabilities.get("browserVersion")
    finally:
        d.quit()
    stats = {k: {"median_ms": round(statistics.median(v), 1), "max_ms": round(max(v), 1), "n": len(v)}
             for k, v in times.items()}
    return {"rows": rows, "cells_with_all_groups": cells, "chromium": version, "stats": stats}


def main_() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    ap.add_argument("--out", type=Path, default=None, help="keep the inputs and the site here (default: a temp folder)")
    a = ap.parse_args()
    root = browser.bench_folder("bench_leaderboard", a.out)
    if root is None:
        return 2
    index, build_s = build(root, a.models)
    load_before = os.getloadavg()[0]
    result = measure(index, a.repeats)
    result |= {"models": a.models, "repeats": a.repeats, "uds_report_build_s": round(build_s, 2),
               "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
               "python": platform.python_version(), "cpus": os.cpu_count(),
               "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    print(f"uds report: {build_s:.2f} s for {a.models} models; {result['rows']} rows, "
          f"{result['cells_with_all_groups']} cells with every group shown")
    for name, s in result["stats"].items():
        print(f"{name:20s} median {s['median_ms']:7.1f} ms   max {s['max_ms']:7.1f} ms   ({s['n']} times)")
    worst = max(s["max_ms"] for s in result["stats"].values())
    print(f"slowest of all: {worst:.0f} ms ({'under' if worst < 1000 else 'over'} one second); "
          f"{result['cpus']} cores, 1-min load average {result['load_average_1min'][0]} before, "
          f"{result['load_average_1min'][1]} after")
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(result, indent=1) + "\n")
        print(a.json)
    return 0


if __name__ == "__main__":
    sys.exit(main_())
