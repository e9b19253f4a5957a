"""Open-Unlearning's own TOFU evaluation against `uds metrics`, on one model and the metrics both
compute, timed side by side in one run.

    OMP_NUM_THREADS=1 python benchmarks/bench_ou_eval.py --preset smol --model npo_lr3e-5_b01_a1_ep5 \\
        --src-home UDS_HOME --work /tmp/ou_bench/ou --out results/smol/bench_ou_eval.json

Setup (untimed, its seconds recorded): `experiments/ou_integration.sh` steps 1-3 (OU's venv with its
pins, this project as a wheel into it, a copy of the vendored OU with the world's splits as its local
`locuslab/TOFU/` folder and the world's models with the transformers-4.x fields); `--skip-setup`
reuses what an earlier run left in --work.

Then, interleaved round by round, each side in its own process with one thread
(OMP_NUM_THREADS=1, MKL/OpenBLAS likewise; ours also `torch.set_num_threads(1)`):
- OU: `src/eval.py experiment=eval/tofu/default` (its default TOFU suite) on CPU, float32, sdpa,
  batch size --batch-size, its default generation settings (greedy, max_new_tokens 200), a fresh
  `task_name` per run so nothing is skipped. Evaluation seconds are read from its eval.log (first
  line of the suite to the last metric's result); per-metric seconds between consecutive results.
- ours: `uds metrics` with the shared keys (SHARED_KEYS), same batch size and max new tokens, the
  fast path (the default), `--parity spec` (the default). Evaluation seconds: the metric loop less
  model loading; per-key seconds in evaluation order.
- ours with `--parity open-unlearning` (OU's attention mask and model-utility mean) in the first
  --parity-rounds rounds: its values are the ones compared with OU's TOFU_EVAL / TOFU_SUMMARY.

Writes the JSON after every run (`complete` false until the last). Wall seconds are per process
(Python start-up, imports and model loading included); evaluation seconds exclude them.
Exit status 1 when a shared value differs from OU's by more than --tolerance.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# OU's default TOFU suite (configs/eval/tofu.yaml), in its evaluation order: top-level metric ->
# the keys of ours that do the same work (pre-computes included: forget_truth_ratio computes
# forget_Q_A_PARA_Prob and forget_Q_A_PERT_Prob, privleak computes mia_min_k, model_utility its
# nine parts). forget_quality and privleak themselves have no shared value: NOT_SHARED says why.
OU_SUITE: dict[str, tuple[str, ...]] = {
    "forget_truth_ratio": ("paraprob", "truth_ratio"),
    "forget_quality": (),
    "forget_Q_A_Prob": ("prob",),
    "forget_Q_A_ROUGE": ("rouge",),
    "model_utility": ("retain_q_prob", "retain_q_rouge", "retain_truth_ratio", "ra_q_prob", "ra_q_rouge",
                      "ra_truth_ratio", "wf_q_prob", "wf_q_rouge", "wf_truth_ratio", "model_utility"),
    "privleak": ("mia_min_k",),
    "extraction_strength": ("es",),
}
SHARED_KEYS: tuple[str, ...] = tuple(k for keys in OU_SUITE.values() for k in keys)
NOT_SHARED = {
    "forget_quality": "OU's default suite has retain_logs_path null, so its KS test has no retain-model "
                      "truth ratios and OU reports None; ours has no forget_quality key",
    "privleak": "with retain_logs_path null OU uses its fixed reference AUC 0.5 (ref_value), not a retain "
                "model's; ours has no privleak key. Its input, mia_min_k (forget vs holdout AUC), is shared",
    "forget_Q_A_PERT_Prob": "computed by both (inside the truth ratio) but ours reports no key for it",
    "forget_truth_ratio (OU's aggregate)": "OU's default suite aggregates r = p_pert / p_para as "
                                           "mean(min(r, 1/r)); ours (`truth_ratio`, the Mem / meta-eval variant) "
                                           "is mean p_para / (p_para + p_pert), compared via OU's per-item r as "
                                           "mean 1 / (1 + r) (uds_leaderboard.inputs' convention)",
}
OU_MODEL_CONFIG = "uds_tiny"      # written by ou_integration.py's `prepare` into WORK/conf/model/
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]\[[^\]]*\]\[[A-Z]+\] - (.*)$")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="smol")
    p.add_argument("--model", default="npo_lr3e-5_b01_a1_ep5", help="model folder of the world")
    p.add_argument("--src-home", type=Path, required=True,
                   help="UDS_HOME holding world/<preset>-0 with base, full, retain and --model (read by both sides)")
    p.add_argument("--work", type=Path, default=Path("/tmp/ou_bench/ou"), help="scratch folder of the OU side")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--parity-rounds", type=int, default=1,
                   help="rounds that also time ours with --parity open-unlearning (the value comparison)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--tolerance", type=float, default=1e-3)
    p.add_argument("--skip-setup", action="store_true", help="reuse the OU venv and copy an earlier run left in --work")
    p.add_argument("--out", type=Path, required=True)
    return p.parse_args(argv)


# --- environment --------------------------------------------------------------------------------

def one_thread_env(**extra: str) -> dict[str, str]:
    """This process's environment with one compute thread and no hub access, plus `extra`."""
    return {**os.environ, **ONE_THREAD, **extra}


def ou_paths(work: Path) -> dict[str, Path]:
    """Where ou_integration.sh puts OU's venv python, its OU copy, its UDS_HOME and its Hydra configs."""
    return {"python": work / "venv" / "bin" / "python", "ou": work / "open-unlearning",
            "home": work / "uds_home", "conf": work / "conf", "datasets": work / "hf_datasets"}


def setup_ou(args: argparse.Namespace) -> float:
    """Steps 1-3 of experiments/ou_integration.sh; seconds taken."""
    env = {**os.environ, "STEPS": "1 2 3", "WORK": str(args.work), "PRESET": args.preset,
           "SRC_HOME": str(args.src_home), "UNLEARNED": args.model, "MODELS": args.model}
    t0 = time.perf_counter()
    subprocess.run(["bash", str(REPO / "experiments" / "ou_integration.sh")], env=env, check=True)
    return time.perf_counter() - t0


def machine() -> dict:
    """CPU model, core count, OS and Python of this machine."""
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    return {"cpu": cpu, "cores": os.cpu_count(), "os": platform.platform(), "python": platform.python_version()}


def versions(python: Path) -> dict:
    """torch / transformers versions and torch's thread count under ONE_THREAD, for `python`."""
    code = ("import json, torch, transformers; print(json.dumps({'torch': torch.__version__, "
            "'transformers': transformers.__version__, 'torch_threads': torch.get_num_threads()}))")
    out = subprocess.run([str(python), "-c", code], env=one_thread_env(), check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def timed_process(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[float, float]:
    """Run `cmd` to completion (output to `log`); (wall seconds, CPU seconds user + system of the
    process and its children). CPU seconds move less than wall seconds when other jobs share the
    cores, so both are recorded."""
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd, output=f"see {log}")
    return wall, usage.ru_utime + usage.ru_stime


# --- OU side ------------------------------------------------------------------------------------

def ou_command(args: argparse.Namespace, paths: dict[str, Path], task: str) -> list[str]:
    """OU's src/eval.py with its default TOFU suite on this world's model, CPU, float32, sdpa."""
    folder = paths["home"] / "world" / f"{args.preset}-0" / "models" / args.model
    return [str(paths["python"]), "src/eval.py", f"hydra.searchpath=[file://{paths['conf']}]",
            "experiment=eval/tofu/default", f"model={OU_MODEL_CONFIG}",
            f"model.model_args.pretrained_model_name_or_path={folder}",
            f"model.tokenizer_args.pretrained_model_name_or_path={folder}",
            f"eval.tofu.batch_size={args.batch_size}", f"task_name={task}"]


def ou_log_times(log: Path) -> tuple[float, dict[str, float]]:
    """(evaluation seconds, seconds per top-level metric) from OU's eval.log: from the suite's first
    line to the last metric's result; each metric from the previous result (or the suite start)."""
    start, last, per = None, None, {}
    for line in log.read_text(errors="replace").splitlines():
        m = LOG_LINE.match(ANSI.sub("", line))
        if not m:
            continue
        t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        msg = m.group(2)
        if msg.startswith("***** Running") and start is None:
            start = last = t
        res = re.match(r"Result for metric (\S+):", msg)
        if res and start is not None:
            per[res.group(1)] = round(t - last, 3)
            last = t
    if start is None or not per:
        raise RuntimeError(f"{log}: no evaluation suite start or metric result found")
    return round(last - start, 3), per


def run_ou(args: argparse.Namespace, paths: dict[str, Path], task: str) -> dict:
    """One OU evaluation in its own process: wall and evaluation seconds, per-metric seconds."""
    out_dir = paths["ou"] / "saves" / "eval" / task
    # OU skips every metric already in a task folder and appends to its eval.log: an earlier
    # invocation's round of the same name would be read back instead of measured
    shutil.rmtree(out_dir, ignore_errors=True)
    # a datasets cache of this run's own: offline, `datasets` would reuse a locuslab/TOFU cached by
    # another OU run (another world's rows), which the plug-in refuses as misaligned
    shutil.rmtree(paths["datasets"], ignore_errors=True)
    wall, cpu = timed_process(ou_command(args, paths, task), paths["ou"],
                              one_thread_env(HF_DATASETS_CACHE=str(paths["datasets"])),
                              args.work / f"{task}.stdout")
    eval_s, per = ou_log_times(out_dir / "eval.log")
    return {"task": task, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "eval_s": eval_s, "per_metric_s": per,
            "results": str(out_dir)}


# --- our side -----------------------------------------------------------------------------------

def ours_command(args: argparse.Namespace, parity: str, out: Path) -> list[str]:
    """This script's `_ours` mode: `uds metrics` on the shared keys, timed inside its process."""
    return [sys.executable, str(Path(__file__).resolve()), "_ours", "--out", str(out), "--",
            "metrics", "--model", f"tiny:{args.preset}/{args.model}", "--metrics", ",".join(SHARED_KEYS),
            "--batch-size", str(args.batch_size), "--max-new-tokens", str(args.max_new_tokens),
            "--device", "cpu", "--dtype", "float32", "--parity", parity, "--out", str(out)]


def run_ours(args: argparse.Namespace, parity: str, out: Path) -> dict:
    """One `uds metrics` run in its own process (UDS_HOME = --src-home): wall, evaluation and
    per-key seconds (timings.json of `_ours`)."""
    out.mkdir(parents=True, exist_ok=True)
    wall, cpu = timed_process(ours_command(args, parity, out), REPO,
                              one_thread_env(UDS_HOME=str(args.src_home), PYTHONPATH=str(REPO)),
                              out.with_suffix(".stdout"))
    t = json.loads((out / "timings.json").read_text())
    return {"parity": parity, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "eval_s": t["eval_s"],
            "eval_cpu_s": t["eval_cpu_s"], "load_s": t["load_s"],
            "per_key_s": t["per_key_s"], "torch_threads": t["torch_threads"], "results": str(out / "metrics.json")}


def ours_main(argv: list[str]) -> int:
    """`_ours --out DIR -- <uds arguments>`: run `uds` in this process with one torch thread, timing
    each metric key (evaluation order: shared work counts at the key that first needs it) and the
    model loads; writes DIR/timings.json."""
    out = Path(argv[argv.index("--out") + 1])
    uds_argv = argv[argv.index("--") + 1:]
    import torch

    torch.set_num_threads(1)
    import metrics.session as session
    import uds.commands.metrics as command
    from uds.cli import main as uds_main

    per_key, loads, inside = {}, [], []
    evaluate, load_uncached = command.evaluate, session.EvalSession.load_uncached

    cpu = []

    def timed_evaluate(ctx, keys):
        t0, c0 = time.perf_counter(), time.process_time()
        inside.append(True)
        result = evaluate(ctx, keys)
        inside.pop()
        per_key[",".join(keys)] = time.perf_counter() - t0
        cpu.append(time.process_time() - c0)
        return result

    def timed_load(self, spec, **kwargs):
        # models load lazily, inside the first metric that needs them: that time is not evaluation
        t0 = time.perf_counter()
        model = load_uncached(self, spec, **kwargs)
        if inside:
            loads.append(time.perf_counter() - t0)
        return model

    command.evaluate, session.EvalSession.load_uncached = timed_evaluate, timed_load
    rc = uds_main(uds_argv)
    load_s = sum(loads)
    doc = {"eval_s": round(sum(per_key.values()) - load_s, 3), "eval_cpu_s": round(sum(cpu), 3),
           "load_s": round(load_s, 3),
           "per_key_s": {k: round(v, 3) for k, v in per_key.items()}, "torch_threads": torch.get_num_threads()}
    (out / "timings.json").write_text(json.dumps(doc, indent=1))
    return rc


# --- values -------------------------------------------------------------------------------------

def ou_values(results: Path) -> dict[str, float]:
    """Our keys -> OU's values of one run: every `agg_value` of TOFU_EVAL.json (TOFU_SUMMARY.json
    holds only the top-level metrics, not pre-computes such as mia_min_k or model utility's parts)
    through the leaderboard's name map, and truth_ratio as mean 1 / (1 + r) over the per-item
    r = p_pert / p_para of forget_truth_ratio."""
    from uds_leaderboard.inputs import summary_values

    evals = json.loads((results / "TOFU_EVAL.json").read_text())
    out = summary_values({k: v.get("agg_value") for k, v in evals.items() if isinstance(v, dict)})
    items = evals["forget_truth_ratio"]["value_by_index"].values()
    ratios = [v.get("score", v.get("truth_ratio")) for v in items if isinstance(v, dict)]
    out["truth_ratio"] = sum(1.0 / (1.0 + r) for r in ratios) / len(ratios)
    return {k: v for k, v in out.items() if k in SHARED_KEYS}


def compare_values(ou: dict[str, float], ours: dict[str, float], tolerance: float) -> dict:
    """Per shared key OU's value, ours and |difference|; the largest and the keys beyond `tolerance`."""
    rows = {k: {"ou": ou.get(k), "ours": ours.get(k),
                "abs_diff": abs(ou[k] - ours[k]) if ou.get(k) is not None and ours.get(k) is not None else None}
            for k in SHARED_KEYS}
    diffs = [r["abs_diff"] for r in rows.values() if r["abs_diff"] is not None]
    return {"per_key": rows, "max_abs_diff": max(diffs) if diffs else None,
            "beyond_tolerance": sorted(k for k, r in rows.items() if r["abs_diff"] is None or
                                       r["abs_diff"] > tolerance)}


# --- summary ------------------------------------------------------------------------------------

def spread(values: list[float]) -> dict:
    """Median, min and max of `values` (seconds or ratios), rounded for the JSON."""
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3),
            "n": len(values)}


def summarize(runs: list[dict]) -> dict:
    """Medians and spreads of each side's seconds, and the OU / ours ratios: of the medians, and
    per round (the round's OU run over its ours run)."""
    def side(name: str) -> list[dict]:
        return [r for r in runs if r["side"] == name]

    out: dict = {}
    for name in ("ou", "ours", "ours_ou_parity"):
        rs = side(name)
        if rs:
            out[name] = {m: spread([r[m] for r in rs]) for m in ("wall_s", "cpu_s", "eval_s")}
    for theirs, ours in (("ou", "ours"), ("ou", "ours_ou_parity")):
        pairs = [(a, b) for a in side(theirs) for b in side(ours) if a["round"] == b["round"]]
        if pairs:
            out[f"{theirs}_over_{ours}"] = {
                m: {"of_medians": round(out[theirs][m]["median"] / out[ours][m]["median"], 3),
                    "per_round": spread([a[m] / b[m] for a, b in pairs])} for m in ("eval_s", "wall_s", "cpu_s")}
    return out


def per_metric(runs: list[dict]) -> dict:
    """Median seconds per OU top-level metric, and ours summed over the keys doing the same work."""
    ou = [r["per_metric_s"] for r in runs if r["side"] == "ou"]
    ours = [r["per_key_s"] for r in runs if r["side"] == "ours"]
    out = {}
    for name, keys in OU_SUITE.items():
        out[name] = {"ours_keys": list(keys),
                     "ou_s": round(statistics.median(p.get(name, 0.0) for p in ou), 3) if ou else None,
                     "ours_s": round(statistics.median(sum(p.get(k, 0.0) for k in keys) for p in ours), 3)
                     if ours else None}
    return out


def document(args: argparse.Namespace, meta: dict, runs: list[dict], values: dict | None, complete: bool) -> dict:
    return {**meta, "complete": complete, "runs": runs, "summary": summarize(runs), "per_metric_s": per_metric(runs),
            "values": values}


def write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_ours"]:
        return ours_main(argv[1:])
    args = parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    setup_s = None if args.skip_setup else round(setup_ou(args), 1)
    paths = ou_paths(args.work)
    scratch = args.work / "ours"
    meta = {
        "what": "Open-Unlearning's src/eval.py (default TOFU suite) vs `uds metrics` "
                "on the shared keys, one thread each",
        "command": " ".join(["python", "benchmarks/bench_ou_eval.py"] + argv),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(), "threads": 1, "setup_s": setup_s,
        "model": {"spec": f"tiny:{args.preset}/{args.model}",
                  "digests": json.loads((args.src_home / "world" / f"{args.preset}-0" / "models" / args.model
                                         / "digests.json").read_text())},
        "settings": {"batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens, "dtype": "float32",
                     "device": "cpu", "attention": "sdpa", "generation": "greedy (OU: do_sample False; ours: argmax)",
                     "ou_suite": "experiment=eval/tofu/default (configs/eval/tofu.yaml), retain_logs_path null",
                     "ou_command": " ".join(ou_command(args, paths, "TASK")),
                     "ours_command": " ".join(["uds"] + ours_command(args, "spec", Path("OUT"))[6:])},
        "versions": {"ou": versions(paths["python"]), "ours": versions(Path(sys.executable))},
        "ou_suite": {k: list(v) for k, v in OU_SUITE.items()}, "shared_keys": list(SHARED_KEYS),
        "not_shared": NOT_SHARED, "tolerance": args.tolerance,
    }
    runs: list[dict] = []
    values = None
    for r in range(1, args.rounds + 1):
        sides = [("ou", None), ("ours", "spec")] + ([("ours_ou_parity", "open-unlearning")]
                                                     if r <= args.parity_rounds else [])
        for side, parity in sides:
            before = load_average()
            res = (run_ou(args, paths, f"{args.model}_r{r}") if side == "ou"
                   else run_ours(args, parity, scratch / f"{side}_r{r}"))
            runs.append({"side": side, "round": r, "load_before": before, "load_after": load_average(), **res})
            print(f"round {r} {side}: wall {res['wall_s']:.1f} s, eval {res['eval_s']:.1f} s", flush=True)
            if side == "ours_ou_parity" and values is None:
                ou_run = next(x for x in runs if x["side"] == "ou" and x["round"] == r)
                ours_values = json.loads(Path(res["results"]).read_text())["metrics"]
                values = compare_values(ou_values(Path(ou_run["results"])), ours_values, args.tolerance)
                spec_values = json.loads(Path(next(x for x in runs if x["side"] == "ours" and x["round"] == r)
                                              ["results"]).read_text())["metrics"]
                values["spec_vs_ou"] = compare_values(ou_values(Path(ou_run["results"])), spec_values, args.tolerance)
            write(args.out, document(args, meta, runs, values, complete=False))
    write(args.out, document(args, meta, runs, values, complete=True))
    print(json.dumps(summarize(runs), indent=1))
    return 0 if values is None or not values["beyond_tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
