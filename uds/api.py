"""UDS from Python: `uds.score`, the measurement of `uds score` with the same defaults and files.

    import uds
    run = uds.score("tiny:test/npo_lr1e-3_b01_a1_ep5")
    run.uds, run.ci95, run.examples[0]["ke_layers"]

`measure` is the one place that turns a run's specs into a scored `UdsResult` and the summary's
models and settings; the command line (`uds/commands/score.py`) and `score` both call it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from uds_core import s1_cache
from uds_core.arch import FAST_FAMILIES, Component
from uds_core.compat import check_compatible, check_compatible_configs
from uds_core.engine import EngineSettings, UdsResult
from uds_core.errors import UdsInputError
from uds_core.fingerprint import tokenizer_hash
from uds_core.formula import TAU
from uds_core.loading import resolve_device, resolve_dtype
from uds_core.memory import check_fits, count_parameters
from uds_core.progress import progress as track
from uds_core.report import example_records, summary_fields, write_report
from metrics.session import EvalSession, Placement
from metrics.spec import FULL, MODEL, RETAIN
from uds.cpu_bf16 import bf16_products, products_in_use
from uds.split_args import report_annotation
from uds.version import __version__

ROLES = ("full", "retain", "unlearned")
SESSION_ROLE = {"full": FULL, "retain": RETAIN, "unlearned": MODEL}   # the command line's words -> the session's roles
Parity = Literal["spec", "reference"]


@dataclass(frozen=True)
class Score:
    """One UDS measurement. `uds`: mean over the scored examples, in [0, 1] (1 = erased as deeply as
    the retain model, 0 = intact). `examples`: one dict per example in data order (`idx`, `uds` or
    None, `skipped_reason`, `ke_layers`, `s1_delta` / `s2_delta`: one value per layer, in nats).
    `summary`: what `summary.json` holds (counts, interval, models, fingerprints, settings)."""

    uds: float
    n_scored: int
    n_examples: int
    ci95: tuple[float, float] | None
    examples: list[dict]
    summary: dict
    result: UdsResult


def measure(unlearned: str, *, full: str | None, retain: str | None, data: str | None, split: str | None,
            base: str | None, settings: EngineSettings, tau: float, placement: Placement, parity: Parity,
            use_s1_cache: bool, started: float) -> tuple[UdsResult, dict, list]:
    """Score `unlearned` against its references (defaulted as docs/design.md says):
    (result, the summary's model and settings fields, the data's idx order)."""
    session = EvalSession(unlearned, full=full, retain=retain, data=data, adapter_base=base, placement=placement,
                          with_base=False, split=split)
    records = session.records()   # bad data fails before any model loads
    report_annotation(session, "uds score")
    specs = {role: session.spec_of(SESSION_ROLE[role]) for role in ROLES}
    full_tok = session.tokenizer(specs["full"])   # encodes for all three (spec §2.6)
    labels = {role: f"{role} ({s})" for role, s in specs.items()}
    # checked from configs and tokenizers before any weights load; an adapter, whose fit to its base
    # shows only when it is merged, is checked as it loads
    adapters = {role for role, s in specs.items() if session.resolve(s).kind == "adapter"}
    if "full" not in adapters:
        check_compatible_configs({labels[role]: (session.config(s), session.tokenizer(s, fallback=full_tok))
                                  for role, s in specs.items() if role not in adapters})
        # staged: one model computes at a time on the fast path (`s1_cache.one_at_a_time_uds`),
        # else S1 holds full and retain, S2 full and the unlearned model
        config = session.config(specs["full"])
        held = 1 if settings.algorithm == "fast" and config.model_type in FAST_FAMILIES else 2
        check_fits("uds score", count_parameters(config), placement.dtype, held, placement.device)

    def loaded(spec: str, model) -> None:
        for role in ROLES:
            if specs[role] == spec and role != "full" and (adapters & {role, "full"}):
                check_compatible({labels["full"]: (session.model(specs["full"]), full_tok),
                                  labels[role]: (model, session.tokenizer(spec, fallback=full_tok))})

    with track(total=None, desc="uds score", unit="pass") as bar:
        run, _, _ = session.score_uds(settings, tau, use_cache=use_s1_cache, meter=bar, staged=True, loaded=loaded)
    key = run.key
    fps = {role: session.fingerprint(s) for role, s in specs.items()}
    meta = {"full": specs["full"], "retain": specs["retain"], "unlearned": unlearned, "data": str(session.data),
            "split": session.split.name if session.split else None, "annotation": session.annotation,
            "data_hash": key["data"], "fingerprints": {**fps, "tokenizer": tokenizer_hash(full_tok)},
            "component": settings.component, "dtype": s1_cache.dtype_name(placement.dtype),
            "bf16_products": products_in_use(placement.device, placement.dtype),
            "logprob_dtype": settings.logprob_dtype, "device": placement.device, "batch_size": settings.batch_size,
            "parity": parity, "reference_last_layer": settings.reference_last_layer,
            "attn_implementation": key["attn_implementation"], "algorithm": key["algorithm"], "s1_cache": run.state,
            "uds_version": __version__, "elapsed_s": round(time.time() - started, 3)}
    return run.result, meta, [r["idx"] for r in records]


def score(unlearned: str, *, full: str | None = None, retain: str | None = None, data: str | None = None,
          split: Literal["forget01", "forget05", "forget10"] | None = None, tau: float = TAU, batch_size: int = 8,
          device: Literal["auto", "cpu", "cuda"] = "auto",
          dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto",
          component: Component = "block", parity: Parity = "spec",
          use_s1_cache: bool = True, out: str | Path | None = None) -> Score:
    """The Unlearning Depth Score of `unlearned` (any model spec: hub ID, folder, registry alias,
    `tiny:<preset>/<model>`), as `uds score` computes it (spec §2). `full`, `retain` and `data`
    default with the model (a tiny world's own; otherwise Open-Unlearning's TOFU Llama-3.2-1B
    references and the annotated forget10 set). `out`: also write the four files of
    `uds score --out` there. Bad input raises `UdsInputError`."""
    started = time.time()
    if not tau >= 0:
        raise UdsInputError(f"tau must be >= 0, got {tau}")
    if parity not in ("spec", "reference"):
        raise UdsInputError(f"parity must be spec or reference, got {parity!r}")
    settings = EngineSettings(component=component, batch_size=batch_size, reference_last_layer=parity == "reference")
    settings.validate()
    resolved = resolve_device(device)
    placement = Placement(resolved, resolve_dtype(dtype, resolved))
    with bf16_products(placement.device, placement.dtype):
        result, meta, order = measure(unlearned, full=full, retain=retain, data=data, split=split, base=None,
                                      settings=settings, tau=tau, placement=placement, parity=parity,
                                      use_s1_cache=use_s1_cache, started=started)
    if out is not None:
        summary = write_report(out, result, meta, order=order, title=unlearned)
    else:
        summary = {**summary_fields(result), **meta}
    ci = summary["ci95"]
    return Score(uds=summary["uds"], n_scored=summary["n_scored"], n_examples=summary["n_examples"],
                 ci95=tuple(ci) if ci else None, examples=example_records(result, order), summary=summary,
                 result=result)
