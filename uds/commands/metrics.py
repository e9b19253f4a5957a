"""`uds metrics`: the baseline metrics and the TOFU utility metrics of one model.

Writes `DIR/metrics.json` = {"model", "metrics": {KEY: float|null}, "per_example": {KEY: [...]},
"fluency_source", "settings"} (docs/design.md). Reference models default as for `uds score`.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

from checkpoints.specs import file_name
from uds_core import atomic
from uds_core.chat import DATE_STRING
from uds_core.defaults import MAX_NEW_TOKENS, OU_SYSTEM_PROMPT
from uds_core.errors import UdsInputError
from uds_core.progress import progress as track
from uds_core.parity import MODES, OPEN_UNLEARNING, resolve_alias
from metrics.context import EvalContext, EvalSettings
from metrics.mia import MIN_K
from metrics.registry import (BASELINE_KEYS, BASELINE_METRICS, computation_order, evaluate, metric_keys,
                              needs_records)
from metrics.result import MetricResult
from metrics.session import EvalSession, Placement
from uds import metrics_resume as resume
from uds.cpu_bf16 import products_in_use
from uds.device_args import add_device_args, device_and_dtype
from uds.split_args import add_split_arg, report_annotation

DEFAULT_OUT = Path("out") / "metrics"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("metrics", help="the baseline metrics and TOFU utility of one model",
                              description=f"`uds metrics`: the {len(BASELINE_METRICS)} baseline metrics "
                                          f"({len(BASELINE_KEYS)} keys) and the TOFU utility metrics of one model.")
    p.add_argument("--model", required=True, help="checkpoint spec of the evaluated model")
    p.add_argument("--metrics", default="all", help="all, or comma-separated keys (default: all)")
    p.add_argument("--out", help=f"output folder (default: {DEFAULT_OUT}/<model>)")
    p.add_argument("--full", help="full (knowledge-present) reference model; default as `uds score`")
    p.add_argument("--retain", help="retain reference model; default as `uds score`")
    p.add_argument("--data", help="annotated forget file for CKA / Logit Lens / Fisher (default as `uds score`; "
                                  "plain question/answer records get their spans as `uds annotate` finds them)")
    add_split_arg(p)
    p.add_argument("--tofu-dir", help="folder of the TOFU JSON files (real checkpoints; default $UDS_TOFU_DIR, "
                                      "else each file from the Hugging Face Hub, cached in $UDS_HOME/hub)")
    p.add_argument("--base", metavar="SPEC",
                   help="base model of every adapter-folder spec (default: its adapter_config.json's)")
    p.add_argument("--batch-size", type=int, default=8)
    add_device_args(p)
    p.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    p.add_argument("--system-prompt", help=f"system turn of the chat encoding (real models: {OU_SYSTEM_PROMPT!r})")
    p.add_argument("--no-system-prompt", action="store_true", help="no system turn (the tiny world's default)")
    p.add_argument("--fluency-classifier", metavar="PATH", help="local gibberish-classifier folder (spec §4.6)")
    p.add_argument("--fluency-base", metavar="SPEC", help="base LM of the fluency proxy (tiny default: <preset>/base)")
    p.add_argument("--mem-bits-reference", metavar="SPEC",
                   help="code-length reference of the mem_bits metrics (default: the retain model; the source's "
                        "choice is a larger or superset-trained model, docs/mem_bits.md)")
    p.add_argument("--parity", choices=MODES, default=None,
                   help="whose numerics: spec (default, docs/spec.md), reference (the reference implementation's "
                        "1e-12 probability floors, model-dtype Logit Lens / Fisher, last-layer UDS quirk) or "
                        "open-unlearning (OU's input_ids != pad attention mask and model-utility mean); "
                        "docs/parity.md")
    p.add_argument("--ou-attention-mask", action="store_true",
                   help="alias of --parity open-unlearning (mask the pad-id positions as OU does)")
    p.set_defaults(func=run, resumes=True)


def report(model: str, results: dict, settings: dict) -> dict:
    """The `metrics.json` document of one run: each result's JSON record (`metrics_resume.to_record`)
    spread over the document's value, per-example and info tables."""
    records = {k: resume.to_record(r) for k, r in results.items()}
    sources = [r.info["fluency_source"] for r in results.values() if "fluency_source" in r.info]
    return {"model": model,
            "metrics": {k: rec["value"] for k, rec in records.items()},
            "per_example": {k: rec["per_example"] for k, rec in records.items() if rec["per_example"] is not None},
            "fluency_source": sources[0] if sources else None,
            "info": {k: rec["info"] for k, rec in records.items() if rec["info"]},   # e.g. mem_bits_signed's ci95
            "settings": settings}


def _check_numbers(args: argparse.Namespace) -> None:
    if args.batch_size < 1:
        raise UdsInputError(f"--batch-size must be at least 1 (got {args.batch_size})")
    if args.max_new_tokens < 1:
        raise UdsInputError(f"--max-new-tokens must be at least 1 (got {args.max_new_tokens})")


FLUENCY_UNAVAILABLE = "unavailable: pass --fluency-classifier PATH or --fluency-base SPEC"


def open_session(args: argparse.Namespace) -> EvalSession:
    """The run's session: --model resolved first, references defaulted as `uds score`'s, every
    reference spec resolved before any model work."""
    device, dtype = device_and_dtype(args)
    return EvalSession(args.model, full=args.full, retain=args.retain, data=args.data,
                       base=args.fluency_base, tofu_dir=args.tofu_dir,
                       adapter_base=getattr(args, "base", None), placement=Placement(device, dtype),
                       reference=args.mem_bits_reference, split=getattr(args, "split", None))


def _fluency_available(keys: list[str], args: argparse.Namespace, roles: dict, explicit: bool) -> bool:
    """Whether fluency can be measured; an explicit request without a measure is bad input."""
    if "fluency" not in keys or args.fluency_classifier or roles["base"]:
        return True
    if explicit:
        raise UdsInputError(f"fluency is {FLUENCY_UNAVAILABLE} (no hub classifier is fetched at run time)")
    print(f"uds metrics: fluency left out, {FLUENCY_UNAVAILABLE}", file=sys.stderr)
    return False


def run(args: argparse.Namespace) -> int:
    keys = metric_keys(args.metrics)
    _check_numbers(args)
    args.parity = resolve_alias(args.parity, args.ou_attention_mask, "--ou-attention-mask", OPEN_UNLEARNING)
    session = open_session(args)
    roles = session.roles
    computed = keys if _fluency_available(keys, args, roles, args.metrics.strip() != "all") else \
        [k for k in keys if k != "fluency"]
    settings = EvalSettings(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                            system_prompt=session.system_prompt(args.system_prompt, none=args.no_system_prompt),
                            parity=args.parity, device=session.placement.device)
    ctx = session.context(settings, computed, records=needs_records(computed),
                          fluency_classifier=args.fluency_classifier)
    report_annotation(session, "uds metrics")
    out = Path(args.out) if args.out else DEFAULT_OUT / file_name(args.model)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    identity = _Identity(session, ctx, lambda: _settings_record(ctx, session, args, None))
    results = _kept(out, identity)
    todo = [k for k in computation_order(computed) if k not in results]
    # the work plans stay the whole run's (the same sweeps, so the same numbers as a run never
    # stopped); a kept metric is not computed again, nor as a dependency
    ctx.results.update(results)
    for k in track(todo, desc="uds metrics", unit="metric", enabled=ctx.settings.progress):
        results.update(evaluate(ctx, [k]))
        if identity() is not None:
            resume.save(out, identity(), results)
    missing = {"fluency": MetricResult(None, None, {"fluency_source": FLUENCY_UNAVAILABLE})}
    results = {k: results[k] if k in results else missing[k] for k in keys}
    doc = report(args.model, results, _settings_record(ctx, session, args, time.time() - t0))
    atomic.write_json(out / "metrics.json", doc, indent=1, allow_nan=False)
    resume.finish(out)
    print(out / "metrics.json")
    return 0


def _settings_record(ctx: EvalContext, session: EvalSession, args: argparse.Namespace,
                     seconds: float | None) -> dict:
    s, roles, dtype, data_path = ctx.settings, session.roles, session.placement.dtype, session.data
    skipped = [{"idx": it.idx, "reason": it.reason} for it in ctx.uds_items()[1]] if ctx.uds_records else []
    return {"split": session.split.name if session.split else None, "annotation": session.annotation,
            "references": {r: roles[r] for r in ("full", "retain", "base")}
                          | {"mem_bits_reference": roles.get("reference") or roles["retain"]},
            "n_items": {name: len(items) for name, items in ctx.splits.items()},
            "representation_data": str(data_path) if ctx.uds_records else None,
            "representation_items": len(ctx.uds_records) - len(skipped) if ctx.uds_records else 0,
            "representation_skipped": skipped,
            "batch_size": s.batch_size, "max_new_tokens": s.max_new_tokens, "system_prompt": s.system_prompt,
            "date_string": DATE_STRING, "max_length": s.max_length, "fisher_batch_size": s.fisher_batch_size,
            "parity": s.parity, "attention_mask": "ou-pad-masked" if s.open_unlearning else "length",
            "min_k": MIN_K,
            "device": s.device, "dtype": str(dtype).replace("torch.", ""),
            "bf16_products": products_in_use(s.device, dtype),
            "fluency_classifier": args.fluency_classifier, "seconds": None if seconds is None else round(seconds, 1)}


class _Identity:
    """The run's identity for `uds.metrics_resume`, computed when first asked for with every model
    at hand (a tiny world not built yet is built by the first metrics) and kept."""

    def __init__(self, session: EvalSession, ctx: EvalContext, settings: Callable[[], dict]) -> None:
        self._session, self._ctx, self._settings, self._value = session, ctx, settings, None

    def __call__(self) -> str | None:
        """The identity; None while a model has none (no folder: a tiny model not built yet, or one
        given in memory), and nothing is kept then."""
        if self._value is None:
            s, records = self._session, self._ctx.uds_records
            try:
                models = {role: [spec, resume.model_identity(s.resolve(spec))]
                          for role, spec in s.roles.items() if spec}
            except UdsInputError:
                return None
            settings = self._settings() | {"records": resume.digest_of(records) if records else None}
            self._value = resume.run_identity(models, settings)
        return self._value


def _kept(out: Path, identity: _Identity) -> dict[str, MetricResult]:
    """The metrics a previous run into `out` finished, when it was this run (else none)."""
    if not (out / resume.PARTIAL).exists():
        return {}
    key = identity()
    if key is None:
        print(f"uds metrics: not resuming from {out / resume.PARTIAL} (a model of this run has no folder to "
              "identify it); starting over", file=sys.stderr)
        return {}
    return resume.load(out, key)
