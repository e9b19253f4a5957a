"""LoRA training step time in bfloat16 against float32 on this CPU, side by side in one run.

    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python benchmarks/bench_lora_dtype.py \
        --model qwen2.5-coder-1.5b-instruct --out docs/qwen/bench_lora_dtype.json

The model is loaded in float32 and in bfloat16 (each mapped from a file in its dtype,
`checkpoints.narrow`); each gets the same fresh LoRA adapter as a LoRA world trains it (float32
adapter weights, activations recomputed in the backward pass). The same batches of chat-format TOFU QA (the
forget and retain items of the world's first authors) are trained on both, the dtypes alternating
step by step, so that load drift on a shared machine hits both alike. Prints the seconds of every
step, the median per dtype and their ratio, and the largest loss difference of the first step
(the two start at the same adapter, so that difference is the rounding of the bf16 base alone).
Memory: both models at once (about 11 GB of mapped weights for a 1.5B model): run it under the big-memory lock.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

import torch


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-1.5b-instruct", help="model spec (default the Qwen alias)")
    p.add_argument("--steps", type=int, default=3, help="steps per dtype (default 3)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    return p.parse_args(argv)


def batches(tok, batch_size: int, steps: int) -> list[dict]:
    from checkpoints.world.tofu import read_tofu
    from checkpoints.world.train import collate
    from uds_core.chat import encode_chat

    world = read_tofu(n_forget_authors=2, n_retain_authors=2, n_holdout_authors=1, n_utility=4)
    examples = [encode_chat(tok, it["question"], it["answer"]) for it in world.forget + world.retain]
    return [collate(examples[i * batch_size:(i + 1) * batch_size], tok.pad_token_id) for i in range(steps)]


def with_adapter(model, rank: int):
    """The world's training setup: a fresh trainable LoRA adapter (float32) on the frozen base,
    activations recomputed in the backward pass (`checkpoints.world.lora.with_trainable_adapter`)."""
    from checkpoints.world.lora import LoraSettings, with_trainable_adapter

    return with_trainable_adapter(model, LoraSettings(r=rank, alpha=2 * rank))


def step(model, opt, batch) -> tuple[float, float]:
    t0 = time.perf_counter()
    loss = model(**batch).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return time.perf_counter() - t0, loss.item()


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    from checkpoints.specs import load_tokenizer, model_source
    from checkpoints.world.lora import load_base

    tok = load_tokenizer(args.model)
    folder = model_source(args.model)   # both mapped from files in their own dtype: no copy in memory
    models = {name: with_adapter(load_base(folder, dtype).train(), args.rank)
              for name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16))}
    opts = {k: torch.optim.AdamW([p for p in m.parameters() if p.requires_grad], lr=1e-4) for k, m in models.items()}
    for m in models.values():
        m.train()
    data = batches(tok, args.batch_size, args.steps)
    seconds: dict[str, list[float]] = {k: [] for k in models}
    losses: dict[str, list[float]] = {k: [] for k in models}
    for i, batch in enumerate(data):
        order = list(models) if i % 2 == 0 else list(reversed(models))
        for name in order:
            s, loss = step(models[name], opts[name], batch)
            seconds[name].append(s)
            losses[name].append(loss)
            print(f"step {i} {name}: {s:.1f} s, loss {loss:.4f}, tokens {batch['input_ids'].numel()}", flush=True)
    med = {k: statistics.median(v) for k, v in seconds.items()}
    result = {"model": args.model, "batch_size": args.batch_size, "rank": args.rank, "threads": args.threads,
              "tokens": [int(b["input_ids"].numel()) for b in data], "seconds": seconds, "losses": losses,
              "median_seconds": med, "fp32_over_bf16": med["float32"] / med["bfloat16"],
              "first_loss_abs_diff": abs(losses["float32"][0] - losses["bfloat16"][0]),
              "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}
    print(f"median s/step: float32 {med['float32']:.1f}, bfloat16 {med['bfloat16']:.1f}; "
          f"fp32_over_bf16={result['fp32_over_bf16']:.2f} first_loss_abs_diff={result['first_loss_abs_diff']:.2e}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
