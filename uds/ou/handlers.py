"""Metric handlers in Open-Unlearning's calling convention, `fn(model, **kwargs) -> dict`.

`uds_handler`: UDS with OU's loaded model as the unlearned model (S2 source) and the full/retain
anchors of the YAML; S1 comes from the S1 cache of `uds score` (same key function,
`uds_core.s1_cache.s1_key`). `metric_handler(key)`: any registry metric (metrics/registry.py) with OU's
model in the "model" role. Both return JSON-safe dicts: `agg_value` (float, or None when nothing
was scored), `value_by_index` keyed by dataset row index (str, as JSON writes it), counts, a 95%
bootstrap interval and the settings. Bad input raises UdsInputError with one line naming the key
or path; OU then writes no entry for the metric.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch
import torch.nn as nn

import uds
from uds_core import engine, formula, s1_cache
from uds_core.arch import attention_implementation
from uds_core.compat import check_compatible
from uds_core.engine import EngineSettings
from uds_core.errors import UdsInputError
from uds_core.fingerprint import model_fingerprint, tokenizer_hash
from uds_core.numbers import finite_or_none
from uds_core.prompts import prepare_examples
from uds_core.report import example_records, summary_fields
from metrics.context import EvalContext, EvalSettings
from metrics.registry import REGISTRY, evaluate, needs_records
from metrics.result import MetricResult
from metrics.session import EvalSession
from uds.ou.anchors import anchor_session, load_anchor, placement
from uds.ou.options import AnchorOptions, MetricOptions, UdsOptions

OU_MODEL = "open-unlearning:evaluated-model"   # the ModelPool spec of OU's model
UDS_KEY = "uds"


def json_safe(value: Any) -> Any:
    """Dicts, lists, str, bool, None and finite floats only (numpy scalars unwrapped, NaN -> None)."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        return value
    return finite_or_none(value)


def data_path_of(opts: AnchorOptions, session: EvalSession) -> str:
    """The annotated file: the YAML's, else the one that goes with the full anchor (of which the
    session takes forget_split's rows)."""
    return opts.data_path or session.data


def check_rows(records: Sequence[dict], data: Any, path: str) -> None:
    """Each annotated record's idx must be the row of its question in every dataset OU loaded for
    the metric (its `<forget_split>_perturbed`: `value_by_index` is keyed by that row)."""
    named = data.items() if isinstance(data, Mapping) else ([] if data is None else [("TOFU_QA_forget", data)])
    for name, dataset in named:   # OU passes one dataset bare, several as a dict
        rows = getattr(dataset, "data", None)
        if rows is None or "question" not in getattr(rows, "column_names", ()):
            continue
        questions = rows["question"]
        for rec in records:
            i = int(rec["idx"])
            if not 0 <= i < len(questions) or questions[i] != rec["question"]:
                raise UdsInputError(f"{path}: record idx {rec['idx']} is not row {i} of Open-Unlearning's "
                                    f"dataset {name!r} (its question differs); value_by_index would be misaligned")


def anchors(session: EvalSession, model: nn.Module, tokenizer) -> tuple[tuple, tuple]:
    """(full, its tokenizer), (retain, its tokenizer), checked patchable with OU's model."""
    full = load_anchor(session, session.spec_of("full"))
    retain = load_anchor(session, session.spec_of("retain"), full[1])
    check_compatible({f"full ({session.roles['full']})": full, f"retain ({session.roles['retain']})": retain,
                      "the evaluated model (Open-Unlearning's)": (model, tokenizer or full[1])})
    return full, retain


# --- UDS -------------------------------------------------------------------------------------

def uds_handler(model: nn.Module, **kwargs) -> dict:
    """UDS of OU's model (spec §2) against the YAML's anchors; see the module docstring."""
    opts = UdsOptions.from_kwargs(UDS_KEY, kwargs)
    session = anchor_session(opts, model)
    path = data_path_of(opts, session)
    records = session.records()   # forget_split's rows, or data_path's records (checked just below)
    check_rows(records, kwargs.get("data"), path)
    (full, tok), (retain, _) = anchors(session, model, kwargs.get("tokenizer"))
    examples = prepare_examples(records, tok)   # the full model's tokenizer encodes (spec §2.6)
    settings = EngineSettings(component=opts.component, batch_size=int(opts.batch_size))
    device, dtype = placement(model)
    fps = {"full": session.fingerprint(session.roles["full"]), "retain": session.fingerprint(session.roles["retain"])}
    with torch.no_grad():
        cache = s1_cache.CacheUse(dtype, torch.device(device).type, enabled=bool(opts.s1_cache), fingerprints=fps)
        run = s1_cache.cached_uds(engine.UdsModels(full, retain, model), examples, settings, cache,
                                  tau=float(opts.tau))
    meta = {"full_model": opts.full_model, "retain_model": session.roles["retain"], "data_path": str(path),
            "forget_split": session.split.name if session.split else None, "annotation": session.annotation,
            "data_hash": run.key["data"], "tau": float(opts.tau), "batch_size": settings.batch_size,
            "component": settings.component, "device": device, "dtype": s1_cache.dtype_name(dtype),
            "attn_implementation": attention_implementation(full), "algorithm": run.key["algorithm"],
            "s1_cache": run.state,
            "fingerprints": {**fps, "unlearned": model_fingerprint(model), "tokenizer": tokenizer_hash(tok)},
            "uds_version": uds.__version__}
    return uds_document(run.result, [r["idx"] for r in records], meta)


def uds_document(result: engine.UdsResult, order: Sequence[Any], meta: dict) -> dict:
    """OU's result layout for UDS: agg_value None when no example was scored (never 0 for "no data")."""
    fields = summary_fields(result)
    by_index = {str(r["idx"]): {"score": r["uds"], "ke_layers": r["ke_layers"], "skipped_reason": r["skipped_reason"]}
                for r in example_records(result, order)}
    counts = {k: fields[k] for k in ("n_examples", "n_scored", "n_skipped", "ci95", "skipped_reasons", "layers")}
    return json_safe({"agg_value": fields["uds"] if fields["n_scored"] else None, "value_by_index": by_index,
                      **counts, "settings": meta})


# --- registry metrics --------------------------------------------------------------------------

_CONTEXTS: dict[tuple, EvalContext] = {}


def _context(model: nn.Module, tokenizer, template_args: Mapping | None, opts: MetricOptions) -> EvalContext:
    """One evaluation context per (OU model, anchors, settings) in this process, so several
    `uds_<key>` metrics of one run share their sweeps, generations and hidden states."""
    shared = tuple((k, v) for k, v in vars(opts).items() if k != "key")
    ckey = (id(model), shared)
    if ckey not in _CONTEXTS:
        session = anchor_session(opts, model)
        (_, full_tok), _ = anchors(session, model, tokenizer)
        # OU's own rule: the YAML's system prompt, else the one of OU's model config, else none
        system_prompt = (opts.system_prompt if opts.system_prompt is not None
                         else (template_args or {}).get("system_prompt")) or None
        roles = {**session.roles, "model": OU_MODEL, "base": opts.fluency_base or session.roles["base"]}

        def loader(s: str) -> nn.Module:
            return model if s == OU_MODEL else load_anchor(session, s, full_tok)[0]
        settings = EvalSettings(batch_size=int(opts.batch_size), max_new_tokens=int(opts.max_new_tokens),
                                system_prompt=system_prompt, parity=opts.parity, device=placement(model)[0])
        _CONTEXTS[ckey] = session.context(settings, records=False, loader=loader, roles=roles,
                                          tokenizer=tokenizer or full_tok)
    return _CONTEXTS[ckey]


def registry_metric(bound: str, model: nn.Module, kwargs: Mapping[str, Any]) -> dict:
    """Registry metric `bound` (or the YAML's `key`, which must agree) of OU's model."""
    handler = f"uds_{bound}"
    opts = MetricOptions.from_kwargs(handler, kwargs)
    session = anchor_session(opts, model)   # a wrong anchor path or name fails first
    key = opts.key or bound
    if key not in REGISTRY or key == UDS_KEY:
        valid = ", ".join(k for k in REGISTRY if k != UDS_KEY)
        raise UdsInputError(f"metric handler {handler!r}: unknown registry metric key {key!r} in its YAML "
                            f"(valid: {valid}; UDS itself is the `uds` handler)")
    if key != bound:
        raise UdsInputError(f"metric handler {handler!r} computes {bound!r}, but its YAML says key: {key!r}")
    ctx = _context(model, kwargs.get("tokenizer"), kwargs.get("template_args"), opts)
    path = None
    if needs_records([key]) and not ctx.uds_records:
        path = data_path_of(opts, session)
        records = session.records()
        check_rows(records, kwargs.get("data"), path)
        ctx.uds_records = records
    with torch.no_grad():
        result = evaluate(ctx, [key])[key]
    return metric_document(key, result, ctx, opts, path)


def _by_index(values: Sequence[Any] | None, ctx: EvalContext) -> dict[str, Any]:
    """Per-item values keyed by row: of the forget split when aligned with it, else of the
    annotated records (their idx); {} when the metric has no per-item values."""
    if not values:
        return {}
    forget = ctx.splits.get("forget") or []
    if len(values) == len(forget):
        return {str(i): v for i, v in enumerate(values)}
    if len(values) == len(ctx.uds_records):
        return {str(r["idx"]): v for r, v in zip(ctx.uds_records, values)}
    return {str(i): v for i, v in enumerate(values)}


def metric_document(key: str, result: MetricResult, ctx: EvalContext, opts: MetricOptions,
                    data_path: str | None) -> dict:
    per_item = list(result.per_example) if result.per_example is not None else None
    scored = [v for v in (per_item or []) if finite_or_none(v) is not None]
    ci = formula.bootstrap_ci([finite_or_none(v) for v in per_item]) if per_item else None
    s = ctx.settings
    settings = {"key": key, "full_model": opts.full_model, "retain_model": ctx.models.specs.get("retain"),
                "forget_split": opts.forget_split,
                "data_path": data_path, "batch_size": s.batch_size, "max_new_tokens": s.max_new_tokens,
                "system_prompt": s.system_prompt, "parity": s.parity, "device": s.device,
                "orientation": REGISTRY[key].orientation, "uds_version": uds.__version__}
    return json_safe({"agg_value": result.value, "value_by_index": _by_index(per_item, ctx),
                      "n_items": len(per_item) if per_item is not None else None, "n_scored": len(scored),
                      "ci95": list(ci) if ci else None, "info": dict(result.info), "settings": settings})


def metric_handler(key: str) -> Callable[..., dict]:
    """The OU handler `uds_<key>` of one registry metric."""
    def handler(model: nn.Module, **kwargs) -> dict:
        return registry_metric(key, model, kwargs)
    handler.__name__ = handler.__qualname__ = f"uds_{key}"
    handler.__doc__ = f"Registry metric {key!r} of Open-Unlearning's model: {REGISTRY[key].description}."
    return handler


def handlers() -> dict[str, Callable[..., dict]]:
    """Handler name -> function: `uds` and `uds_<key>` for every other registry metric."""
    return {UDS_KEY: uds_handler, **{f"uds_{k}": metric_handler(k) for k in REGISTRY if k != UDS_KEY}}
