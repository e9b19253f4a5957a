"""docs/llama1b.md's tables, from the files `experiments/llama1b.py` writes under results/llama1b/
(a file not written yet renders as a row saying so and the command that writes it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

COMMAND = "OMP_NUM_THREADS=1 flock /tmp/uds-bigmem.lock python experiments/llama1b.py"


def _load(folder: Path, name: str) -> dict | None:
    path = folder / name
    return json.loads(path.read_text()) if path.is_file() else None


def _g(x, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and (abs(x) < 1e-3 and x != 0):
        return f"{x:.1e}"
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _pending(head: str, text: str, *lead: str) -> str:
    """A row for a file not written yet: the `lead` cells, then `text`, then empty cells up to the
    columns of `head` (its first line; escaped pipes are cell text)."""
    columns = len(re.findall(r"(?<!\\)\|", head.splitlines()[0])) - 1
    cells = [*lead, text]
    return "| " + " | ".join(cells) + " |" + " |" * (columns - len(cells)) + "\n"


def _not_yet(command: str) -> str:
    return f"not measured yet: `{command}`"


def alignment_table(folder: Path) -> str:
    doc = _load(folder, "alignment.json")
    head = "| what | rows | compared with | fields | mismatches |\n|---|---|---|---|---|\n"
    if doc is None:
        return head + _pending(head, _not_yet("python experiments/llama1b.py alignment"), "prompts, labels, spans")
    chat, uds = doc["chat"], doc["uds_inputs"]
    ou = sum(chat["mismatches"][k] for k in ("ou_input_ids", "ou_labels", "ou_prompt"))
    meta = sum(chat["mismatches"][k] for k in ("meta_input_ids", "meta_prompt"))
    return head + (
        f"| chat encoding (output metrics), forget10 | {chat['n_rows']} | Open-Unlearning's `preprocess_chat_instance` "
        f"| input ids, labels, generation prompt | {ou} |\n"
        f"| chat encoding, forget10 | {chat['n_rows']} | Meta's `ChatFormat` (llama-models) | "
        "input ids, generation prompt "
        f"| {meta} |\n"
        f"| UDS inputs, annotated forget10 | {uds['n_rows']} | "
        f"the reference implementation ({doc['reference_commit'][:7]}) "
        f"| prompt, continuation, prompt ids, continuation ids, entity span, positions "
        f"({uds['n_scored_ours']} scored here, {uds['n_scored_reference']} there) | "
        f"{sum(uds['mismatches'].values())} |\n")


def _bf16_vs_fp32(fp32: dict, bf16: dict) -> dict:
    """Per-item differences of a bfloat16 run from the float32 one: UDS (items scored in both), the
    full model's entity log-prob and the S1 per-layer deltas (nats), and KE-layer sets."""
    a = {r["idx"]: r for r in fp32["examples"]}
    diffs, flips, full, s1, ke = [], 0, [], [], 0
    for r in bf16["examples"]:
        f = a[r["idx"]]
        x, y = f["uds"], r["uds"]
        if (x is None) != (y is None):
            flips += 1
        elif x is not None:
            diffs.append(abs(x - y))
        full.append(abs(f["full_score"] - r["full_score"]))
        s1.extend(abs(u - v) for u, v in zip(f["s1_delta"], r["s1_delta"]))
        ke += f["ke_layers"] != r["ke_layers"]
    return {"n": len(diffs), "max": max(diffs, default=None), "mean": sum(diffs) / len(diffs) if diffs else None,
            "flips": flips, "full": (float(np.median(full)), max(full)),
            "s1": (float(np.median(s1)), float(np.percentile(s1, 90)), max(s1)), "ke": ke, "items": len(full)}


def score_table(folder: Path) -> str:
    head = ("| run | wall | peak RSS | goal | UDS | scored of items |\n|---|---|---|---|---|---|\n")
    rows = []
    for dtype, goal, tail in (("float32", 12.0, ""), ("bfloat16", 7.0, ""), ("bfloat16", 7.0, "_kernels128")):
        doc = _load(folder, f"score_{dtype}{tail}.json")
        if doc is None:
            if not tail:
                rows.append(_pending(head, _not_yet(f"{COMMAND} score --dtype {dtype}"), f"`uds score`, {dtype}"))
            continue
        s = doc["summary"]
        ok = "met" if doc["peak_rss_gb"] <= goal else "missed"
        cache = doc.get("onednn_primitive_cache_capacity")
        bound = f", oneDNN kernel cache {cache}" if cache else ""
        rows.append(f"| `uds score`, {dtype}, batch {doc['batch_size']}, S1 cache off{bound}, code {doc['commit'][:7]} "
                    f"| {doc['wall_s'] / 60:.1f} min "
                    f"| {doc['peak_rss_gb']:.2f} GB | <= {goal:.0f} GB: {ok} | {s['uds']:.4f} "
                    f"| {s['n_scored']} of {s['n_examples']} |\n")
    return head + "".join(rows)


BF16_RUNS = (("", "bfloat16, log-softmax in bfloat16 (the reference's)", "score --dtype bfloat16"),
             ("_logprob32", "bfloat16, log-softmax in float32 (`--logprob-dtype float32`)",
              "score --dtype bfloat16 --logprob-dtype float32"))


def bf16_table(folder: Path) -> str:
    fp32 = _load(folder, "score_float32.json")
    head = ("| run, against float32 | scored in both | max \\|dUDS\\| | mean \\|dUDS\\| | scored in one only "
            "| \\|d full log-prob\\| median / max | \\|d S1 delta\\| median / p90 / max | KE layers differ |\n"
            "|---|---|---|---|---|---|---|---|\n")
    rows = []
    for tail, label, command in BF16_RUNS:
        bf16 = _load(folder, f"score_bfloat16{tail}.json")
        if fp32 is None or bf16 is None:
            rows.append(_pending(head, _not_yet(f"{COMMAND} {command}") if bf16 is None
                                 else "not measured yet (the float32 `score` file is needed)", label))
            continue
        d = _bf16_vs_fp32(fp32, bf16)
        rows.append(f"| {label} | {d['n']} | {_g(d['max'], 4)} | {_g(d['mean'], 4)} | {d['flips']} "
                    f"| {d['full'][0]:.3f} / {d['full'][1]:.3f} "
                    f"| {d['s1'][0]:.3f} / {d['s1'][1]:.3f} / {d['s1'][2]:.3f} | {d['ke']} of {d['items']} |\n")
    return head + "".join(rows)


def parity_table(folder: Path) -> str:
    doc = _load(folder, "parity_float32.json")
    head = ("| examples | scored (reference) | max \\|dUDS\\| | max \\|d delta S1\\| | max \\|d delta S2\\| "
            "| reference wall | uds score wall | speed-up | goal |\n|---|---|---|---|---|---|---|---|---|\n")
    if doc is None:
        return head + _pending(head, _not_yet(f"{COMMAND} parity --n-examples 50"))
    ours = ", ".join(f"{o['wall_s']:.0f} s" for o in doc["ours"])
    ok_uds = doc["max_abs_uds_diff"] is not None and doc["max_abs_uds_diff"] <= 1e-5 and doc["null_mismatches"] == 0
    goal = f"1e-5: {'met' if ok_uds else 'missed'}; 20x: {'met' if doc['speedup_wall'] >= 20 else 'missed'}"
    return head + (f"| {doc['n_compared']} | {doc['n_scored_reference']} | {_g(doc['max_abs_uds_diff'])} "
                   f"| {_g(doc['max_abs_s1_delta_diff'])} | {_g(doc['max_abs_s2_delta_diff'])} "
                   f"| {doc['reference']['wall_s']:.0f} s | {ours} | {doc['speedup_wall']:.1f}x | {goal} |\n")


def _phase_rows(seconds: dict[str, float], digits: int) -> str:
    """One row a phase, longest first, with its share of their sum (the clock's rest is "other")."""
    total = sum(seconds.values()) or 1.0
    return "".join(f"| {'other' if name == 'metric_formulas' else name} | {v:.{digits}f} | {100 * v / total:.0f}% |\n"
                   for name, v in sorted(seconds.items(), key=lambda kv: -kv[1]))


def _unclocked(attempts: list[dict]) -> dict[str, float]:
    """A row for each attempt without a phase clock (its record written by hand): its wall time,
    named with the number of metrics it finished (what the next attempt found kept)."""
    rows = {}
    for i, a in enumerate(attempts):
        if not a.get("phases"):
            after = attempts[i + 1]["kept_before"] if i + 1 < len(attempts) else []
            done = len(after) - len(a.get("kept_before", []))
            rows[f"not clocked: attempt {i + 1}, which finished {done} metrics"] = a["wall_s"]
    return rows


def metrics_table(folder: Path) -> str:
    """The phases of the whole run (summed over its attempts; an attempt without a phase clock is a
    row of its own), then those of a run stopped before it could resume
    (`metrics_bfloat16_interrupted.json`), said as such, whose phases break down the work an
    unclocked attempt did. Until the whole run exists, the progress of the resumable run
    (`metrics_bfloat16_run/`) and the row of the missing run."""
    doc = _load(folder, "metrics_bfloat16.json")
    head = "| phase | seconds | share |\n|---|---|---|\n"
    rows = []
    if doc is not None:
        n = len(doc.get("attempts", [])) or 1
        runs = f", in {n} attempts (a stopped run resumes)" if n > 1 else ""
        rows.append(_phase_rows(doc["phases"]["seconds"] | _unclocked(doc.get("attempts", [])), 0) + (
            f"| **total** (`{doc['uds_command']}`, {doc['threads']} torch thread(s), exit {doc['exit_status']}{runs}) "
            f"| **{doc['wall_s']:.0f}** ({doc['wall_s'] / 3600:.2f} h), peak RSS {doc['peak_rss_gb']:.2f} GB | |\n"))
    part = _load(folder, "metrics_bfloat16_interrupted.json")
    if part is not None:
        rows.append(_phase_rows(part["phases"]["seconds"], 0) + (
            f"| **interrupted** (`{part['uds_command']}`, {part['threads']} torch threads, exit {part['exit_status']}) "
            f"| **{part['wall_s']:.0f}** ({part['wall_s'] / 3600:.2f} h) before the interrupt, peak RSS "
            f"{part['peak_rss_gb']:.2f} GB | |\n"))
    if doc is not None:
        return head + "".join(rows)
    attempts = _load(folder / "metrics_bfloat16_run", "attempts.json")
    if attempts:
        kept = _load(folder / "metrics_bfloat16_run", "metrics.partial.json") or {"results": {}}
        wall = sum(a["wall_s"] for a in attempts)
        rows.append(f"| **resumable run so far** ({len(attempts)} attempt(s), {len(kept['results'])} metrics kept) "
                    f"| **{wall:.0f}** ({wall / 3600:.2f} h), peak RSS "
                    f"{max(a['peak_rss_gb'] for a in attempts):.2f} GB | |\n")
    command = _not_yet("OMP_NUM_THREADS=2 python experiments/llama1b.py metrics --dtype bfloat16 --threads 2")
    return head + "".join(rows) + _pending(head, f"whole run {command}" if rows else command)


def scale_table(folder: Path) -> str:
    smol = _load(folder, "scale_smollm2.json")
    head = ("| shape | dtype | wall (367 items) | per item | peak RSS | code |\n|---|---|---|---|---|---|\n")
    rows = []
    for dtype in ("float32", "bfloat16"):
        if smol is not None and smol.get(dtype, {}).get("exit_status") == 0:
            r = smol[dtype]
            rows.append(f"| SmolLM2-135M (30 x 576, vocab 49152) | {dtype} | {r['wall_s']:.0f} s "
                        f"| {r['wall_s'] / r['n_examples']:.2f} s | {r['peak_rss_gb']:.2f} GB "
                        f"| {smol['commit'][:7]} |\n")
        else:
            rows.append(_pending(head, _not_yet(f"{COMMAND} scale"), "SmolLM2-135M", dtype))
        big = _load(folder, f"score_{dtype}.json")
        if big is not None:
            n = big["summary"]["n_examples"]
            rows.append(f"| Llama-3.2-1B (16 x 2048, vocab 128256) | {dtype} | {big['wall_s']:.0f} s "
                        f"| {big['wall_s'] / n:.2f} s | {big['peak_rss_gb']:.2f} GB | {big['commit'][:7]} |\n")
        else:
            rows.append(_pending(head, _not_yet(f"{COMMAND} score --dtype {dtype}"), "Llama-3.2-1B", dtype))
    return head + "".join(rows)


def commands_table(folder: Path) -> str:
    doc = _load(folder, "commands.json")
    head = "| path | items | result | wall | peak RSS |\n|---|---|---|---|---|\n"
    if doc is None:
        return head + _pending(head, _not_yet(f"{COMMAND} commands"), "PEFT adapter, NF4")
    a, q = doc["adapter"], doc["nf4"]
    n = doc["n_examples"]
    return head + (
        f"| `uds score` with a LoRA adapter (on full) as the unlearned model, bfloat16 | {n} "
        f"| exit {a['exit_status']}, UDS {_g(a['summary']['uds'], 4)} | "
        f"{a['wall_s']:.0f} s | {a['peak_rss_gb']:.2f} GB |\n"
        f"| the unlearned model in NF4 (meta-eval's quantisation; float32 on CPU), S2 with S1 from the cache "
        f"| {n} | UDS {_g(q['uds'], 4)} ({q['n_scored']} scored) | "
        f"load {q['load_s']:.0f} s, score {q['score_s']:.0f} s "
        f"| {q['peak_rss_gb']:.2f} GB |\n")


def profile_table(folder: Path) -> str:
    doc = _load(folder, "profile_float32.json")
    head = "| phase | seconds | share |\n|---|---|---|\n"
    if doc is None:
        return head + _pending(head, _not_yet(f"{COMMAND} profile --dtype float32"))
    return head + _phase_rows(doc["seconds"], 1) + (f"| **total**, {doc['n_examples']} items, "
                                                    f"{doc['dtype']}, batch {doc['batch_size']} "
                                   f"| **{doc['wall_s']:.0f}** | |\n")


def work_table(folder: Path) -> str:
    """The parity run's arithmetic (experiments/llama1b_work.py) beside its measured speed-up."""
    doc, parity = _load(folder, "work.json"), _load(folder, "parity_float32.json")
    head = ("| | token-blocks | LM-head rows | GFLOP | per item |\n|---|---|---|---|---|\n")
    if doc is None:
        return head + _pending(head, "not computed yet: `python experiments/llama1b.py work`")
    n = doc["n_examples"]
    rows = "".join(f"| {name} | {w['token_blocks']:,} | {w['head_rows']:,} | {w['gflops']:,.0f} | "
                   f"{w['gflops'] / n:,.0f} GFLOP |\n"
                   for name, w in (("reference", doc["reference"]), ("`uds score`", doc["uds_score"])))
    measured = f"; measured wall ratio {parity['speedup_wall']:.1f}x" if parity else ""
    return head + rows + f"| ratio | | | {doc['ratio']:.1f}x{measured} | |\n"


def kernel_cache_table(folder: Path) -> str:
    """benchmarks/bench_kernel_cache.py's file: oneDNN's default cache against a bounded one."""
    doc = _load(folder, "kernel_cache.json")
    head = ("| oneDNN kernel cache | anonymous memory after the first group | after the last | per group "
            "| peak | sweep (median) |\n|---|---|---|---|---|---|\n")
    if doc is None:
        return head + _pending(head, _not_yet("OMP_NUM_THREADS=1 python benchmarks/bench_kernel_cache.py --json "
                                              "results/llama1b/kernel_cache.json"))
    rows = []
    for cap, c in sorted(doc["capacities"].items(), key=lambda kv: -int(kv[0])):
        name = f"{cap} entries ({'oneDNN default' if int(cap) == 1024 else 'bounded'})"
        rows.append(f"| {name} | {c['anon_after_first_group_gb']:.2f} GB | {c['anon_after_last_group_gb']:.2f} GB "
                    f"(group {c['groups']}) | {c['growth_per_group_gb']:+.3f} GB | {c['peak_anon_gb']:.2f} GB "
                    f"| {c['median_wall_s']:.1f} s |\n")
    same = "identical" if doc["patched_identical"] else "DIFFERENT"
    return head + "".join(rows) + (
        f"| {doc['n_examples']} items, {doc['dtype']}, S1 sweep, {doc['rounds']} rounds | | | | "
        f"time ratio {doc['time_ratio_bounded_over_default']:.2f} | patched scores {same} |\n")


def ou_eval_table(folder: Path) -> str:
    """experiments/llama1b_ou.sh's file: OU's src/eval.py with the plug-in against `uds score`."""
    doc = _load(folder, "ou_eval.json")
    head = "| run | transformers | UDS | scored of items | wall |\n|---|---|---|---|---|\n"
    if doc is None:
        return head + _pending(head, _not_yet("VENV=... bash experiments/llama1b_ou.sh"))
    ours = _load(folder, "score_bfloat16.json")
    rows = [f"| Open-Unlearning's `src/eval.py`, `uds` metric, bfloat16 | {doc['transformers']} "
            f"| {doc['ou_uds']:.6f} | {doc.get('n_scored')} of {doc.get('n_examples')} | {doc['wall_s']:.0f} s |\n"]
    if ours is not None:
        s = ours["summary"]
        rows.append(f"| `uds score --dtype bfloat16` (score_bfloat16.json) | this project's | {s['uds']:.6f} "
                    f"| {s['n_scored']} of {s['n_examples']} | {ours['wall_s']:.0f} s |\n")
        rows.append(f"| \\|difference\\| | | {abs(s['uds'] - doc['ou_uds']):.1e} | | |\n")
    return head + "".join(rows)
