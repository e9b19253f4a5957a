"""`uds leaderboard`: the benchmark table (Mem, Privacy, Utility, Overall) from saved results.

--results: a folder of per-model folders (`metrics.json` + `summary.json`, or Open-Unlearning
`TOFU_SUMMARY.json` / `TOFU_EVAL.json`), or one JSON file of per-model records (see
uds_leaderboard/inputs.py for the forms and the key mapping). Writes md (default), csv or
html to --out (stdout without it) and, with --out, a Mem vs Privacy scatter beside it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from uds_leaderboard.render import FORMATS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("leaderboard", help="benchmark leaderboard (Mem, Privacy, Utility, Overall) from results",
                       description=__doc__.splitlines()[0])
    p.add_argument("--results", required=True, metavar="DIR|FILE", help="results folder or JSON file")
    p.add_argument("--format", choices=FORMATS, default=None, help="md, csv or html (default: from --out, else md)")
    p.add_argument("--out", metavar="FILE", help="output file (default: stdout)")
    p.add_argument("--plot", metavar="PNG", help="Mem vs Privacy scatter (default with --out: <out>_mem_privacy.png)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uds_leaderboard.render import RENDERERS, mem_privacy_scatter
    from uds_leaderboard.rows import leaderboard_rows
    from uds_leaderboard.inputs import load_results

    fmt = args.format or (Path(args.out).suffix.lstrip(".").lower() if args.out else "md")
    fmt = {"markdown": "md", "htm": "html"}.get(fmt, fmt)
    if fmt not in RENDERERS:
        fmt = "md"
    records, full_utility = load_results(args.results)
    rows = leaderboard_rows(records, full_utility)
    text = RENDERERS[fmt](rows)
    if args.out:
        out = Path(args.out)
        from uds_core import atomic

        atomic.write_text(out, text)
        print(out)
    else:
        sys.stdout.write(text)
    plot = args.plot or (str(Path(args.out).with_suffix("")) + "_mem_privacy.png" if args.out else None)
    if plot:
        print(mem_privacy_scatter(Path(plot), rows), file=sys.stderr if not args.out else sys.stdout)
    return 0
