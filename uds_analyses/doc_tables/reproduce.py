"""The README's main command: the lines it prints and the range to expect, from the committed builds.

`results/reproduce/main_command.json` names the evidence, no numbers: the `uds score` summary whose
printed lines are shown, and every committed result of the same model from a separate build of the
world (a `uds score` summary.json, a `experiments/mem_bits_kernels.py` file, a `uds meta-eval`
results.json), each with a label saying which machine and CPU kernels built it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from checkpoints.specs import file_name
from uds_core.report import headline

DIGITS = 3   # the expected range is widened outwards to this many decimals


def _build(root: Path, entry: dict) -> tuple[float, str | None]:
    """(UDS, fingerprint of the unlearned model or None) of one listed file."""
    d = json.loads((root / entry["file"]).read_text())
    if "model" not in entry:                                  # a `uds score` summary.json
        return d["uds"], d["fingerprints"]["unlearned"]
    if isinstance(d, list):                                   # `uds meta-eval` benchmark rows
        row = next(r for r in d if r["model"] == entry["model"])
        return row["uds"], None
    m = d["models"][entry["model"]]                           # mem_bits_kernels.py: per model
    return m["uds"], m.get("fingerprint")


def builds(path: Path) -> list[tuple[str, float]]:
    """(label, UDS) of every distinct build the manifest lists (one file per build: the same
    fingerprint twice is one build, counted once)."""
    root = path.parents[2]
    seen, out = set(), []
    for entry in json.loads(path.read_text())["builds"]:
        uds, fp = _build(root, entry)
        if fp is not None and fp in seen:
            continue
        seen.add(fp)
        out.append((entry["label"], uds))
    return out


def main_command_block(path: Path) -> str:
    """The two lines `uds score` printed for the shown summary, then the expected range: the lowest
    and highest UDS over the builds, widened outwards to DIGITS decimals, and each build's value."""
    manifest = json.loads(path.read_text())
    shown = json.loads((path.parents[2] / manifest["shown"]).read_text())
    values = builds(path)
    lo = math.floor(min(v for _, v in values) * 10 ** DIGITS) / 10 ** DIGITS
    hi = math.ceil(max(v for _, v in values) * 10 ** DIGITS) / 10 ** DIGITS
    each = "; ".join(f"{v:.6f} on {label}" for label, v in sorted(values, key=lambda x: x[1]))
    return ("```text\n" + headline(shown) + f"\nresults in uds_out/{file_name(shown['unlearned'])}\n```\n\n"
            f"**Expect {lo:.{DIGITS}f} to {hi:.{DIGITS}f}.** The {len(values)} builds of the `small` world on "
            f"record gave {each}.\n")
