"""bfloat16 through float32 kernels against torch's own bfloat16 and against float32, side by side.

    OMP_NUM_THREADS=1 python benchmarks/bench_bf16_products.py --out results/qwen/bench_bf16_products.json

Two decoder blocks of Qwen2.5-1.5B's shape (random weights, SDPA attention, seeded), in three
arms: float32; bfloat16 on torch's own kernels; bfloat16 inside `uds_core.float32_products`
(what `uds` uses on a CPU without bfloat16 kernels). Each round times, per arm, a no-grad forward
(what scoring does) and a training step (forward and backward, the attention and MLP weights
trainable), the arms' order alternating round by round. Prints the medians, the ratios against
torch's own bfloat16 and float32, and the largest |difference| of the bfloat16 arms' losses from
float32's. On a CPU with bfloat16 kernels the native arm is the fast one and the ratio says so.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from uds_core import atomic  # noqa: E402
from uds_core.float32_products import float32_products  # noqa: E402

ARMS = ("float32", "bfloat16", "bfloat16-float32-products")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--tokens", type=int, default=64, help="tokens per sequence (default 64)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--out", default=None, help="write the numbers as JSON here")
    return p.parse_args(argv)


def models(layers: int) -> dict[str, torch.nn.Module]:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=1536, intermediate_size=8960, num_attention_heads=12, num_key_value_heads=2,
                      num_hidden_layers=layers, vocab_size=4096, tie_word_embeddings=False)
    torch.manual_seed(0)
    base = Qwen2ForCausalLM._from_config(cfg, attn_implementation="sdpa", dtype=torch.float32)
    for name, p in base.named_parameters():
        p.requires_grad_(".layers." in name and "norm" not in name)
    bf16 = copy.deepcopy(base).to(torch.bfloat16)
    return {"float32": base, "bfloat16": bf16, "bfloat16-float32-products": bf16}


def time_arm(model: torch.nn.Module, arm: str, ids: torch.Tensor) -> dict:
    ctx = float32_products() if arm.endswith("float32-products") else contextlib.nullcontext()
    with ctx:
        t0 = time.perf_counter()
        with torch.no_grad():
            model(ids)
        forward = time.perf_counter() - t0
        model.zero_grad(set_to_none=True)
        t0 = time.perf_counter()
        loss = model(ids, labels=ids).loss
        loss.backward()
        step = time.perf_counter() - t0
    return {"forward": forward, "step": step, "loss": loss.item()}


def main(argv=None) -> dict:
    args = parse_args(argv)
    torch.set_num_threads(1)
    arms = models(args.layers)
    ids = torch.randint(0, 4096, (args.batch, args.tokens), generator=torch.Generator().manual_seed(1))
    for arm in ARMS:   # untimed: kernels chosen, pages touched
        time_arm(arms[arm], arm, ids[:, :8])
    runs: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for r in range(args.rounds):
        for arm in (ARMS if r % 2 == 0 else tuple(reversed(ARMS))):
            runs[arm].append(time_arm(arms[arm], arm, ids))
            print(f"round {r} {arm}: forward {runs[arm][-1]['forward']:.2f} s, step {runs[arm][-1]['step']:.2f} s",
                  flush=True)
    med = {arm: {k: statistics.median(run[k] for run in runs[arm]) for k in ("forward", "step")} for arm in ARMS}
    ours, own, f32 = (med[a] for a in ("bfloat16-float32-products", "bfloat16", "float32"))
    ratios = {k: {"native_bf16_over_ours": own[k] / ours[k], "ours_over_float32": ours[k] / f32[k]}
              for k in ("forward", "step")}
    loss_diff = {arm: max(abs(a["loss"] - b["loss"]) for a, b in zip(runs[arm], runs["float32"]))
                 for arm in ARMS[1:]}
    from meta_eval.campaign.machine import machine
    from uds_core.code_digest import code_commit

    result = {"code": code_commit(), "machine": machine(), "torch_cpu_capability":
              torch.backends.cpu.get_cpu_capability(), "layers": args.layers, "batch": args.batch,
              "tokens": args.tokens, "threads": 1, "rounds": args.rounds, "runs": runs, "median_seconds": med,
              "ratios": ratios, "max_abs_loss_diff_from_float32": loss_diff}
    for k in ("forward", "step"):
        print(f"{k}: torch's bfloat16 / float32 products {ratios[k]['native_bf16_over_ours']:.1f}x; "
              f"float32 products / float32 {ratios[k]['ours_over_float32']:.2f}x")
    print(f"largest |loss - float32 loss|: {', '.join(f'{a} {v:.2e}' for a, v in loss_diff.items())}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        atomic.write_json(args.out, result, indent=1)
    return result


if __name__ == "__main__":
    main()
