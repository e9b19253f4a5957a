"""spec §2.9's scale-sanity protocol in one command: UDS of Open-Unlearning's full, retain99, retain95
and retain90 TOFU checkpoints of each architecture, against its full and retain90 models, bf16 and
sdpa, all 367 annotated items, tau 0.05, `--parity reference` (the published numbers' last-layer
convention), with z = (UDS - UDS_full) / (UDS_retain90 - UDS_full) and the published values beside.

    python experiments/scale_sanity.py --out scale_sanity.json                 # Llama-3.2-1B, on a GPU
    python experiments/scale_sanity.py --archs llama32-1b,llama32-3b,llama31-8b --out scale_sanity.json

Needs the hub (or its local cache) for the checkpoints. `--full`, `--retain` and `--models` replace
the checkpoints (tests run it on the tiny `test` world).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPLITS = ("full", "retain99", "retain95", "retain90")
# spec §2.9: published UDS per architecture (1B / 3B / 8B) and each one's batch size
PUBLISHED = {"llama32-1b": {"full": 0.002, "retain99": 0.153, "retain95": 0.496, "retain90": 1.000},
             "llama32-3b": {"full": 0.008, "retain99": 0.151, "retain95": 0.482, "retain90": 1.000},
             "llama31-8b": {"full": 0.000, "retain99": 0.101, "retain95": 0.455, "retain90": 1.000}}
BATCH = {"llama32-1b": 8, "llama32-3b": 4, "llama31-8b": 1}


def score(unlearned: str, full: str, retain: str, args: argparse.Namespace, batch: int, out: Path) -> dict:
    from uds.cli import main

    cmd = ["score", "--unlearned", unlearned, "--full", full, "--retain", retain, "--device", args.device,
           "--dtype", args.dtype, "--batch-size", str(batch), "--parity", args.parity, "--out", str(out)]
    t0 = time.time()
    code = main(cmd)
    if code != 0:
        raise SystemExit(f"uds {' '.join(cmd)} exited {code}")
    s = json.loads((out / "summary.json").read_text())
    return {"uds": s["uds"], "n_scored": s["n_scored"], "n_examples": s["n_examples"], "s1_cache": s["s1_cache"],
            "seconds": round(time.time() - t0, 1)}


def z_scores(values: dict[str, float], full: str, retain: str) -> dict[str, float | None]:
    """spec §2.9: (UDS - UDS_full) / (UDS_retain90 - UDS_full) when the denominator exceeds 1e-12."""
    den = values[retain] - values[full]
    return {k: (v - values[full]) / den if den > 1e-12 else None for k, v in values.items()}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--archs", default="llama32-1b", help=f"comma-separated of {', '.join(PUBLISHED)}")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float32"))
    p.add_argument("--parity", default="reference", choices=("reference", "spec"))
    p.add_argument("--full", help="replaces the architecture's full checkpoint")
    p.add_argument("--retain", help="replaces its retain90 checkpoint (the S1 source)")
    p.add_argument("--models", help="comma-separated specs replacing full,retain99,retain95,retain90")
    p.add_argument("--batch-size", type=int, help="replaces spec §2.9's batch of the architecture")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    doc = {"command": "python experiments/scale_sanity.py " + " ".join(sys.argv[1:] if argv is None else argv),
           "device": args.device, "dtype": args.dtype, "parity": args.parity, "archs": {}}
    with tempfile.TemporaryDirectory(prefix="scale-sanity-") as tmp:
        for arch in args.archs.split(","):
            models = dict(zip(SPLITS, args.models.split(","))) if args.models else {s: f"{arch}_{s}" for s in SPLITS}
            full, retain = args.full or f"{arch}_full", args.retain or f"{arch}_retain90"
            batch = args.batch_size or BATCH[arch]
            runs = {s: score(m, full, retain, args, batch, Path(tmp) / arch / s) for s, m in models.items()}
            values = {s: r["uds"] for s, r in runs.items()}
            z = z_scores(values, "full", "retain90")
            order = [values[s] for s in SPLITS if s in values]
            doc["archs"][arch] = {"models": models, "full": full, "retain": retain, "batch_size": batch, "runs": runs,
                                  "z": z, "monotone": all(a < b for a, b in zip(order, order[1:])),
                                  "published": PUBLISHED.get(arch)}
            print(f"{arch}: " + ", ".join(f"{s} {values[s]:.3f} (published {PUBLISHED.get(arch, {}).get(s, '-')})"
                                          for s in values))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
