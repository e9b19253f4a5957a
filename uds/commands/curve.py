"""`uds curve`: the figure of curves written during unlearning (uds.callbacks.UdsCallback).

Reads curve files (uds_core.curves; a folder: every curve file in it), prints one line per curve
(evaluations, first and last UDS, the chosen step and its values) and writes one PNG with a
panel per curve: step on x, UDS and the recorded output metrics on y, the chosen checkpoint
marked (uds_core.curve_plot). Imports neither torch nor the metric registry.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from uds_core.curves import Curve, read_curve
from uds_core.errors import UdsInputError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("curve", help="figure of UDS and output metrics over unlearning steps (curve files)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--curves", required=True, nargs="+", metavar="PATH",
                   help="curve files (JSON lines) or folders holding them")
    p.add_argument("--out", default="uds_curve.png", metavar="FILE", help="the PNG (default uds_curve.png)")
    p.add_argument("--metrics", default=None, metavar="KEYS",
                   help="comma-separated keys to draw besides UDS (default: every recorded one)")
    p.set_defaults(func=run)


def find_curves(paths: list[str]) -> list[Curve]:
    """The curves named by `paths` (a folder: its curve files, others there passed over);
    UdsInputError for a missing path, a named file that is not a curve, or none found."""
    found: list[Curve] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UdsInputError(f"--curves {raw}: no such file or folder")
        if path.is_file():
            try:
                found.append(read_curve(path))
            except (ValueError, UnicodeDecodeError) as exc:
                raise UdsInputError(f"--curves: {exc}") from None
            continue
        for f in sorted(path.glob("*.jsonl")):
            try:
                found.append(read_curve(f))
            except (ValueError, UnicodeDecodeError):
                continue
    found = list({c.path.resolve(): c for c in found}.values())   # a file named twice is drawn once
    if not found:
        raise UdsInputError(f"no curve files in {', '.join(paths)} (JSON lines whose first line is a curve header)")
    return found


def describe(curve: Curve) -> str:
    """One line: evaluations, UDS at the first and last step, the chosen step and its UDS."""
    done = curve.scored()
    failed = len(curve.records) - len(done)
    if not done:
        return f"{curve.name}: no finished evaluation ({failed} failed)"
    first, last, best = done[0], done[-1], curve.best_step()
    chosen = next((r for r in done if r["step"] == best), None)
    text = (f"{curve.name}: {len(done)} evaluations, step {first['step']}-{last['step']}, "
            f"UDS {first['uds']:.4f} -> {last['uds']:.4f}")
    if chosen is not None:
        text += f"; chosen step {best} (UDS {chosen['uds']:.4f}) by '{curve.settings.get('best')}'"
    return text + (f"; {failed} failed" if failed else "")


def run(args: argparse.Namespace) -> int:
    from uds_core.curve_plot import plot_curves

    curves = find_curves(args.curves)
    keys = None if args.metrics is None else ["uds", *(k.strip() for k in args.metrics.split(",") if k.strip())]
    out = Path(args.out)
    if out.is_dir():
        raise UdsInputError(f"--out {out}: is a folder (give the PNG's file name)")
    for curve in curves:
        print(describe(curve))
    print(plot_curves(curves, out, keys))
    return 0
