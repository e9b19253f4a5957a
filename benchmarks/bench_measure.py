"""One meta-evaluation measurement, phase by phase: the straightforward path against the fast one,
side by side in one run, each against the floor its work needs on this machine.

A measurement is what `uds meta-eval` / `uds campaign` run for one (model, setting): the
meta-evaluated keys plus utility and fluency for the model as built, the same keys for NF4 and
relearned. Each path (`EvalSettings.fast` False / True) gets its own Measurer (its own work cache, store and relearned
copies) and measures, interleaved job by job: the zoo's full model with the anchors' shared work
(the retain model's statistics, full/retain states and Fisher diagonals, full's generations), then
the chosen unlearned model as built, NF4 and relearned, as a campaign does in one process. S1 is
computed once before (both paths read it from the on-disk cache).

    OMP_NUM_THREADS=1 python benchmarks/bench_measure.py --preset smol --model npo_lr3e-5_b01_a1_ep5 \\
        --out results/smol/bench_measure.json

Checks (exit status 1 when one fails): every metric value of both paths within 1e-6, every
generation token-identical.

Floor of a phase (what the metric definitions need, at this machine's measured rates, `rates`):
teacher-forced sweeps and base-LM scoring: each distinct sequence's tokens once at the body rate
(decoder blocks) plus its labelled tokens at the head rate (LM head + log-softmax); generation:
the prompts' tokens at the body rate plus the generated tokens (to the first stop) at the decode
rate of a full batch; Fisher: forward and backward (3x) of each item's tokens up to its last entity
position; entity states: those tokens once; UDS: the engine's lower bound (`bench_uds`) at the
dense rate; loading: reading the weight file; relearning: forward and backward of its training
tokens; metric formulas (ROUGE, AUCs): as measured on the fast path.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from measure_profile import OTHER, PhaseClock, instrument

SETTINGS = ("orig", "nf4", "relearn")
PATHS = ("old", "new")
TOLERANCE = 1e-6


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="smol-ci", choices=["smol", "smol-ci", "test", "small"])
    p.add_argument("--model", default=None, help="unlearned model of the zoo (default: its first)")
    p.add_argument("--settings", default=",".join(SETTINGS))
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", type=Path, default=None)
    return p.parse_args(argv)


# --- this machine's rates for this model ------------------------------------------------------

def _median_seconds(fn, repeats: int) -> float:
    fn()   # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


@torch.no_grad()
def rates(model, batch_size: int, repeats: int = 3) -> dict[str, float]:
    """Tokens/s of the decoder blocks (`body`, 8 rows of 128 tokens, no LM head), rows/s of the LM
    head with log-softmax (`head`, 1024 rows), generated tokens/s of one greedy step of a full
    batch with a 128-token cache (`decode`), and the dense FLOP rate of the body."""
    vocab = model.config.vocab_size
    ids = torch.randint(10, vocab - 10, (8, 128))
    body = model.get_decoder()
    body_s = _median_seconds(lambda: body(input_ids=ids, use_cache=False), repeats)
    hidden = torch.randn(1024, model.config.hidden_size)
    head = model.get_output_embeddings()
    head_s = _median_seconds(lambda: torch.log_softmax(head(hidden).float(), -1), repeats)
    from uds_core.greedy import new_cache

    prompt = torch.randint(10, vocab - 10, (batch_size, 128))
    cache = new_cache(model)
    model(input_ids=prompt, cache=cache, use_cache=True, logits_to_keep=1)
    step = torch.randint(10, vocab - 10, (batch_size, 1))

    def one_step():
        model(input_ids=step, cache=cache, use_cache=True, logits_to_keep=1)
        cache.crop(-1)   # back to the 128-token cache
    decode_s = _median_seconds(one_step, repeats + 2)
    linear = sum(p.numel() for n, p in body.named_parameters() if p.dim() == 2 and "embed" not in n)
    return {"body": 8 * 128 / body_s, "head": 1024 / head_s, "decode": batch_size / decode_s,
            "dense_flops": 2 * linear * 8 * 128 / body_s}


def load_seconds(folder: Path) -> float:
    from safetensors.torch import load_file

    t0 = time.perf_counter()
    for f in sorted(folder.glob("*.safetensors")):
        load_file(str(f))
    return time.perf_counter() - t0


# --- floor ---------------------------------------------------------------------------------

def phase_floor(phase: str, c: dict, measured: float, r: dict, extra: dict) -> float:
    if phase in ("teacher_forced", "fluency"):
        return c.get("tokens", 0) / r["body"] + c.get("labels", 0) / r["head"]
    if phase == "generation":
        return c.get("prompt_tokens", 0) / r["body"] + c.get("generated_tokens", 0) / r["decode"]
    if phase == "fisher":
        return 3 * c.get("tokens", 0) / r["body"]
    if phase == "representation":
        return c.get("tokens", 0) / r["body"]
    if phase == "uds":
        return extra["uds_floor"]
    if phase in ("loading", "loading_nf4"):
        return extra["load_floor"] if measured > 0.05 else measured
    if phase == "relearning":
        return 3 * extra["relearn_tokens"] / r["body"] if measured > 0.05 else measured
    return measured   # OTHER: formulas, ROUGE, AUCs


def with_floor(snap: dict, r: dict, extra: dict, formulas: float | None = None) -> dict:
    floors = {ph: phase_floor(ph, snap["counts"].get(ph, {}), sec, r, extra) for ph, sec in snap["seconds"].items()}
    if formulas is not None and OTHER in floors:
        floors[OTHER] = formulas
    snap["floor_seconds"] = {ph: round(f, 3) for ph, f in floors.items()}
    snap["x_of_floor"] = {ph: round(snap["seconds"][ph] / f, 2) if f > 0 else None for ph, f in floors.items()}
    snap["total_floor_seconds"] = round(sum(floors.values()), 3)
    return snap


def uds_floor_seconds(model, items, r: dict) -> float:
    from bench_uds import lower_bound_flops, shape_of

    return lower_bound_flops(shape_of(model.config), items, 1) / r["dense_flops"]


# --- comparing -------------------------------------------------------------------------------

def value_diffs(a: dict, b: dict) -> dict[str, float | None]:
    """|a - b| per key (None where one is missing or not finite)."""
    out = {}
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        out[k] = abs(x - y) if isinstance(x, float) and isinstance(y, float) and math.isfinite(x) \
            and math.isfinite(y) else (0.0 if x == y else None)
    return out


def same_generations(a: list, b: list) -> tuple[int, int]:
    """(identical, total) generations, matched by (model, prompt)."""
    ga, gb = dict(a), dict(b)
    return sum(gb.get(k) == ids for k, ids in ga.items()), len(ga)


# --- the run ---------------------------------------------------------------------------------

def family_seconds(entry: dict) -> dict[str, float]:
    from metrics.registry import REGISTRY

    out: dict[str, float] = {}
    for key, sec in entry["info"].get("seconds", {}).items():
        cat = REGISTRY[key].category if key in REGISTRY else "other"
        out[cat] = round(out.get(cat, 0.0) + sec, 3)
    return out


def measure_once(measurer, job, clock: PhaseClock) -> tuple[dict, dict, list]:
    clock.reset()
    entry = measurer.run(job)
    if entry.get("errors"):   # a failed metric costs nothing: no timing of this run would mean anything
        first = "; ".join(f"{k}: {v}" for k, v in sorted(entry["errors"].items())[:3])
        raise SystemExit(f"bench_measure: {job.setting}/{job.member.name}: {len(entry['errors'])} metric(s) "
                         f"failed ({first})")
    snap = clock.snapshot()
    snap["families"] = family_seconds(entry)
    return snap, dict(entry["values"]), list(clock.generations)


def make_measurers(zoo, settings, recipe, tmp: Path) -> dict:
    from dataclasses import replace

    from meta_eval.measure import Measurer
    from meta_eval.store import MeasurementStore

    return {p: Measurer(zoo, MeasurementStore(tmp / p / "store"), tmp / p / "relearned",
                        replace(settings, fast=(p == "new")), recipe) for p in PATHS}


def main(argv=None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    from checkpoints.world.build import ensure_model
    from checkpoints.world.encode import qa_examples
    from uds_core.prompts import prepare_items
    from meta_eval.measure import BENCHMARK_EXTRA, Job
    from meta_eval.perturb import zoo_relearn_config
    from meta_eval.population import FULL, RETAIN, UNLEARNED, tiny_zoo
    from metrics.context import EvalSettings
    from metrics.registry import META_KEYS

    zoo = tiny_zoo(f"tiny:{args.preset}")
    unlearned = zoo.of_kind(UNLEARNED)
    member = next((m for m in unlearned if m.name == args.model), None) if args.model else unlearned[0]
    if member is None:
        raise SystemExit(f"no unlearned model {args.model!r} in tiny:{args.preset}")
    for m in (zoo.member(FULL), zoo.member(RETAIN), member):
        ensure_model(zoo.preset, zoo.seed, m.name, progress=True)
    settings = EvalSettings(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                            system_prompt=zoo.system_prompt, device="cpu", progress=False)
    recipe = zoo_relearn_config(zoo.preset)
    clock = PhaseClock()
    keys, with_utility = tuple(META_KEYS), tuple(META_KEYS) + BENCHMARK_EXTRA
    jobs = [("anchors+full", Job(zoo.member(FULL), "orig", with_utility))]
    jobs += [(s, Job(member, s, with_utility if s == "orig" else keys)) for s in args.settings.split(",")]
    out: dict = {"preset": args.preset, "model": member.name, "threads": args.threads,
                 "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens,
                 "machine": _machine(), "runs": {p: {} for p in PATHS}}
    values: dict = {p: {} for p in PATHS}
    gens: dict = {p: {} for p in PATHS}
    with tempfile.TemporaryDirectory() as tmp, instrument(clock):
        measurers = make_measurers(zoo, settings, recipe, Path(tmp))
        full = measurers["new"].session.model(zoo.full)
        out["rates"] = r = rates(full, args.batch_size)
        measurers["old"].run(Job(zoo.member(RETAIN), "orig", ("uds",)))   # S1 into the on-disk cache, untimed
        for i, (label, job) in enumerate(jobs):
            for path in (PATHS if i % 2 == 0 else PATHS[::-1]):   # alternate which path goes first
                t0 = time.time()
                snap, values[path][label], gens[path][label] = measure_once(measurers[path], job, clock)
                out["runs"][path][label] = snap
                print(f"{path} {label}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
                _save_partial(args.out, out, values)
        items, _ = prepare_items(measurers["new"].records, measurers["new"].tokenizer)
        folder = ensure_model(zoo.preset, zoo.seed, member.name, progress=False)
        extra = {"uds_floor": uds_floor_seconds(full, items, r), "load_floor": load_seconds(folder),
                 "relearn_tokens": sum(len(e["input_ids"]) for e in
                                       qa_examples(measurers["new"].tokenizer, list(measurers["new"].forget),
                                                   forms=recipe.forms))}
    out["rates"] = {k: round(v, 1) for k, v in r.items()}
    out["floor_inputs"] = {k: round(v, 3) for k, v in extra.items()}
    for label in out["runs"]["new"]:
        formulas = out["runs"]["new"][label]["seconds"].get(OTHER)
        for path in PATHS:
            with_floor(out["runs"][path][label], r, extra, formulas)
    out["values"] = values
    out["checks"] = checks(values, gens, [label for label, _ in jobs])
    summarise(out, [label for label, _ in jobs[1:]])
    print_table(out)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=1, sort_keys=True))
        args.out.with_name(args.out.stem + ".partial.json").unlink(missing_ok=True)
        print(args.out)
    return 0 if out["checks"]["ok"] else 1


def _save_partial(path: Path | None, out: dict, values: dict) -> None:
    """The runs so far, beside the final file (a long run that fails late keeps its timings)."""
    if path is not None:
        partial = path.with_name(path.stem + ".partial.json")
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps({**out, "values": values}, indent=1, sort_keys=True, default=str))


def checks(values: dict, gens: dict, labels: list[str]) -> dict:
    per_job = {}
    for label in labels:
        diffs = value_diffs(values["old"][label], values["new"][label])
        same, total = same_generations(gens["old"][label], gens["new"][label])
        finite = [d for d in diffs.values() if d is not None]
        per_job[label] = {"max_abs_value_diff": max(finite, default=0.0),
                          "keys_not_comparable": sorted(k for k, d in diffs.items() if d is None),
                          "generations_identical": same, "generations": total}
    ok = all(j["max_abs_value_diff"] <= TOLERANCE and not j["keys_not_comparable"]
             and j["generations_identical"] == j["generations"] for j in per_job.values())
    return {"tolerance": TOLERANCE, "jobs": per_job, "ok": ok}


def summarise(out: dict, member_labels: list[str]) -> None:
    """Totals of the unlearned model's measurement (its settings), per path, and the ratios."""
    runs = out["runs"]
    tot = {p: sum(runs[p][l]["total_seconds"] for l in member_labels) for p in PATHS}
    floor = sum(runs["new"][l]["total_floor_seconds"] for l in member_labels)
    out["summary"] = {
        "settings": member_labels,
        "old_seconds": round(tot["old"], 1), "new_seconds": round(tot["new"], 1),
        "speedup": round(tot["old"] / tot["new"], 2), "floor_seconds": round(floor, 1),
        "new_x_floor": round(tot["new"] / floor, 2),
        "per_setting": {l: {"old": runs["old"][l]["total_seconds"], "new": runs["new"][l]["total_seconds"],
                            "speedup": round(runs["old"][l]["total_seconds"] / runs["new"][l]["total_seconds"], 2),
                            "new_x_floor": round(runs["new"][l]["total_seconds"]
                                                 / runs["new"][l]["total_floor_seconds"], 2)}
                        for l in member_labels}}


def print_table(out: dict) -> None:
    r = out["rates"]
    print(f"{out['preset']} / {out['model']}: body {r['body']:.0f} tok/s, head {r['head']:.0f} rows/s, "
          f"decode {r['decode']:.0f} tok/s (batch {out['batch_size']}, {out['threads']} thread(s))")
    for label in out["runs"]["new"]:
        old, new = out["runs"]["old"][label], out["runs"]["new"][label]
        print(f"\n{label}: old {old['total_seconds']:.1f} s, new {new['total_seconds']:.1f} s "
              f"({old['total_seconds'] / new['total_seconds']:.2f}x), floor {new['total_floor_seconds']:.1f} s")
        print("| phase | old s | new s | old / new | floor s | new / floor |")
        print("|---|---|---|---|---|---|")
        for ph in sorted(set(old["seconds"]) | set(new["seconds"])):
            o, n, f = old["seconds"].get(ph, 0.0), new["seconds"].get(ph, 0.0), new["floor_seconds"].get(ph, 0.0)
            print(f"| {ph} | {o:.1f} | {n:.1f} | {o / n if n else float('nan'):.2f} | {f:.1f} | "
                  f"{n / f if f else float('nan'):.2f} |")
    s = out["summary"]
    print(f"\nunlearned model, settings {', '.join(s['settings'])}: old "
          f"{s['old_seconds']} s, new {s['new_seconds']} s, "
          f"speedup {s['speedup']}x, new / floor {s['new_x_floor']}")
    for label, c in out["checks"]["jobs"].items():
        print(f"{label}: max |value diff| {c['max_abs_value_diff']:.2e}, generations identical "
              f"{c['generations_identical']}/{c['generations']}"
              + (f", not comparable: {c['keys_not_comparable']}" if c["keys_not_comparable"] else ""))
    print(f"checks {'passed' if out['checks']['ok'] else 'FAILED'}")


def _machine() -> dict:
    from meta_eval.campaign.machine import machine

    return machine()


if __name__ == "__main__":
    sys.exit(main())
