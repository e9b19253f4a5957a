"""One unit of a world campaign, run in its own process: `python -m uds.world_campaign.units KIND MODEL
--zoo tiny:<world> --out RESULT.json --scratch DIR`; KIND `prepare` builds the models a unit uses
(MODEL: their names, comma-separated) in a process of its own, before the unit.

Each unit writes its result (a JSON object) to `--out`; the driver adds who ran it and seals it.
Scores and metrics go through the command line (`uds score`, `uds metrics`) exactly as a user runs
them, into `--scratch`, and their files are read back; nothing under `--scratch` is kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from uds.cpu_bf16 import use_for_process
from uds.world_campaign.plan import EXACTNESS_EXAMPLES, SCORE_DTYPE

CHECK_TOKENS = 64   # new tokens per knowledge-check answer (meta_eval.knowledge's)


def world_of(zoo: str):
    from checkpoints.specs import parse_tiny_zoo
    from checkpoints.world.presets import get_preset

    preset, seed = parse_tiny_zoo(zoo)
    return get_preset(preset), seed


def spec_of(zoo: str, name: str) -> str:
    from checkpoints.specs import tiny_spec

    preset, seed = world_of(zoo)
    return tiny_spec(preset.name, seed, name)


def build(zoo: str, name: str, scratch: Path) -> dict:
    """Train the model (unless built); `train_seconds` times the last attempt, `attempts` and
    `train_seconds_total` every attempt of a build that was stopped and resumed."""
    from checkpoints.catalogue import find_recipe
    from checkpoints.world.build import ensure_model, is_built, training_state
    from checkpoints.world.recipe_digest import recipe_digest
    from checkpoints.world.store import model_dir
    from uds.world_campaign import attempts
    from uds_core.adapters import adapter_digest, is_adapter_folder

    preset, seed = world_of(zoo)
    r = find_recipe(preset, name)
    fresh = not is_built(preset, seed, r)
    if fresh:
        digest = recipe_digest(preset, r, seed=seed)
        target = model_dir(preset.name, seed, name)
        ledger = target.with_name(f".{name}.attempts-{digest}.json")
        for stale in target.parent.glob(f".{name}.attempts-*.json"):   # of another recipe
            if stale != ledger:
                stale.unlink()
        attempts.begin(ledger, training_state(target, name, digest), now=time.time())
    folder = ensure_model(preset.name, seed, name, progress=True)
    recipe = json.loads((folder / "recipe.json").read_text())
    out = {"train_seconds": recipe.get("train_seconds"), "recipe": {k: recipe.get(k) for k in
                                                                     ("data", "train", "hparams", "parent", "method")}}
    if fresh:
        out |= attempts.finish(ledger, last_seconds=recipe.get("train_seconds"), epochs=r.train.epochs)
    if is_adapter_folder(folder):
        out |= {"adapter_digest": adapter_digest(folder),
                "adapter_bytes": (folder / "adapter_model.safetensors").stat().st_size}
    return out


def prepare(zoo: str, names: list[str]) -> dict:
    """Make sure the models `names` (and their parents) are built, and say which weights they are.
    A fresh machine rebuilds them here from their recipes, before the unit that uses them runs,
    so that the unit's seconds and peak memory are its own. Per model: `rebuilt_seconds` (None
    when it was built already) and `weights`, the digest of its weights (`weights_of`)."""
    from checkpoints.catalogue import find_recipe
    from checkpoints.world.build import ensure_model, is_built, lineage

    preset, seed = world_of(zoo)
    ordered = list(dict.fromkeys(n for name in names for n in lineage(preset, name)))   # parents first
    out = {}
    for name in ordered:
        built = is_built(preset, seed, find_recipe(preset, name))
        t0 = time.time()
        folder = ensure_model(preset.name, seed, name, progress=True)
        out[name] = {"rebuilt_seconds": None if built else round(time.time() - t0, 1),
                     "weights": weights_of(folder)}
    return {"models": out}


def weights_of(folder: Path) -> str:
    """The adapter digest of a LoRA world's model (what its build unit records), else the digest of
    the folder's safetensors weights; both read the tensors, not the files, so the record of how
    long training took (in the folder too) leaves it alone."""
    from safetensors.torch import load_file

    from uds_core.adapters import adapter_digest, is_adapter_folder
    from uds_core.fingerprint import state_digest

    if is_adapter_folder(folder):
        return adapter_digest(folder)
    state: dict = {}
    for path in sorted(folder.glob("*.safetensors")):
        state |= load_file(str(path))
    return state_digest(state)


def knowledge(zoo: str, name: str, scratch: Path) -> dict:
    """Greedy chat answers to the forget questions (and TOFU's paraphrases of them), each scored
    by whether it contains the annotated entity (`meta_eval.knowledge`'s check), answers kept."""
    from checkpoints.specs import load_stacked, resolve_spec
    from checkpoints.world.matching import entity_hit
    from checkpoints.world.quality import greedy_answers
    from checkpoints.world.store import ensure_tokenizer, load_world
    from uds_core.loading import DTYPES

    preset, seed = world_of(zoo)
    model = load_stacked(resolve_spec(spec_of(zoo, name)), {}, dtype=DTYPES[SCORE_DTYPE])
    tok = ensure_tokenizer(preset.name, seed)
    out: dict = {"max_new_tokens": CHECK_TOKENS, "dtype": SCORE_DTYPE,
                 "matching": "entity string in the greedy chat answer (case and punctuation folded)"}
    for wording, field in (("forget_questions", "question"), ("paraphrased_questions", "paraphrased_question")):
        items = [it for it in load_world(preset.name, seed).forget if it.get("entity") and it.get(field)]
        t0 = time.time()
        answers = greedy_answers(model, tok, [it[field] for it in items], CHECK_TOKENS, batch_size=8)
        hits = [entity_hit(a, it["entity"]) for a, it in zip(answers, items)]
        out[wording] = {"rate": sum(hits) / len(hits), "n": len(hits), "seconds": round(time.time() - t0, 1),
                        "answers": [{"idx": it["idx"], "entity": it["entity"], "hit": h, "answer": a}
                                    for it, a, h in zip(items, answers, hits)]}
    return out


def _cli(argv: list[str]) -> None:
    """`uds ARGV` as a user runs it (its own process: its peak memory is the unit's)."""
    import subprocess

    rc = subprocess.run([sys.executable, "-m", "uds", *argv]).returncode
    if rc:
        raise SystemExit(f"uds {' '.join(argv)} exited with {rc}")


def score(zoo: str, name: str, scratch: Path) -> dict:
    out = scratch / f"score-{name}"
    _cli(["score", "--unlearned", spec_of(zoo, name), "--dtype", SCORE_DTYPE, "--out", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    examples = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines() if line.strip()]
    return {"summary": summary, "examples": examples}


def metrics(zoo: str, name: str, scratch: Path) -> dict:
    out = scratch / f"metrics-{name}"
    _cli(["metrics", "--model", spec_of(zoo, name), "--metrics", "all", "--dtype", SCORE_DTYPE, "--out", str(out)])
    return {"files": {p.name: json.loads(p.read_text()) for p in sorted(out.glob("*.json"))}}


def _uds_models(zoo: str, name: str, dtype: torch.dtype):
    """(full, retain, `name`) of the world over one shared base, the records and the tokenizer."""
    from metrics.session import EvalSession, Placement

    session = EvalSession(spec_of(zoo, name), placement=Placement("cpu", dtype), with_base=False)
    specs = [session.spec_of(r) for r in ("full", "retain", "model")]
    return [session.model(s) for s in specs], session.records(), session.tokenizer(specs[0])


def exactness(zoo: str, name: str, scratch: Path) -> dict:
    """The fast engine against the straightforward per-layer path on the first annotated
    examples, float32, the two interleaved (fast, naive, fast): per-example UDS and per-layer
    deltas compared, seconds of each."""
    from uds_core.engine import EngineSettings, UdsModels, compute_uds
    from uds_core.prompts import prepare_examples

    (full, retain, unlearned), records, tok = _uds_models(zoo, name, torch.float32)
    examples = prepare_examples(records[:EXACTNESS_EXAMPLES], tok)
    models = UdsModels(full, retain, unlearned)
    runs, seconds = {}, {"fast": [], "naive": []}
    for algorithm in ("fast", "naive", "fast"):
        t0 = time.perf_counter()
        runs[algorithm] = compute_uds(models, examples, EngineSettings(algorithm=algorithm))
        seconds[algorithm].append(time.perf_counter() - t0)
    fast, naive = runs["fast"], runs["naive"]
    diff_uds = [abs(a - b) for a, b in zip(fast.uds, naive.uds) if a is not None and b is not None]
    diff_delta = max(float(abs(fast.s1.deltas - naive.s1.deltas).max()),
                     float(abs(fast.s2.deltas - naive.s2.deltas).max()))
    return {"dtype": "float32", "examples": len(examples.items), "layers": len(fast.s1.layers),
            "uds_fast": fast.uds, "uds_naive": naive.uds, "max_abs_uds_diff": max(diff_uds, default=None),
            "max_abs_delta_diff": diff_delta, "seconds": seconds,
            "naive_over_fast": min(seconds["naive"]) / min(seconds["fast"])}


def precision(zoo: str, name: str, scratch: Path) -> dict:
    """UDS of `name` in float32 on every annotated example (S1 too in float32), the per-example
    values kept for the comparison with the committed bfloat16 score."""
    out = scratch / f"score32-{name}"
    _cli(["score", "--unlearned", spec_of(zoo, name), "--dtype", "float32", "--out", str(out)])
    summary = json.loads((out / "summary.json").read_text())
    examples = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines() if line.strip()]
    return {"summary": summary, "examples": examples}


UNITS = {"build": build, "knowledge": knowledge, "score": score, "metrics": metrics,
         "exactness": exactness, "precision": precision}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("kind", choices=sorted(UNITS) + ["prepare"])
    p.add_argument("model", help="the unit's model; of `prepare`, the models to build, comma-separated")
    p.add_argument("--zoo", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--scratch", required=True)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    if args.kind in ("build", "prepare", "knowledge"):   # in-process bfloat16 work (the others run `uds` commands)
        use_for_process("cpu", torch.bfloat16)
    scratch = Path(args.scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    if args.kind == "prepare":
        result = prepare(args.zoo, args.model.split(","))
    else:
        result = UNITS[args.kind](args.zoo, args.model, scratch)
    Path(args.out).write_text(json.dumps(result, allow_nan=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
