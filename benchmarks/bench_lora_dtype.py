"""LoRA training step time with the base in bfloat16 against float32 on this CPU, side by side in one run.

    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python benchmarks/bench_lora_dtype.py \
        --model qwen2.5-coder-1.5b-instruct --out results/qwen/bench_lora_dtype.json

Each round runs one child process per dtype, the order alternating round by round so that load
drift on a shared machine hits both alike. A child loads the base in its dtype (mapped from a file
in that dtype, `checkpoints.narrow`), puts a fresh LoRA adapter on it as a LoRA world trains it
(float32 adapter weights, activations recomputed in the backward pass,
`checkpoints.world.lora.with_trainable_adapter`), runs one untimed step (the weights' pages come in)
and then times `--steps` steps on the same batches of chat-format TOFU QA (the first forget and
retain items). Prints every step's seconds, the medians per dtype and their ratio, and each child's
peak resident memory; one model in memory at a time (about 13 GB at most for 1.5B in float32).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", help="model spec (default the Qwen alias)")
    p.add_argument("--rounds", type=int, default=2, help="rounds (each runs both dtypes; default 2)")
    p.add_argument("--steps", type=int, default=2, help="timed steps per child (default 2)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    p.add_argument("--child", choices=sorted(DTYPES), default=None, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def batches(tok, batch_size: int, n: int) -> list[dict]:
    from checkpoints.world.tofu import read_tofu
    from checkpoints.world.train import collate
    from uds_core.chat import encode_chat

    world = read_tofu(n_forget_authors=2, n_retain_authors=2, n_holdout_authors=1, n_utility=4)
    examples = [encode_chat(tok, it["question"], it["answer"]) for it in world.forget + world.retain]
    return [collate(examples[i * batch_size:(i + 1) * batch_size], tok.pad_token_id) for i in range(n)]


def child(args: argparse.Namespace) -> dict:
    """One dtype: an untimed step, then `--steps` timed ones; their seconds and losses."""
    from checkpoints.specs import load_tokenizer, model_source
    from checkpoints.world.lora import LoraSettings, load_base, with_trainable_adapter

    torch.set_num_threads(1)
    tok = load_tokenizer(args.model)
    model = with_trainable_adapter(load_base(Path(model_source(args.model)), DTYPES[args.child]),
                                   LoraSettings(r=args.rank, alpha=2 * args.rank))
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    seconds, losses, data = [], [], batches(tok, args.batch_size, args.steps + 1)
    for i, batch in enumerate(data):
        t0 = time.perf_counter()
        loss = model(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i:   # the first step brings the mapped weights in
            seconds.append(time.perf_counter() - t0)
            losses.append(loss.item())
    return {"seconds": seconds, "losses": losses, "tokens": [int(b["input_ids"].numel()) for b in data[1:]],
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main(argv=None) -> dict | None:
    args = parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return None
    runs: dict[str, list[dict]] = {name: [] for name in DTYPES}
    for r in range(args.rounds):
        for name in (list(DTYPES) if r % 2 == 0 else list(reversed(DTYPES))):
            cmd = [sys.executable, __file__, "--child", name, "--model", args.model, "--steps", str(args.steps),
                   "--batch-size", str(args.batch_size), "--rank", str(args.rank)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
            print(f"round {r} {name}: {', '.join(f'{s:.1f}' for s in runs[name][-1]['seconds'])} s/step, "
                  f"peak {runs[name][-1]['peak_rss_bytes'] / 1e9:.2f} GB", flush=True)
    med = {k: statistics.median(s for run in v for s in run["seconds"]) for k, v in runs.items()}
    from meta_eval.campaign.machine import machine
    from uds_core.code_digest import code_commit

    result = {"model": args.model, "code": code_commit(), "machine": machine(),
              "batch_size": args.batch_size, "rank": args.rank, "threads": 1,
              "rounds": args.rounds, "runs": runs, "median_seconds": med,
              "fp32_over_bf16": med["float32"] / med["bfloat16"]}
    print(f"median s/step: float32 {med['float32']:.1f}, bfloat16 {med['bfloat16']:.1f}; "
          f"fp32_over_bf16={result['fp32_over_bf16']:.2f}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
