"""Memory of the models a command holds: what they will need (said before loading, with the
numbers, when it is more than the machine has), and giving it back when one is dropped."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
from pathlib import Path

import torch

from uds_core.errors import UdsInputError

GB = 1e9
# What a run holds besides the weights: the interpreter, torch, the tokenizer, activations of a
# batch (measured: `uds score` of two 1.24B models peaked 0.9 GB above their weights on CPU, in
# float32 and in bfloat16, batch 8).
OVERHEAD_BYTES = int(1.0 * GB)
SMALL_BYTES = int(0.5 * GB)   # models whose weights take less are not checked (the overhead is a guess)
SKIP_ENV = "UDS_MEMORY_CHECK"   # "0": no check (a shared machine whose free memory moves)


def release_memory() -> None:
    """Collect dropped objects and hand freed heap pages back to the system (glibc's malloc_trim),
    and the CUDA allocator's cached blocks: a dropped model's memory leaves the process's RSS."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):   # not glibc
            pass


def available_bytes(device: str) -> int | None:
    """Memory a new allocation can use: MemAvailable on CPU (Linux), free memory of the current
    CUDA device; None when unknown."""
    if device == "cuda" and torch.cuda.is_available():
        return int(torch.cuda.mem_get_info()[0])
    meminfo = Path("/proc/meminfo")
    if device == "cpu" and meminfo.is_file():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return None


def need_bytes(n_params: int, dtype: torch.dtype, n_models: int) -> int:
    """Estimated memory of `n_models` models of `n_params` parameters each held in `dtype`."""
    itemsize = torch.empty(0, dtype=dtype).element_size()
    return int(n_models * n_params * itemsize) + OVERHEAD_BYTES


def check_fits(what: str, n_params: int, dtype: torch.dtype, n_models: int, device: str,
               available: int | None = None) -> None:
    """UdsInputError before loading when `n_models` models of `n_params` parameters in `dtype` need
    more memory than `device` has available (`available`: bytes, default measured now)."""
    need = need_bytes(n_params, dtype, n_models)
    if os.environ.get(SKIP_ENV) == "0" or need - OVERHEAD_BYTES < SMALL_BYTES:
        return
    have = available_bytes(device) if available is None else available
    if have is not None and need > have:
        dtype_name = str(dtype).replace("torch.", "")
        # on a CPU, bfloat16 halves the memory but is fast only where torch has kernels for it
        slow = " (fast on a CPU only with AVX-512 BF16 or AMX kernels)" if device == "cpu" else ""
        hint = f"try --dtype bfloat16{slow}, or " if dtype == torch.float32 else ""
        raise UdsInputError(f"{what} needs about {need / GB:.1f} GB for {n_models} model{'s' * (n_models != 1)} of "
                            f"{n_params / 1e9:.2f}B parameters in {dtype_name}, but {device} has "
                            f"{have / GB:.1f} GB available ({hint}{SKIP_ENV}=0 to run anyway)")


def count_parameters(config) -> int:
    """Parameters of the causal LM a transformers config describes (tied ones once), counted on
    the meta device: nothing is allocated."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())   # parameters() yields a tied tensor once
