"""UDS sanity on a tiny-world preset: the world's alignment, the identities and the
interpolation curve. Prints a report and writes it as JSON.

    python experiments/uds_sanity.py --preset small [--out sanity_small.json]
"""

from __future__ import annotations

import argparse
import json
import time

from transformers import AutoTokenizer, LlamaForCausalLM

from checkpoints.world.build import build_world
from checkpoints.world.quality import alignment
from checkpoints.world.store import load_world
from uds_core.data import load_annotated
from uds_core.engine import EngineSettings, UdsModels, compute_uds
from uds_core.prompts import prepare_examples
from uds_core.sanity import ALPHAS, interpolation_curve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    t0 = time.time()
    root = build_world(args.preset, args.seed, progress=True, names=["base", "full", "retain"])
    build_s = time.time() - t0
    def load(n):
        return LlamaForCausalLM.from_pretrained(root / "models" / n).eval()
    full, retain = load("full"), load("retain")
    tok = AutoTokenizer.from_pretrained(root / "models" / "full")
    examples = prepare_examples(load_annotated(root / "data" / "uds_data.json"), tok)
    items, skipped = examples.items, examples.skipped
    settings = EngineSettings(batch_size=32)
    t1 = time.time()
    align = alignment(full, retain, tok, load_world(args.preset, args.seed))
    curve = interpolation_curve(full, retain, examples, settings)
    res_full = compute_uds(UdsModels(full, retain, full), examples, settings)
    per_example_retain = compute_uds(UdsModels(full, retain, retain), examples, settings, s1=res_full.s1).uds
    scored = [u for u in per_example_retain if u is not None]
    report = {
        "preset": args.preset, "seed": args.seed, "build_seconds": round(build_s, 1),
        "measure_seconds": round(time.time() - t1, 1), "n_items": len(items), "n_skipped_span": len(skipped),
        "n_scored": len(scored), "uds_full": res_full.mean,
        "uds_retain_min": min(scored), "uds_retain_max": max(scored),
        "interpolation": dict(zip(map(str, ALPHAS), curve)), "alignment": align,
    }
    print(json.dumps(report, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
