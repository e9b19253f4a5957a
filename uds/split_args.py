"""`--split` of the commands that read the forget set, and the note they print when the spans of
their data were found automatically."""

from __future__ import annotations

import argparse
import sys

from checkpoints.splits import SPLITS


def add_split_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--split", choices=list(SPLITS), default=None,
                   help="TOFU forget split: its annotated rows, its forget set and its retain model (forget01: the "
                        "last 40 rows of forget10 and retain99; default forget10, or a tiny world's own forget set); "
                        "with --data, the file is checked against the split")


def report_annotation(session, command: str) -> None:
    """One stderr line when the session annotated its data on the fly (nothing otherwise)."""
    info = session.annotation
    if not info:
        return
    methods = ", ".join(f"{n} by {m}" for m, n in sorted(info["methods"].items()))
    without = info["without_span"]
    left = f"; no span found, left out: idx {', '.join(map(str, without))}" if without else ""
    print(f"{command}: {session.data} has no entity spans; found automatically ({methods}){left}. "
          f"`uds annotate --data {session.data} --out FILE` writes them once, to check or edit", file=sys.stderr)
