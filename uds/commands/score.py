"""`uds score`: the Unlearning Depth Score of one unlearned model (DESIGN.md, SPEC.md 2)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import uds
from checkpoints.specs import file_name
from uds_core import engine, s1_cache
from uds_core.compat import check_compatible, check_compatible_configs
from uds_core.engine import EngineSettings
from uds_core.errors import UdsInputError
from uds_core.fingerprint import tokenizer_hash
from uds_core.formula import TAU
from uds_core.loading import resolve_device, resolve_dtype
from uds_core.memory import check_fits, count_parameters
from uds_core.progress import progress as track
from uds_core.parity import REFERENCE, SPEC, resolve_alias
from uds_core.report import write_report
from metrics.session import EvalSession, Placement
from uds.split_args import add_split_arg, report_annotation

ROLES = ("full", "retain", "unlearned")
SESSION_ROLE = {"full": "full", "retain": "retain", "unlearned": "model"}
SCORE_PARITY = (SPEC, REFERENCE)   # open-unlearning has no UDS of its own


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="Unlearning Depth Score of an unlearned model",
                       description="Two-stage activation patching: how much of the full model's "
                                   "entity knowledge the unlearned model's hidden states still carry.")
    p.add_argument("--unlearned", required=True, metavar="SPEC",
                   help="the unlearned model (hub ID, folder, alias, tiny:<preset>/<model>)")
    p.add_argument("--full", metavar="SPEC", help="model before unlearning (default: goes with --unlearned)")
    p.add_argument("--retain", metavar="SPEC",
                   help="model never trained on the forget set (default: goes with --unlearned)")
    p.add_argument("--data", metavar="FILE",
                   help="QA JSON: annotated (prefix, entity), or plain question/answer records, whose spans are "
                        "then found here as `uds annotate` finds them (default: goes with --unlearned)")
    add_split_arg(p)
    p.add_argument("--base", metavar="SPEC",
                   help="base model of every adapter-folder spec (default: its adapter_config.json's)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: uds_out/<unlearned name>)")
    p.add_argument("--tau", type=float, default=TAU, help="KE-layer threshold on the S1 delta, strict (default 0.05)")
    p.add_argument("--batch-size", type=int, default=8, metavar="N")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"), default="auto",
                   help="model dtype (auto: bfloat16 on CUDA, float32 on CPU)")
    p.add_argument("--no-s1-cache", action="store_true", help="neither read nor write the S1 cache")
    p.add_argument("--component", choices=("block", "attn", "mlp"), default="block",
                   help="patched output: whole decoder block (UDS), attention or MLP")
    p.add_argument("--parity", choices=SCORE_PARITY, default=None,
                   help="spec (default: pre-norm capture at every layer, SPEC 2.4) or reference (the reference's "
                        "quirk: the post-final-norm state patched into the last layer); docs/parity.md")
    p.add_argument("--reference-last-layer", action="store_true", help="alias of --parity reference")
    p.add_argument("--logprob-dtype", choices=engine.LOGPROB_DTYPES, default="model",
                   help="log-softmax in the model dtype (reference parity) or float32")
    p.add_argument("--trust-pickle", action="store_true", help="allow non-safetensors weights")
    p.set_defaults(func=run)


def _settings(args: argparse.Namespace) -> EngineSettings:
    if not args.tau >= 0:  # Δ_S1 > tau >= 0 keeps every KE-layer ratio finite
        raise UdsInputError(f"--tau must be >= 0, got {args.tau}")
    args.parity = resolve_alias(args.parity, args.reference_last_layer, "--reference-last-layer", REFERENCE)
    settings = EngineSettings(component=args.component, batch_size=args.batch_size,
                              logprob_dtype=args.logprob_dtype, reference_last_layer=args.parity == REFERENCE)
    settings.validate()
    return settings


def run(args: argparse.Namespace) -> int:
    t0 = time.time()
    settings = _settings(args)
    device = resolve_device(args.device)
    placement = Placement(device, resolve_dtype(args.dtype, device), args.trust_pickle)
    session = EvalSession(args.unlearned, full=args.full, retain=args.retain, data=args.data,
                          adapter_base=args.base, placement=placement, with_base=False, split=args.split)
    records = session.records()   # bad data fails before any model loads
    report_annotation(session, "uds score")
    specs = {role: session.spec_of(SESSION_ROLE[role]) for role in ROLES}
    full_tok = session.tokenizer(specs["full"])   # encodes for all three (SPEC 2.6)
    labels = {role: f"{role} ({s})" for role, s in specs.items()}
    # checked from configs and tokenizers before any weights load; an adapter, whose fit to its base
    # shows only when it is merged, is checked as it loads
    adapters = {role for role, s in specs.items() if session.resolve(s).kind == "adapter"}
    if "full" not in adapters:
        check_compatible_configs({labels[role]: (session.config(s), session.tokenizer(s, fallback=full_tok))
                                  for role, s in specs.items() if role not in adapters})
        # S1 holds full and retain, S2 full and the unlearned model: two at a time (`staged`)
        check_fits("uds score", count_parameters(session.config(specs["full"])), placement.dtype, 2, device)

    def loaded(spec: str, model) -> None:
        for role in ROLES:
            if specs[role] == spec and role != "full" and (adapters & {role, "full"}):
                check_compatible({labels["full"]: (session.model(specs["full"]), full_tok),
                                  labels[role]: (model, session.tokenizer(spec, fallback=full_tok))})

    with track(total=None, desc="uds score", unit="pass") as bar:
        run, _, _ = session.score_uds(settings, args.tau, use_cache=not args.no_s1_cache, meter=bar, staged=True,
                                      loaded=loaded)
    key = run.key
    fps = {role: session.fingerprint(s) for role, s in specs.items()}
    out = Path(args.out) if args.out else Path("uds_out") / file_name(args.unlearned)
    meta = {"full": specs["full"], "retain": specs["retain"], "unlearned": args.unlearned, "data": str(session.data),
            "split": session.split.name if session.split else None, "annotation": session.annotation,
            "data_hash": key["data"], "fingerprints": {**fps, "tokenizer": tokenizer_hash(full_tok)},
            "component": settings.component, "dtype": s1_cache.dtype_name(placement.dtype),
            "logprob_dtype": settings.logprob_dtype, "device": device, "batch_size": settings.batch_size,
            "parity": args.parity, "reference_last_layer": settings.reference_last_layer,
            "attn_implementation": key["attn_implementation"], "algorithm": key["algorithm"], "s1_cache": run.state,
            "uds_version": uds.__version__, "elapsed_s": round(time.time() - t0, 3)}
    summary = write_report(out, run.result, meta, order=[r["idx"] for r in records], title=args.unlearned)
    ci = summary["ci95"]
    ci_text = f"; 95% CI [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
    print(f"UDS = {summary['uds']:.6f} ({summary['n_scored']} of {summary['n_examples']} examples scored{ci_text})")
    print(f"results in {out}")
    return 0
