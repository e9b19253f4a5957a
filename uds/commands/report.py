"""`uds report`: a self-contained static site (opens from file://) of any mix of result folders.

Reads `uds score`, `uds metrics`, `uds meta-eval`, leaderboard, `uds probe` and `uds audit` outputs
(uds/site/readers.py), says on stderr what it passed over and why, and writes DIR/index.html with
its data and assets (uds/site/writer.py). Imports no torch: metric names and directions come from
the metric registry, which loads without the metric stack.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from uds_core.errors import UdsInputError
from uds.site.readers import read_results
from uds.site.serve import serve
from uds.site.writer import write_site

DEFAULT_OUT = Path("uds_report")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="static HTML report (leaderboard, models, examples, meta-evaluation)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, nargs="+", action="extend", metavar="PATH",
                   help="result folders or files (searched recursively; the flag may be repeated, every path is "
                        "read): score, metrics, meta-eval, leaderboard, probe, audit outputs, curve files")
    p.add_argument("--out", metavar="DIR", default=str(DEFAULT_OUT), help=f"site folder (default {DEFAULT_OUT})")
    p.add_argument("--serve", action="store_true", help="then serve it on http://127.0.0.1:PORT until Ctrl-C")
    p.add_argument("--port", type=int, default=8000, help="port for --serve (default 8000; 0 = any free port)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise UdsInputError(f"--port must be in 0..65535, got {args.port}")
    results = read_results(args.results)
    if results.empty():
        raise UdsInputError("no results found in " + ", ".join(args.results)
                            + " (looked for summary.json, metrics.json, meta_eval.json, results.json, leaderboard CSV,"
                            " curve files)")
    for path, why in results.skipped:
        print(f"report: skipped {path}: {why}", file=sys.stderr)
    index = write_site(results, args.out)
    counts = {"score runs": len(results.scores), "metrics files": len(results.metrics),
              "leaderboard rows": results.n_rows(), "meta-evaluations": len(results.meta),
              "probe runs": len(results.probes), "audit runs": len(results.audits), "curves": len(results.curves)}
    print("report: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n), file=sys.stderr)
    print(index.resolve().as_uri())
    if args.serve:
        serve(index.parent, args.port)
    return 0
