"""How fast a large `uds report` is in the browser: a synthetic 150-model x 400-example run
(synthetic `uds score` folders, 16 layers), built with `uds report`, opened from file:// in headless
Chromium; prints the build time, the page load time (navigation start to the leaderboard table
drawn) and the time of sorting by UDS (click to redrawn table), median of repeats, and opening
one model (its 400 examples loaded lazily).

    python benchmarks/bench_report.py [--models 150] [--examples 400] [--layers 16] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import browser
from tests.report_fixtures import qa_records, write_score_run
from uds.cli import main

READY = "return window.UDSreport && UDSreport.ready && !!document.querySelector('#lb-table tbody tr')"


def build(root: Path, n_models: int, n_examples: int, n_layers: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    data = root / "data.json"
    data.write_text(json.dumps(qa_records(n_examples)))
    methods = ("npo", "rmu", "graddiff", "simnpo", "idkdpo", "undial")
    for i in range(n_models):
        write_score_run(root / "in" / f"run{i:03d}", f"tiny:bench/{methods[i % 6]}_lr{i}_ep5", n_examples, n_layers,
                        seed=i, depth=(i % 10) / 10, data=data)
    t0 = time.perf_counter()
    assert main(["report", "--results", str(root / "in"), "--out", str(root / "site")]) == 0
    print(f"uds report: {time.perf_counter() - t0:.2f} s for {n_models} models x {n_examples} examples "
          f"(site {sum(p.stat().st_size for p in (root / 'site').rglob('*')) / 1e6:.1f} MB)")
    return root / "site" / "index.html"


def measure(index: Path, repeats: int) -> None:
    d = browser.chromium_driver()
    loads, sorts, opens = [], [], []
    try:
        for _ in range(repeats):
            d.get(index.as_uri())
            browser.wait_until(d, READY)
            # navigation start -> the leaderboard drawn (the DOMContentLoaded handler draws it)
            loads.append(d.execute_script(
                "const n = performance.getEntriesByType('navigation')[0]; "
                "return n.domContentLoadedEventEnd - n.startTime"))
            d.set_script_timeout(30)
            n_rows = d.execute_script("return document.querySelectorAll('#lb-table tbody tr').length")
            for key in ("uds", "uds", "name"):
                # the click handler sorts and rebuilds the table synchronously; the time runs to the
                # next frame after it, so style, layout and paint of the new table are included
                t = d.execute_async_script("""
                    const done = arguments[arguments.length - 1], t0 = performance.now();
                    document.querySelector('th[data-key=' + arguments[0] + ']').click();
                    requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));""", key)
                sorts.append(t)
            t = d.execute_async_script("""
                const done = arguments[arguments.length - 1], t0 = performance.now();
                location.hash = '#/model/' + (UDSreport.data.models.length - 1);
                (function poll() { document.querySelector('#ex-table tbody tr') ? done(performance.now() - t0)
                                   : setTimeout(poll, 2); })();""")
            opens.append(t)
    finally:
        d.quit()
    print(f"leaderboard rows drawn: {n_rows}")
    print(f"load (navigation start to leaderboard drawn): median {statistics.median(loads):.0f} ms, "
          f"max {max(loads):.0f} ms over {repeats} loads")
    print("sort (click on a column header to the next frame after the redraw): "
          f"median {statistics.median(sorts):.1f} ms, "
          f"max {max(sorts):.1f} ms over {len(sorts)} sorts")
    print(f"open a model (its examples file loaded and drawn): median {statistics.median(opens):.0f} ms, "
          f"max {max(opens):.0f} ms")


def main_() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=150)
    ap.add_argument("--examples", type=int, default=400)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="keep the inputs and site here (default: a temp folder)")
    a = ap.parse_args()
    root = browser.bench_folder("bench_report", a.out)
    if root is None:
        return 2
    measure(build(root, a.models, a.examples, a.layers), a.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main_())
