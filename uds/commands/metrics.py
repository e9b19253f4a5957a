"""`uds metrics`: the 19 baseline metrics and the TOFU utility metrics of one model.

Writes `DIR/metrics.json` = {"model", "metrics": {KEY: float|null}, "per_example": {KEY: [...]},
"fluency_source", "settings"} (DESIGN.md). Reference models default as for `uds score`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from tqdm.auto import tqdm

from metrics.context import EvalContext, EvalSettings, ModelPool, eval_splits
from metrics.encoding import OU_SYSTEM_PROMPT
from metrics.mia import MIN_K
from uds.parity import MODES, OPEN_UNLEARNING, resolve_alias
from metrics.registry import REGISTRY, evaluate, metric_keys, sweep_plan, with_dependencies
from metrics.result import MetricResult
from uds.chat import DATE_STRING
from uds.errors import UdsInputError
from uds.device_args import add_device_args, device_and_dtype
from uds.numbers import finite_or_none

DEFAULT_OUT = Path("out") / "metrics"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("metrics", help="the 19 baseline metrics and TOFU utility of one model",
                              description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, help="checkpoint spec of the evaluated model")
    p.add_argument("--metrics", default="all", help="all, or comma-separated keys (default: all)")
    p.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT}/<model>)")
    p.add_argument("--full", help="full (knowledge-present) reference model; default as `uds score`")
    p.add_argument("--retain", help="retain reference model; default as `uds score`")
    p.add_argument("--data", help="annotated forget file for CKA / Logit Lens / Fisher (default as `uds score`)")
    p.add_argument("--tofu-dir", help="folder of the TOFU JSON files (real checkpoints)")
    p.add_argument("--base", metavar="SPEC",
                   help="base model of every adapter-folder spec (default: its adapter_config.json's)")
    p.add_argument("--batch-size", type=int, default=8)
    add_device_args(p)
    p.add_argument("--max-new-tokens", type=int, default=200)
    p.add_argument("--system-prompt", help=f"system turn of the chat encoding (real models: {OU_SYSTEM_PROMPT!r})")
    p.add_argument("--no-system-prompt", action="store_true", help="no system turn (the tiny world's default)")
    p.add_argument("--fluency-classifier", metavar="PATH", help="local gibberish-classifier folder (SPEC 4.6)")
    p.add_argument("--fluency-base", metavar="SPEC", help="base LM of the fluency proxy (tiny default: <preset>/base)")
    p.add_argument("--parity", choices=MODES, default=None,
                   help="whose numerics: spec (default, SPEC.md), reference (the reference implementation's "
                        "1e-12 probability floors, model-dtype Logit Lens / Fisher, last-layer UDS quirk) or "
                        "open-unlearning (OU's input_ids != pad attention mask and model-utility mean); "
                        "docs/parity.md")
    p.add_argument("--ou-attention-mask", action="store_true",
                   help="alias of --parity open-unlearning (mask the pad-id positions as OU does)")
    p.set_defaults(func=run)


def _json_value(v):
    """Floats for JSON: numpy scalars unwrapped, NaN/inf -> null, lists recursively."""
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, (str, bool)):
        return v
    return finite_or_none(v)


def report(model: str, results: dict, settings: dict) -> dict:
    """The `metrics.json` document of one run."""
    sources = [r.info["fluency_source"] for r in results.values() if "fluency_source" in r.info]
    return {"model": model,
            "metrics": {k: _json_value(r.value) for k, r in results.items()},
            "per_example": {k: _json_value(r.per_example) for k, r in results.items() if r.per_example is not None},
            "fluency_source": sources[0] if sources else None,
            "settings": settings}


def _needs(keys: list[str], kind: str) -> bool:
    return any(u.kind == kind for k in with_dependencies(keys) for u in REGISTRY[k].uses)


def _check_numbers(args: argparse.Namespace) -> None:
    if args.batch_size < 1:
        raise UdsInputError(f"--batch-size must be at least 1 (got {args.batch_size})")
    if args.max_new_tokens < 1:
        raise UdsInputError(f"--max-new-tokens must be at least 1 (got {args.max_new_tokens})")


FLUENCY_UNAVAILABLE = "unavailable: pass --fluency-classifier PATH or --fluency-base SPEC"


def _roles(args: argparse.Namespace):
    """(resolved spec of --model, role -> spec string, annotated data path), references defaulted."""
    from checkpoints.specs import check_base_used, default_references, resolve_spec, tiny_base

    base = getattr(args, "base", None)   # a Namespace built by hand may not carry it
    spec = resolve_spec(args.model, base)
    full_d, retain_d, data_d = default_references(args.model, args.tofu_dir, base)
    roles = {"model": args.model, "full": args.full or full_d, "retain": args.retain or retain_d,
             "base": args.fluency_base or tiny_base(spec)}
    for role in ("full", "retain", "base"):
        if roles[role]:
            resolve_spec(roles[role], base)  # fail fast on a bad reference spec, before any model work
    check_base_used(list(roles.values()), base)
    return spec, roles, args.data or data_d


def _fluency_available(keys: list[str], args: argparse.Namespace, roles: dict, explicit: bool) -> bool:
    """Whether fluency can be measured; an explicit request without a measure is bad input."""
    if "fluency" not in keys or args.fluency_classifier or roles["base"]:
        return True
    if explicit:
        raise UdsInputError(f"fluency is {FLUENCY_UNAVAILABLE} (no hub classifier is fetched at run time)")
    print(f"uds metrics: fluency left out, {FLUENCY_UNAVAILABLE}", file=sys.stderr)
    return False


def _build_context(args: argparse.Namespace, spec, roles: dict, keys: list[str], data_path: str):
    from checkpoints.specs import load_model, load_tokenizer, load_world_for_spec, origin
    from uds.data import load_annotated

    device, dtype = device_and_dtype(args)
    system_prompt = None if args.no_system_prompt else (
        args.system_prompt if args.system_prompt is not None else (None if origin(spec).kind == "tiny" else OU_SYSTEM_PROMPT))
    world = load_world_for_spec(spec, args.tofu_dir)
    settings = EvalSettings(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens, system_prompt=system_prompt,
                            parity=args.parity, device=device)
    needs_items = _needs(keys, "states") or _needs(keys, "fisher")
    ctx = EvalContext(
        splits=eval_splits(world),
        uds_records=load_annotated(data_path) if needs_items else [],
        tokenizer=load_tokenizer(spec),
        models=ModelPool(roles, lambda s: load_model(s, device=device, dtype=dtype, base=getattr(args, "base", None))),
        settings=settings, plan=sweep_plan(keys), fluency_classifier=args.fluency_classifier)
    return ctx, dtype


def run(args: argparse.Namespace) -> int:
    keys = metric_keys(args.metrics)
    _check_numbers(args)
    args.parity = resolve_alias(args.parity, args.ou_attention_mask, "--ou-attention-mask", OPEN_UNLEARNING)
    spec, roles, data_path = _roles(args)
    computed = keys if _fluency_available(keys, args, roles, args.metrics.strip() != "all") else \
        [k for k in keys if k != "fluency"]
    ctx, dtype = _build_context(args, spec, roles, computed, data_path)
    t0 = time.time()
    results = {}
    for k in tqdm(computed, desc="metrics", disable=not ctx.settings.progress):
        results.update(evaluate(ctx, [k]))
    missing = {"fluency": MetricResult(None, None, {"fluency_source": FLUENCY_UNAVAILABLE})}
    results = {k: results[k] if k in results else missing[k] for k in keys}
    out = Path(args.out) if args.out else DEFAULT_OUT / re.sub(r"[^\w.-]+", "_", args.model)
    out.mkdir(parents=True, exist_ok=True)
    doc = report(args.model, results, _settings_record(ctx, roles, args, dtype, time.time() - t0, data_path))
    (out / "metrics.json").write_text(json.dumps(doc, indent=1, allow_nan=False))
    print(out / "metrics.json")
    return 0


def _settings_record(ctx: EvalContext, roles: dict, args: argparse.Namespace, dtype, seconds: float,
                     data_path: str) -> dict:
    s = ctx.settings
    skipped = [{"idx": it.idx, "reason": it.reason} for it in ctx.uds_items()[1]] if ctx.uds_records else []
    return {"references": {r: roles[r] for r in ("full", "retain", "base")},
            "n_items": {name: len(items) for name, items in ctx.splits.items()},
            "representation_data": str(data_path) if ctx.uds_records else None,
            "representation_items": len(ctx.uds_records) - len(skipped) if ctx.uds_records else 0,
            "representation_skipped": skipped,
            "batch_size": s.batch_size, "max_new_tokens": s.max_new_tokens, "system_prompt": s.system_prompt,
            "date_string": DATE_STRING, "max_length": s.max_length, "fisher_batch_size": s.fisher_batch_size,
            "parity": s.parity, "attention_mask": "ou-pad-masked" if s.open_unlearning else "length",
            "min_k": MIN_K,
            "device": s.device, "dtype": str(dtype).replace("torch.", ""),
            "fluency_classifier": args.fluency_classifier, "seconds": round(seconds, 1)}
