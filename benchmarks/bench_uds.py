"""UDS engine benchmark: the fast engine against the straightforward algorithm, side by side.

    OMP_NUM_THREADS=1 python benchmarks/bench_uds.py --preset small

Both algorithms score the same models and items with the same batching (`EngineSettings`
differing only in `algorithm`), interleaved round by round (the order alternates) so that load
drift on a shared machine hits both alike. Prints per-round times and ratios, examples/s, the
largest differences of per-example UDS and per-layer deltas, peak memory of each, the FLOPs of
each against the lower bound, and ends with
`speedup=<x> max_abs_uds_diff=<x> max_abs_delta_diff=<x>`.

Also prints each algorithm's time as a multiple of a measured floor: the least work a UDS run
needs (`lower_bound_flops`) at the FLOP rate this machine reaches on plain forward passes of the
full model over the same items.

Presets: `smol` uses the real SmolLM2 world's full, retain and NPO models (30 layers) on 120
annotated forget10 items; `test`, `small`, `tofu` use that tiny world's full and retain models (built models
when present, else random weights of the preset's shape, said so in the output) with
unlearned = the parameter-wise midpoint of the two; `llama1b` is a random Llama-3.2-1B-shaped
model with small perturbations of it as retain and unlearned, on the annotated TOFU forget10
items tokenized with the tofu world's tokenizer (see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from uds_core import capture, engine, suffix
from uds_core.engine import EngineSettings, TargetRuns, UdsModels, UdsResult, compute_uds
from uds_core.prompts import Examples, PreparedItem, prepare_items

ALGORITHMS = ("naive", "fast")
RUN_KINDS = ("full", "s2_only", "s2_kept")   # the three timed runs of a round, in run_rounds' tuple order


@dataclass
class Setup:
    """Models and items of one benchmark, and a line saying where they came from."""
    full: nn.Module
    retain: nn.Module
    unlearned: nn.Module
    items: list[PreparedItem]
    pad_id: int
    origin: str


# ---------------------------------------------------------------------------------------------
# Models and data


def midpoint(a: nn.Module, b: nn.Module) -> nn.Module:
    """Parameter-wise (a + b) / 2: an "unlearned" model between full and retain."""
    out = copy.deepcopy(a)
    with torch.no_grad():
        for p, pb in zip(out.parameters(), b.parameters()):
            p.add_(pb).mul_(0.5)
    return out


def perturbed_sharing(model: nn.Module, scale: float, seed: int, keep: Callable[[str], bool]) -> nn.Module:
    """A copy whose parameters named by `keep` are shared (no memory) and the others moved by
    Gaussian noise of `scale` times their standard deviation (fits three 1B models in RAM)."""
    memo = {id(p): p for name, p in model.named_parameters() if keep(name)}
    out = copy.deepcopy(model, memo)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in out.named_parameters():
            if not keep(name):
                noise = torch.randn(p.shape, generator=gen, dtype=torch.float32).to(p.device)
                p.add_((noise * scale * p.float().std()).to(p.dtype))
    return out


def world_setup(preset: str, n_examples: int | None, device: str, dtype: torch.dtype, seed: int) -> Setup:
    from checkpoints.world.store import ensure_tokenizer, ensure_world_data, init_model, model_dir
    from checkpoints.world.presets import get_preset
    from transformers import LlamaForCausalLM

    tok = ensure_tokenizer(preset, 0)
    records = _load_records(ensure_world_data(preset, 0) / "uds_data.json", n_examples)
    folders = {name: model_dir(preset, 0, name) for name in ("full", "retain")}
    if all((f / "config.json").is_file() for f in folders.values()):
        full, retain = (LlamaForCausalLM.from_pretrained(folders[n], dtype=dtype) for n in ("full", "retain"))
        origin = f"tiny world {preset}: trained full and retain"
    else:
        full = init_model(get_preset(preset), tok, seed).to(dtype)
        retain = perturbed_sharing(full, 0.5, seed + 1, keep=lambda n: False)
        origin = f"tiny world {preset} NOT BUILT: random weights of its shape (timings are shape-bound)"
    full, retain = (m.to(device).eval() for m in (full, retain))
    items = prepare_items(records, tok)[0]
    return Setup(full, retain, midpoint(full, retain), items, tok.pad_token_id, origin + "; unlearned = midpoint")


def smol_setup(n_examples: int | None, device: str, dtype: torch.dtype, seed: int,
               unlearned: str = "npo_lr3e-5_b01_a1_ep5") -> Setup:
    """The `smol` world (SmolLM2-135M-Instruct, 30 layers): its trained full, retain and one real
    unlearned model, on the annotated TOFU forget10 items (all 367 align to its tokenizer; only the
    world's first 37 are about its forget authors: the timing does not depend on that)."""
    from checkpoints.specs import default_tofu_annotated
    from checkpoints.world.build import ensure_model
    from checkpoints.world.store import ensure_tokenizer
    from transformers import LlamaForCausalLM

    tok = ensure_tokenizer("smol", 0)
    records = _load_records(default_tofu_annotated(), n_examples)
    full, retain, unl = (LlamaForCausalLM.from_pretrained(ensure_model("smol", 0, n), dtype=dtype).to(device).eval()
                         for n in ("full", "retain", unlearned))
    origin = f"smol world (SmolLM2-135M-Instruct): trained full, retain and {unlearned}; TOFU forget10 annotated items"
    return Setup(full, retain, unl, prepare_items(records, tok)[0], tok.pad_token_id, origin)


def llama1b_setup(n_examples: int | None, device: str, dtype: torch.dtype, seed: int) -> Setup:
    from checkpoints.world.store import ensure_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM
    from checkpoints.specs import default_tofu_annotated

    tok = ensure_tokenizer("tofu", 0)
    records = _load_records(default_tofu_annotated(), n_examples)
    cfg = LlamaConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                      num_attention_heads=32, num_key_value_heads=8, head_dim=64, tie_word_embeddings=True,
                      max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                      rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    with torch.device(device):
        full = LlamaForCausalLM._from_config(cfg, dtype=dtype, attn_implementation="sdpa").eval()
    # retain / unlearned move the attention output and MLP down projections of every layer
    moved = lambda name: name.endswith(("o_proj.weight", "down_proj.weight"))  # noqa: E731
    retain = perturbed_sharing(full, 0.05, seed + 1, keep=lambda n: not moved(n))
    unlearned = perturbed_sharing(full, 0.025, seed + 2, keep=lambda n: not moved(n))
    items = prepare_items(records, tok)[0]
    origin = ("random Llama-3.2-1B shape (16 x 2048, 32/8 heads, 8192 MLP, 128256 vocab, tied); "
              "retain/unlearned = o_proj/down_proj noise 5%/2.5%; TOFU forget10 via the tofu-world tokenizer")
    return Setup(full, retain, unlearned, items, tok.pad_token_id, origin)


def _load_records(path: Path, n_examples: int | None) -> list[dict]:
    import json

    records = json.loads(Path(path).read_text())
    return records[:n_examples] if n_examples else records


# ---------------------------------------------------------------------------------------------
# Measuring


class PeakMemory:
    """Peak memory growth during a `with` block: CUDA allocator peak on GPU, else resident set
    size sampled every 2 ms (freed heap handed back to the OS first, so runs don't mask each other)."""

    def __init__(self, device: str):
        self.device, self.peak, self._stop = device, 0, threading.Event()

    def __enter__(self) -> "PeakMemory":
        if self.device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
            return self
        _trim_heap()
        self.base = self.top = _rss()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.top = max(self.top, _rss())

    def __exit__(self, *exc) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()
            self.peak = torch.cuda.max_memory_allocated() - self.base
            return
        self._stop.set()
        self.thread.join()
        self.peak = max(self.top, _rss()) - self.base


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _trim_heap() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def timed_run(setup: Setup, settings: EngineSettings, device: str, s1=None, runs=None) -> tuple[float, UdsResult]:
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    result = compute_uds(UdsModels(setup.full, setup.retain, setup.unlearned),
                         Examples(setup.items, pad_id=setup.pad_id), settings, s1=s1, runs=runs)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, result


# ---------------------------------------------------------------------------------------------
# FLOPs, counted from the config and the token counts (1 multiply-add = 2 FLOPs)


@dataclass(frozen=True)
class Shape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    inter: int
    vocab: int

    @property
    def linear(self) -> int:
        """Multiply-adds of one block's projections and MLP on one token."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return self.hidden * (2 * q + 2 * kv) + 3 * self.hidden * self.inter

    def attention(self, keys: int) -> int:
        """Multiply-adds of one query over `keys` keys (scores and weighted values)."""
        return 2 * self.heads * self.head_dim * keys

    @property
    def head(self) -> int:
        return self.hidden * self.vocab


def shape_of(config) -> Shape:
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return Shape(config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
                 config.num_key_value_heads, head_dim, config.intermediate_size, config.vocab_size)


def _capture_bound(s: Shape, items: list[PreparedItem]) -> int:
    """The least a capture pass of one model needs: every block but the last over each example's
    real tokens up to its last scored position (causal attention); the last block only its
    key/value projections there and the rest at the scored positions."""
    kv_proj = 2 * s.hidden * s.kv_heads * s.head_dim
    total = 0
    for it in items:
        n, a, t = it.eval_positions.stop, it.eval_positions.start, len(it.eval_positions)
        total += (s.layers - 1) * (n * s.linear + s.attention(n * (n + 1) // 2))
        total += n * kv_proj + t * (s.linear - kv_proj) + s.attention(sum(a + u + 1 for u in range(t)))
    return total


def naive_flops(s: Shape, items: list[PreparedItem], batch_size: int, n_sources: int) -> int:
    """Per batch: 1 unpatched + per source (1 capture + L patched) whole forwards of the padded
    batch (masked scores are computed too), logits at every position."""
    total = 0
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        b, w = len(chunk), max(len(it.input_ids) for it in chunk)
        one = s.layers * (b * w * s.linear + b * s.attention(w * w)) + b * w * s.head
        total += one * (1 + n_sources * (1 + s.layers))
    return 2 * total


def fast_flops(s: Shape, setup: Setup, settings: EngineSettings, n_sources: int) -> int:
    """What the fast engine computes, from its own layouts: 1 + n_sources capture passes over the
    packed rows (masked attention over each row, logits of one slot, the last block's MLP at the
    sites only), the baseline head at the sites, and per source the stacked suffix passes."""
    total, layers = 0, list(range(s.layers))
    mlp = 3 * s.hidden * s.inter
    for _, group in engine._batch_groups(setup.items, settings, s.layers):
        for chunk in group:
            layout = capture.capture_layout(chunk, setup.pad_id, setup.full, "cpu")
            rows, width = layout.input_ids.shape
            sites = len(layout.flat)
            one = s.layers * (rows * width * s.linear + rows * s.attention(width * width)) + rows * s.head
            total += (1 + n_sources) * (one - (rows * width - sites) * mlp) + sites * s.head
        win = suffix.windows_of([it for chunk in group for it in chunk], "cpu")
        total += n_sources * _suffix_macs(s, win, layers, settings.max_suffix_rows, setup.full.config)
    return 2 * total


def _suffix_macs(s: Shape, win, layers: list[int], max_rows: int, config) -> int:
    """The stacked suffix passes of one group of batches and one source, with their packing."""
    total, n_ex = 0, len(win.lengths)
    per_group = max(1, max_rows // len(layers))
    for g0 in range(0, n_ex, per_group):
        stack = suffix.make_stack(win, list(range(g0, min(n_ex, g0 + per_group))), layers, "block", config)
        p = stack.packing
        for m in range(min(stack.entry(l) for l in layers), s.layers):
            slots = stack.entered(m) * p.width  # per row: one copy of the packed windows per entered layer
            total += p.rows * slots * (s.linear + s.attention(p.prefix + slots))
        total += len(layers) * int(p.real.sum()) * s.head
    return total


def lower_bound_flops(s: Shape, items: list[PreparedItem], n_sources: int) -> int:
    """One capture pass per model (see `_capture_bound`), the baseline head at the scored
    positions, and per source and (example, layer) the window through the blocks above the layer
    (attending to its prefix) and the head."""
    total = (1 + n_sources) * _capture_bound(s, items) + sum(len(it.eval_positions) for it in items) * s.head
    for it in items:
        a, t = it.eval_positions.start, len(it.eval_positions)
        window = t * s.linear + s.attention(sum(a + u + 1 for u in range(t)))
        total += n_sources * sum((s.layers - 1 - l) * window + t * s.head for l in range(s.layers))
    return 2 * total


# ---------------------------------------------------------------------------------------------
# Comparing and reporting


def measured_floor(setup: Setup, s: Shape, batch_size: int, device: str, repeats: int = 3) -> tuple[float, float]:
    """(floor seconds, dense FLOP rate) of one full UDS run: the least work it needs
    (`lower_bound_flops`: one capture pass per model, patched windows only through the blocks
    above each layer) at the rate this machine runs plain forward passes of the full model over the
    same items (median of `repeats` timings, batches padded as the engine pads them)."""
    from uds_core.engine import chunks, make_batch

    def one_pass() -> float:
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            for c in chunks(setup.items, batch_size):
                b = make_batch(c, device, setup.pad_id)
                setup.full(input_ids=b.input_ids, attention_mask=b.attention_mask)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - t0

    one_pass()   # warm-up
    seconds = statistics.median(one_pass() for _ in range(repeats))
    padded = sum(len(c) * max(len(it.input_ids) for it in c) for c in chunks(setup.items, batch_size))
    dense = 2 * (s.layers * (padded * s.linear + sum(
        len(c) * s.attention(max(len(it.input_ids) for it in c) ** 2) for c in chunks(setup.items, batch_size)))
                 + padded * s.head)
    rate = dense / seconds
    return lower_bound_flops(s, setup.items, 2) / rate, rate


def uds_diff(a: UdsResult, b: UdsResult) -> tuple[float, int, bool]:
    """(max |UDS_a - UDS_b| over examples scored by both, number of those, same scored set?)."""
    both = [(x, y) for x, y in zip(a.uds, b.uds) if x is not None and y is not None]
    same_set = [x is None for x in a.uds] == [y is None for y in b.uds]
    return (max((abs(x - y) for x, y in both), default=0.0), len(both), same_set)


def delta_diff(a: UdsResult, b: UdsResult) -> float:
    """Largest |Δ_a - Δ_b| over S1 and S2, every example and layer."""
    diffs = [np.abs(a.s1.deltas - b.s1.deltas), np.abs(a.s2.deltas - b.s2.deltas)]
    return float(max((d.max() for d in diffs if d.size), default=0.0))


def peak_memories(setup: Setup, settings: dict[str, EngineSettings], device: str) -> dict[str, int]:
    """Peak memory growth of one full UDS run per algorithm, in untimed runs (the RSS sampler
    thread changes how fast the main thread runs on a loaded machine)."""
    memory = {}
    for alg in ALGORITHMS[::-1]:
        with PeakMemory(device) as peak:
            timed_run(setup, settings[alg], device)
        memory[alg] = peak.peak
    return memory


def run_rounds(setup: Setup, settings: dict[str, EngineSettings], device: str, rounds: int):
    """Interleaved rounds. times[alg] = [(full UDS s, S2-only s, S2-only with the target's
    captures kept s)] (the naive algorithm has no captures to keep: its S2-only time is reused)
    and the first round's results."""
    times: dict[str, list[tuple[float, float, float]]] = {alg: [] for alg in ALGORITHMS}
    results: dict[str, UdsResult] = {}
    for r in range(rounds):
        for alg in (ALGORITHMS if r % 2 == 0 else ALGORITHMS[::-1]):
            t_full, res = timed_run(setup, settings[alg], device)
            runs = TargetRuns() if alg == "fast" else None
            t_s2, _ = timed_run(setup, settings[alg], device, s1=res.s1, runs=runs)
            t_kept = timed_run(setup, settings[alg], device, s1=res.s1, runs=runs)[0] if runs else t_s2
            times[alg].append((t_full, t_s2, t_kept))
            results.setdefault(alg, res)
            kept = f"   S2 with target captures kept {t_kept:8.2f} s" if runs else ""
            print(f"  round {r + 1} {alg:5s}: full UDS {t_full:8.2f} s   S2 only (S1 cached) {t_s2:8.2f} s{kept}",
                  flush=True)
    return times, results


def report(setup: Setup, settings: EngineSettings, times, results, memory, s: Shape) -> dict:
    """Prints the comparison and returns it as a dict (the `--out` file's body)."""
    n = len(setup.items)
    ratio = lambda k: [nv[k] / fv[k] for nv, fv in zip(times["naive"], times["fast"])]  # noqa: E731
    ratios = [ratio(0), ratio(1), ratio(2)]
    medians = {alg: dict(zip(RUN_KINDS, (statistics.median(t[k] for t in times[alg]) for k in range(3))))
               for alg in ALGORITHMS}
    for alg in ALGORITHMS:
        med = list(medians[alg].values())
        print(f"throughput {alg:5s}: full UDS {n / med[0]:9.2f} examples/s ({med[0]:.2f} s), "
              f"S2 only {n / med[1]:9.2f} examples/s ({med[1]:.2f} s)"
              + (f", S2 with target captures kept {n / med[2]:9.2f} examples/s" if alg == "fast" else ""))
    labels = ("full UDS (S1 + S2)", "S2 only (S1 cached)", "S2 only, target captures kept")
    print("speedup, median over rounds of naive time / fast time: " + "; ".join(
        f"{lab} {statistics.median(rs):.2f}x (rounds {', '.join(f'{x:.2f}' for x in rs)})"
        for lab, rs in zip(labels, ratios)))
    d_uds, n_both, same = uds_diff(results["naive"], results["fast"])
    d_delta = delta_diff(results["naive"], results["fast"])
    print(f"max |UDS fast - naive| per example: {d_uds:.3g} over {n_both} scored (same scored set: {same}); "
          f"mean UDS naive {results['naive'].mean:.6f} fast {results['fast'].mean:.6f}")
    print(f"max |delta fast - naive| over S1 and S2, all examples x layers: {d_delta:.3g}")
    print("peak memory growth during one full UDS run: " + ", ".join(
        f"{alg} {memory[alg] / 2**20:.1f} MiB" for alg in ALGORITHMS))
    flops = {"naive": naive_flops(s, setup.items, settings.batch_size, 2),
             "fast": fast_flops(s, setup, settings, 2),
             "lower bound": lower_bound_flops(s, setup.items, 2)}
    print("FLOPs per full UDS run: " + ", ".join(f"{k} {v:.3g}" for k, v in flops.items())
          + f"; fast / lower bound {flops['fast'] / flops['lower bound']:.2f}, "
          f"naive / fast {flops['naive'] / flops['fast']:.2f}")
    return {"examples": n, "rounds": {alg: [dict(zip(RUN_KINDS, t)) for t in times[alg]] for alg in ALGORITHMS},
            "median_seconds": medians,
            "speedup": dict(zip(RUN_KINDS, (statistics.median(rs) for rs in ratios))),
            "max_abs_uds_diff": d_uds if same else float("inf"), "scored_both": n_both, "same_scored_set": same,
            "max_abs_delta_diff": d_delta,
            "mean_uds": {alg: results[alg].mean for alg in ALGORITHMS},
            "peak_memory_mib": {alg: memory[alg] / 2**20 for alg in ALGORITHMS} if any(memory.values()) else None,
            "flops": flops}


def report_floor(setup: Setup, s: Shape, medians: dict[str, dict[str, float]], batch_size: int, device: str) -> dict:
    """Each algorithm's median full-UDS time (`report`'s `median_seconds`) as a multiple of the
    measured floor (printed, and returned with the floor in seconds and the plain-forward rate in FLOP/s)."""
    floor, rate = measured_floor(setup, s, batch_size, device)
    med = {alg: medians[alg]["full"] for alg in ALGORITHMS}
    print(f"floor (least work at this machine's plain-forward rate, {rate / 1e9:.1f} GFLOP/s): {floor:.2f} s; "
          + ", ".join(f"{alg} {med[alg] / floor:.1f}x of floor" for alg in ALGORITHMS))
    return {"floor_seconds": floor, "forward_flop_rate": rate,
            "x_of_floor": {alg: med[alg] / floor for alg in ALGORITHMS}}


def write_result(path: Path, args: argparse.Namespace, setup: Setup, s: Shape, out: dict) -> None:
    """The run's measurements with what they were measured on, as JSON."""
    import json
    import platform

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    body = {"preset": args.preset, "origin": setup.origin, "device": args.device, "dtype": args.dtype,
            "threads": torch.get_num_threads(), "batch_size": args.batch_size, "layers": s.layers,
            "hidden": s.hidden, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": {"cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__}, **out}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(body, indent=1) + "\n")
    print(f"wrote {path}")


def float64_check(setup: Setup, settings: dict[str, EngineSettings], n: int, device: str) -> dict:
    """Both algorithms (float32, as benchmarked) on the first n items against the straightforward
    algorithm run on float64 copies of the models: how far each float32 result is from the exact
    value, i.e. whether the fast path's gap to the naive one is the scale of float32 rounding noise.
    Printed, and returned as the `--out` file's `float64_check` entry."""
    items = setup.items[:n]
    exact_models = [copy.deepcopy(m).double() for m in (setup.full, setup.retain, setup.unlearned)]
    t0 = time.perf_counter()
    exact = timed_run(Setup(*exact_models, items, setup.pad_id, ""), settings["naive"], device)[1]
    seconds = {"naive_float64": time.perf_counter() - t0}
    del exact_models
    part = Setup(setup.full, setup.retain, setup.unlearned, items, setup.pad_id, "")
    runs = {}
    for alg in ALGORITHMS:
        seconds[alg], runs[alg] = timed_run(part, settings[alg], device)
    vs_exact = {}
    for alg in ALGORITHMS:
        d_uds, _, same = uds_diff(runs[alg], exact)
        vs_exact[alg] = {"max_abs_delta": delta_diff(runs[alg], exact), "max_abs_uds": d_uds,
                         "same_scored_set": same, "mean_uds": runs[alg].mean}
    d_uds, n_both, same = uds_diff(runs["naive"], runs["fast"])
    d_delta = delta_diff(runs["naive"], runs["fast"])
    print(f"float64 reference, first {len(items)} examples ({n_both} scored): max |delta - exact| "
          + ", ".join(f"{alg} {vs_exact[alg]['max_abs_delta']:.3g}" for alg in ALGORITHMS)
          + "; max |UDS - exact| " + ", ".join(f"{alg} {vs_exact[alg]['max_abs_uds']:.3g}" for alg in ALGORITHMS)
          + f"; fast vs naive: |delta| {d_delta:.3g}, |UDS| {d_uds:.3g}")
    return {"examples": len(items), "scored": n_both, "mean_uds_exact": exact.mean, "vs_exact": vs_exact,
            "fast_vs_naive": {"max_abs_delta": d_delta, "max_abs_uds": d_uds, "same_scored_set": same},
            "seconds": seconds}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", choices=("test", "small", "tofu", "smol", "llama1b"), default="small")
    p.add_argument("--n-examples", type=int, default=None,
                   help="first N records (default: all; llama1b: 4; smol: 120 of forget10's 367)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--rounds", type=int, default=None, help="interleaved timing rounds (default 3; llama1b: 1)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-memory", action="store_true", help="skip the (untimed) peak-memory runs")
    p.add_argument("--float64-check", type=int, default=0, metavar="N",
                   help="also compare both algorithms on the first N items with a float64 run")
    p.add_argument("--float64-only", action="store_true",
                   help="with --float64-check: only that comparison (no timing rounds, no floor)")
    p.add_argument("--out", default=None, metavar="JSON",
                   help="also write the measurements to this file (settings, machine, per-round times, ratios)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
    big = args.preset == "llama1b"
    n_examples = args.n_examples or (4 if big and args.device == "cpu" else 120 if args.preset == "smol" else None)
    rounds = args.rounds or (1 if big else 3)
    t0 = time.perf_counter()
    setup = (llama1b_setup(n_examples, args.device, dtype, args.seed) if big
             else smol_setup(n_examples, args.device, dtype, args.seed) if args.preset == "smol"
             else world_setup(args.preset, n_examples, args.device, dtype, args.seed))
    settings = {alg: EngineSettings(batch_size=args.batch_size, algorithm=alg) for alg in ALGORITHMS}
    s = shape_of(setup.full.config)
    print(f"preset={args.preset}: {setup.origin}")
    print(f"device={args.device} dtype={args.dtype} threads={torch.get_num_threads()} examples={len(setup.items)} "
          f"batch_size={args.batch_size} layers={s.layers} hidden={s.hidden} "
          f"attention={setup.full.config._attn_implementation} rounds={rounds} "
          f"(setup {time.perf_counter() - t0:.1f} s)")
    if args.float64_only:
        if not args.float64_check:
            sys.exit("--float64-only needs --float64-check N")
        check = float64_check(setup, settings, args.float64_check, args.device)
        if args.out:
            write_result(Path(args.out), args, setup, s, {"float64_check": check})
        return 0
    warm_items = setup.items[:1 if big else args.batch_size]
    warm = Setup(setup.full, setup.retain, setup.unlearned, warm_items, setup.pad_id, "")
    for alg in ALGORITHMS:  # first calls pay one-off costs (allocator growth, kernel selection)
        timed_run(warm, settings[alg], args.device)
    times, results = run_rounds(setup, settings, args.device, rounds)
    memory = peak_memories(setup, settings, args.device) if not args.no_memory else {alg: 0 for alg in ALGORITHMS}
    out = report(setup, settings["fast"], times, results, memory, s)
    out.update(report_floor(setup, s, out["median_seconds"], args.batch_size, args.device))
    if args.float64_check:
        out["float64_check"] = float64_check(setup, settings, args.float64_check, args.device)
    speedup, d_uds, d_delta = out["speedup"]["full"], out["max_abs_uds_diff"], out["max_abs_delta_diff"]
    print(f"speedup={speedup:.2f} max_abs_uds_diff={d_uds:.3g} max_abs_delta_diff={d_delta:.3g}")
    if args.out:
        write_result(Path(args.out), args, setup, s, out)
    exact_enough = d_uds <= 1e-5 and d_delta <= 1e-5
    return 0 if exact_enough or args.dtype != "float32" else 1


if __name__ == "__main__":
    sys.exit(main())
