"""`--device` and `--dtype`, as every command that loads models spells and resolves them.

Kept apart from `uds_core.loading` so that registering a command imports neither torch nor
transformers (`uds audit --help` stays instant).
"""

from __future__ import annotations

import argparse


def add_device_args(p: argparse.ArgumentParser, dtype: bool = True) -> None:
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    if dtype:
        p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")


def device_and_dtype(args: argparse.Namespace):
    """(device name, torch dtype) of a parsed command line; unknown names are bad input. bfloat16
    on a CPU without bfloat16 kernels computes its products through float32 kernels for the rest
    of the process (`uds.cpu_bf16`)."""
    from uds_core.loading import resolve_device, resolve_dtype

    from uds.cpu_bf16 import use_for_process

    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    use_for_process(device, dtype)
    return device, dtype
