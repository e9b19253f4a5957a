"""`uds sweep`: UDS and/or the baseline metrics of many checkpoints, one task per model.

`--models` is a file (one checkpoint spec a line; blank lines and `#` comments skipped),
`ou:unlearned` (Open-Unlearning's 150 TOFU unlearned checkpoints) or `tiny:<preset>[-<seed>]`
(the unlearned models of a tiny world). Models are grouped by their references (full, retain,
data); each group's S1 half of UDS is computed once, by one task, before the fan-out. Values go
into the content-addressed store under `--out DIR/store` (a rerun measures only what is missing);
the run writes `DIR/sweep.json` and `DIR/sweep.csv`. Exit status 1 when a task failed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

from uds.executor_args import add_executor_args
from uds.device_args import add_device_args
from uds_core.defaults import MAX_NEW_TOKENS
from uds_core.paths import safe_name
from uds_core.errors import UdsInputError
from uds_core.parity import MODES as PARITY_MODES, SPEC

WHAT = ("score", "metrics")
OU_UNLEARNED = "ou:unlearned"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="UDS and/or metrics over a list of checkpoints (local or on Ray)",
                       description=__doc__.splitlines()[0])
    p.add_argument("--models", required=True, metavar="FILE|ou:unlearned|tiny:<preset>",
                   help="file of checkpoint specs (one a line), ou:unlearned, or tiny:<preset>[-<seed>]")
    p.add_argument("--what", default="score,metrics", help="score, metrics or both (default score,metrics)")
    p.add_argument("--metrics", default="all", help="what `metrics` measures: all or comma-separated keys")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (store, sweep.json, sweep.csv)")
    p.add_argument("--models-dir", metavar="DIR", help="ou:unlearned: folder of local copies, one per alias")
    p.add_argument("--tofu-dir", metavar="DIR", help="real checkpoints: folder of the TOFU JSON files")
    p.add_argument("--parity", choices=PARITY_MODES, default=SPEC, help="whose numerics (docs/parity.md)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    add_device_args(p, dtype=False)
    p.add_argument("--fluency-classifier", metavar="PATH", help="local gibberish-classifier folder (spec §4.6)")
    add_executor_args(p)
    p.set_defaults(func=run, resumes=True)


def parse_what(text: str, metrics: str) -> tuple[str, ...]:
    """The metric keys a task measures: `uds` for score, the --metrics keys for metrics."""
    from metrics.registry import metric_keys

    what = [w.strip() for w in text.split(",") if w.strip()]
    if not what or any(w not in WHAT for w in what):
        raise UdsInputError(f"--what {text!r}: choose score, metrics or score,metrics")
    keys = ["uds"] if "score" in what else []
    if "metrics" in what:
        keys += metric_keys(metrics)
    return tuple(dict.fromkeys(keys))


def model_specs(text: str, models_dir: str | None = None) -> list[str]:
    """The checkpoint specs `--models` names (nothing resolved yet)."""
    from checkpoints.specs import parse_tiny_zoo

    from meta_eval.population import UNLEARNED, ou_zoo, tiny_zoo

    if text.strip() == OU_UNLEARNED:
        return [m.spec for m in ou_zoo(models_dir).of_kind(UNLEARNED)]
    if parse_tiny_zoo(text) is not None and "/" not in text:
        return [m.spec for m in tiny_zoo(text).of_kind(UNLEARNED)]
    path = Path(text).expanduser()
    if not path.is_file():
        raise UdsInputError(f"--models {text}: no such file (or use {OU_UNLEARNED} or tiny:<preset>)")
    specs = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    specs = [s for s in specs if s]
    if not specs:
        raise UdsInputError(f"--models {text}: no checkpoint spec in the file")
    return specs


def model_name(spec: str) -> str:
    """Short name of a spec: the tiny model's or folder's name, else the sanitised spec."""
    tail = spec.rstrip("/").rsplit("/", 1)[-1] if spec.startswith("tiny:") or os.sep in spec else spec
    return safe_name(tail).strip("._-") or "model"


def group_zoos(specs: list[str], tofu_dir: str | None):
    """One Zoo per (full, retain, data) group; every spec (and reference) must exist now."""
    from checkpoints.specs import default_references, origin, resolve_spec, tiny_base
    from meta_eval.population import UNLEARNED, Member, Zoo, model_identity
    from metrics.session import system_prompt_for

    groups: dict[tuple[str, str, str], list[Member]] = {}
    names: set[str] = set()
    resolved = {}
    for i, spec in enumerate(specs, 1):
        try:
            resolved[spec] = resolve_spec(spec)
            model_identity(resolved[spec])
            refs = default_references(resolved[spec], tofu_dir)
        except UdsInputError as exc:
            raise UdsInputError(f"--models entry {i} ({spec}): {exc}") from exc
        name, n = model_name(spec), 2
        while name in names:
            name, n = f"{model_name(spec)}-{n}", n + 1
        names.add(name)
        groups.setdefault(tuple(map(str, refs)), []).append(Member(name, spec, UNLEARNED, None, None))
    zoos = []
    for (full, retain, _data), members in groups.items():
        for ref in (full, retain):
            model_identity(ref)
        first = origin(resolved[members[0].spec])   # an adapter on a tiny model is in the tiny world
        tiny = first.kind == "tiny"
        zoos.append(Zoo(f"sweep:{model_name(full)}", first.preset if tiny else None, first.seed if tiny else 0,
                        tuple(members), full, retain, tiny_base(first), tofu_dir, system_prompt_for(first)))
    return zoos


def _measurer(args: argparse.Namespace, zoo, out: Path):
    from meta_eval.measure import Measurer
    from meta_eval.perturb import RELEARN_BATCH, relearn_config
    from meta_eval.store import MeasurementStore
    from uds.executor_args import device_for
    from metrics.context import EvalSettings

    settings = EvalSettings(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                            system_prompt=zoo.system_prompt, parity=args.parity, device=device_for(args),
                            progress=False)
    return Measurer(zoo, MeasurementStore(out / "store"), out / "relearned", settings, relearn_config(RELEARN_BATCH),
                    args.fluency_classifier)


def write_outputs(out: Path, rows: list[dict], keys: tuple[str, ...], settings: dict) -> None:
    (out / "sweep.json").write_text(json.dumps({"settings": settings, "models": rows}, indent=1, allow_nan=False))
    with (out / "sweep.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "spec", *keys])
        w.writerows([[r["model"], r["spec"], *(r["values"].get(k) for k in keys)] for r in rows])


def run(args: argparse.Namespace) -> int:
    from meta_eval.measure import Job, s1_job
    from meta_eval.perturb import ORIG
    from uds.executor_args import check_executor_args, make_executor
    from meta_eval.tasks import LocalExecutor, Task, pending, report, stages

    t0 = time.time()
    if args.batch_size < 1 or args.max_new_tokens < 1:
        raise UdsInputError("--batch-size and --max-new-tokens must be at least 1")
    keys = parse_what(args.what, args.metrics)
    check_executor_args(args)
    zoos = group_zoos(model_specs(args.models, args.models_dir), args.tofu_dir)
    out = Path(args.out)
    executor = make_executor(args, out / "runs" / time.strftime(f"%Y%m%d-%H%M%S-{os.getpid()}"))
    try:
        measurers = [_measurer(args, zoo, out) for zoo in zoos]
        if isinstance(executor, LocalExecutor):
            executor.measurers.update({m.spec: m for m in measurers})
        heads, rest, jobs = [], [], []
        for m in measurers:
            group_keys = tuple(k for k in keys if k != "fluency" or args.fluency_classifier or m.zoo.base)
            group = [Job(member, ORIG, group_keys) for member in m.zoo.members]
            jobs += [(m, j) for j in group]
            first, todo = s1_job(m.zoo, group_keys), pending(m, group)
            if first is not None and m.missing(first) and todo:
                heads.append(Task(m.spec, first))
            rest += [Task(m.spec, j) for j in todo]
        print(f"sweep: {len(jobs)} model(s) in {len(zoos)} reference group(s), {len(rest)} with missing values",
              file=sys.stderr)
        records = executor.run(stages(heads, rest), lambda s: print(s, file=sys.stderr))
    finally:
        executor.close()
    rows = []
    for m, j in jobs:
        entry = m.store.entry(ORIG, j.member.name, m.stamp(j.member, ORIG))
        rows.append({"model": j.member.name, "spec": j.member.spec, "full": m.zoo.full, "retain": m.zoo.retain,
                     "values": {k: entry["values"].get(k) for k in j.keys}, "errors": entry["errors"]})
    settings = {"models": args.models, "what": args.what, "keys": list(keys), "parity": args.parity,
                "batch_size": args.batch_size, "max_new_tokens": args.max_new_tokens,
                "device": measurers[0].settings.device, "executor": args.executor, "tasks_run": len(records),
                "failed_tasks": [r.label for r in records if r.failed], "wall_seconds": round(time.time() - t0, 1)}
    out.mkdir(parents=True, exist_ok=True)
    write_outputs(out, rows, keys, settings)
    print(out / "sweep.json")
    return report(records, "sweep", lambda s: print(s, file=sys.stderr))
