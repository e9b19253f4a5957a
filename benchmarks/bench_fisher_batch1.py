"""Fisher diagonals with one backward per item at batch 1, against the spec §4.5 path (a shared
forward of batch 4, one backward per item through it): time and values, side by side in one run.

The batch-1 variant pads each item to its chunk's width, so its forward is the batch-of-4 one row
by row; only the backward changes (it no longer runs through the three other rows). It is not the
product path: this benchmark measures what it would save and how far it moves the Fisher entries
and the three `fisher_masked_*` scores.

    OMP_NUM_THREADS=1 python benchmarks/bench_fisher_batch1.py --preset smol-ci \\
        --model npo_lr3e-5_b01_a1_ep2 [--items N] --json results/smol/bench_fisher_batch1.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from checkpoints.world.store import model_dir, stored_digest, world_dir
from metrics.forward import PassOptions
from metrics.hidden import block_gradients, fisher_diagonal, per_block_mean
from metrics.families.representation import FISHER_FRACTIONS
from metrics.representation import fisher_mask, fisher_masked_score
from uds_core.batching import batches
from uds_core.logprobs import token_logprobs
from uds_core.prompts import PreparedItem, prepare_items


def fisher_batch1(model: torch.nn.Module, items: list[PreparedItem], pad_id: int, chunk: int = 4) -> list[torch.Tensor]:
    """Mean squared per-item gradient of every decoder block, each item alone (batch 1) padded
    to the width of its `chunk`-item group; one flattened tensor per block, as `fisher_diagonal`."""
    with block_gradients(model) as params:
        flat = [p for ps in params for p in ps]
        acc = [[torch.zeros_like(p) for p in ps] for ps in params]
        for idx in batches(len(items), chunk):
            width = max(len(items[i].input_ids) for i in idx)
            for it in (items[i] for i in idx):
                n = len(it.input_ids)
                ids = torch.tensor([list(it.input_ids) + [pad_id] * (width - n)])
                mask = torch.tensor([[1] * n + [0] * (width - n)])
                keep = torch.zeros((1, width), dtype=torch.bool)
                keep[0, list(it.eval_positions)] = True
                rows = model(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=keep).logits
                loss = -token_logprobs(rows.float(), torch.tensor(it.target_ids)).mean()
                for a, g in zip((a for accs in acc for a in accs), torch.autograd.grad(loss, flat)):
                    a.add_(g.square())
    return per_block_mean(acc, len(items))


def timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="smol-ci")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="npo_lr3e-5_b01_a1_ep2", help="the unlearned model scored")
    ap.add_argument("--items", type=int, default=None, help="the first N scored items (default all)")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    world = world_dir(a.preset, a.seed)
    tok = AutoTokenizer.from_pretrained(world / "tokenizer")
    items = prepare_items(json.loads((world / "data" / "uds_data.json").read_text()), tok)[0][:a.items]
    seconds, fishers = {"batch4": 0.0, "batch1": 0.0}, {}
    for name in ("full", "retain", a.model):
        folder = model_dir(a.preset, a.seed, name)
        if stored_digest(folder) is None:   # never build here: a campaign may be building in the same world
            raise SystemExit(f"no built model {name} in {world}: build it first (uds world build --preset {a.preset})")
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        ref, t_ref = timed(lambda: fisher_diagonal(model, items, PassOptions(4, tok.pad_token_id, progress=False)))
        alt, t_alt = timed(lambda: fisher_batch1(model, items, tok.pad_token_id))
        seconds["batch4"] += t_ref
        seconds["batch1"] += t_alt
        fishers[name] = (ref, alt)
        print(f"{name}: batch-4 path {t_ref:.1f} s, batch-1 backward {t_alt:.1f} s", flush=True)
    rel = max(float((r - b).abs().max() / r.abs().max()) for r2 in fishers.values() for r, b in zip(*r2))
    identical = all(torch.equal(r, b) for r2 in fishers.values() for r, b in zip(*r2))
    scores = {}
    for p in FISHER_FRACTIONS:
        s = [fisher_masked_score([fisher_mask(fr, ff, p) for fr, ff in zip(fishers["retain"][i], fishers["full"][i])],
                                 fishers[a.model][i]) for i in (0, 1)]
        scores[f"fisher_masked_{p:g}"] = {"batch4": s[0], "batch1": s[1], "abs_diff": abs(s[0] - s[1])}
    out = {"preset": a.preset, "model": a.model, "items": len(items), "threads": torch.get_num_threads(),
           "seconds": {k: round(v, 2) for k, v in seconds.items()},
           "speedup": round(seconds["batch4"] / seconds["batch1"], 3), "entries_identical": identical,
           "max_rel_entry_diff": rel, "scores": scores}
    print(json.dumps(out, indent=1))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
