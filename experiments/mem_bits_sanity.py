"""Sanity of the memorisation-in-bits metrics on a tiny-world preset (spec-probes §1.1): mem_bits
of full (large), retain (exactly 0), the other built models, and the weight interpolation
full -> retain (uds_core.sanity's alpha grid; expected monotone), plus the TF-IDF Spearman diagnostic.

    UDS_HOME=... python experiments/mem_bits_sanity.py --preset small [--out mem_bits_small.json]

Reads the preset's built model folders as they are (base, full, retain and any other), builds nothing.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from checkpoints.specs import load_model, load_tokenizer, resolve_spec
from checkpoints.world.store import load_world
from uds_core.paths import world_dir
from metrics.context import EvalSettings, ModelPool, eval_splits
from metrics.registry import evaluate
from metrics.session import build_context
from metrics.work import WorkCache
from uds_core.sanity import ALPHAS, interpolate_weights

KEYS = ["mem_bits", "mem_bits_per_token", "mem_bits_erased"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    t0 = time.time()
    folder = world_dir(args.preset, args.seed) / "models"
    spec = lambda name: str(folder / name)  # noqa: E731  (the folders as they are: nothing is (re)built)
    names = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    full, retain = load_model(spec("full")), load_model(spec("retain"))
    models = {spec(n): load_model(spec(n)) for n in names if n not in ("full", "retain")}
    models |= {spec("full"): full, spec("retain"): retain}
    models |= {f"interp:{a:g}": interpolate_weights(full, retain, a) for a in ALPHAS}
    splits = eval_splits(load_world(args.preset, args.seed))
    tok = load_tokenizer(resolve_spec(spec("full")))
    work = WorkCache()   # full / retain sweeps shared by every row
    rows = {}
    for name in list(models):
        pool = ModelPool({"model": name, "full": spec("full"), "retain": spec("retain")}, models.__getitem__)
        ctx = build_context(splits, [], tok, pool, EvalSettings(batch_size=args.batch_size, progress=False),
                            KEYS + ["mem_bits_tfidf"], work=work)
        res = evaluate(ctx, KEYS + (["mem_bits_tfidf"] if name == spec("full") else []))
        rows[name] = {k: r.value for k, r in res.items()}
        print(f"{name:45s} " + "  ".join(f"{k} {v:.4f}" for k, v in rows[name].items() if v is not None), flush=True)
    curve = [rows[f"interp:{a:g}"]["mem_bits"] for a in ALPHAS]
    report = {"preset": args.preset, "rows": rows, "alphas": list(ALPHAS), "interpolation_mem_bits": curve,
              "monotone": bool(np.all(np.diff(curve) <= 0)),
              "retain_exactly_zero": rows[spec("retain")]["mem_bits"] == 0.0,
              "n_forget": len(splits["forget"]), "seconds": round(time.time() - t0, 1)}
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
