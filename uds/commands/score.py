"""`uds score`: the Unlearning Depth Score of one unlearned model (DESIGN.md, SPEC.md 2)."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import torch
from tqdm import tqdm

import uds
from checkpoints.specs import (check_base_used, default_references, has_own_tokenizer, load_model, load_tokenizer,
                               resolve_spec)
from uds import engine, s1_cache
from uds.batching import pad_token_id
from uds.compat import check_compatible
from uds.data import load_annotated
from uds.engine import EngineSettings
from uds.errors import UdsInputError
from uds.fingerprint import model_fingerprint, tokenizer_hash
from uds.formula import TAU
from uds.loading import resolve_device, resolve_dtype
from uds.parity import REFERENCE, SPEC, resolve_alias
from uds.prompts import prepare_items
from uds.report import write_report

ROLES = ("full", "retain", "unlearned")
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
    p.add_argument("--data", metavar="FILE", help="annotated QA JSON (default: goes with --unlearned)")
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


def output_name(spec: str) -> str:
    """Filesystem-safe name of a spec: a folder's base name, else the sanitised string."""
    path = Path(spec).expanduser()
    raw = path.name if path.is_dir() else spec
    return re.sub(r"[^A-Za-z0-9._-]+", "_", raw).strip("._-") or "run"


def _specs(args: argparse.Namespace) -> tuple[str, str, str]:
    full, retain, data = args.full, args.retain, args.data
    if None in (full, retain, data):
        d_full, d_retain, d_data = default_references(args.unlearned, base=args.base)
        full, retain, data = full or d_full, retain or d_retain, data or d_data
    return full, retain, data


def _load_models(specs: dict[str, str], device: str, dtype: torch.dtype, trust_pickle: bool,
                 base: str | None = None) -> dict:
    """role -> (model, tokenizer); a spec named twice is loaded once. A folder without tokenizer
    files shares the full model's tokenizer (the full model's encodes for all three anyway)."""
    loaded: dict[str, tuple] = {}
    out = {}
    for role, spec in specs.items():   # full first
        if spec not in loaded:
            tok = load_tokenizer(spec, base) if role == "full" or has_own_tokenizer(spec, base) else out["full"][1]
            loaded[spec] = (load_model(spec, device=device, dtype=dtype, trust_pickle=trust_pickle, base=base), tok)
        out[role] = loaded[spec]
    return out


def _settings(args: argparse.Namespace) -> EngineSettings:
    if not args.tau >= 0:  # Δ_S1 > tau >= 0 keeps every KE-layer ratio finite
        raise UdsInputError(f"--tau must be >= 0, got {args.tau}")
    args.parity = resolve_alias(args.parity, args.reference_last_layer, "--reference-last-layer", REFERENCE)
    settings = EngineSettings(component=args.component, batch_size=args.batch_size,
                              logprob_dtype=args.logprob_dtype, reference_last_layer=args.parity == REFERENCE)
    settings.validate()
    return settings


def _compute(models: dict, items: list, skipped: list, settings: EngineSettings, tau: float, key: dict | None,
             pad_id: int) -> tuple[engine.UdsResult, str]:
    """UDS with the S1 cache (key None = cache off); returns the result and "hit"/"miss"/"off"."""
    full = models["full"][0]
    s1 = s1_cache.load_s1(key, items) if key is not None and items else None
    n_layers = len(settings.layer_list(full))
    total = engine.passes_per_pair(len(items), n_layers, settings.batch_size, with_full=False)
    if s1 is None:
        total += engine.passes_per_pair(len(items), n_layers, settings.batch_size, with_full=True)
    with tqdm(total=total, desc="uds score", unit="pass", file=sys.stderr, mininterval=0.5) as bar:
        result = engine.compute_uds(full, models["retain"][0], models["unlearned"][0], items, settings,
                                    tau=tau, skipped=skipped, s1=s1, pad_id=pad_id, progress=bar.update)
    if key is not None and s1 is None and items:
        s1_cache.save_s1(key, items, result.s1)
    return result, "off" if key is None else ("hit" if s1 is not None else "miss")


def run(args: argparse.Namespace) -> int:
    t0 = time.time()
    settings = _settings(args)
    resolve_spec(args.unlearned, args.base)  # a wrong path or name fails first, before data or models load
    full_spec, retain_spec, data_path = _specs(args)
    specs = dict(zip(ROLES, (full_spec, retain_spec, args.unlearned)))
    for spec in specs.values():
        resolve_spec(spec, args.base)
    check_base_used(list(specs.values()), args.base)
    records = load_annotated(data_path)
    device = resolve_device(args.device)
    dtype = resolve_dtype(args.dtype, device)
    models = _load_models(specs, device, dtype, args.trust_pickle, args.base)
    check_compatible({f"{role} ({specs[role]})": models[role] for role in ROLES})

    full, tok = models["full"]  # the full model's tokenizer encodes for all three (SPEC 2.6)
    pad_id = pad_token_id(tok)
    items, skipped = prepare_items(records, tok)
    fps = {role: model_fingerprint(models[role][0]) for role in ROLES}
    key = s1_cache.s1_key(fps, records, items, settings, dtype, device, full)
    result, cache_state = _compute(models, items, skipped, settings, args.tau,
                                   None if args.no_s1_cache else key, pad_id)

    out = Path(args.out) if args.out else Path("uds_out") / output_name(args.unlearned)
    meta = {"full": full_spec, "retain": retain_spec, "unlearned": args.unlearned, "data": str(data_path),
            "data_hash": key["data"], "fingerprints": {**fps, "tokenizer": tokenizer_hash(tok)},
            "component": settings.component, "dtype": s1_cache.dtype_name(dtype), "logprob_dtype": settings.logprob_dtype,
            "device": device, "batch_size": settings.batch_size, "parity": args.parity,
            "reference_last_layer": settings.reference_last_layer,
            "attn_implementation": key["attn_implementation"], "algorithm": key["algorithm"], "s1_cache": cache_state,
            "uds_version": uds.__version__, "elapsed_s": round(time.time() - t0, 3)}
    summary = write_report(out, result, meta, order=[r["idx"] for r in records], title=args.unlearned)
    ci = summary["ci95"]
    ci_text = f"; 95% CI [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
    print(f"UDS = {summary['uds']:.6f} ({summary['n_scored']} of {summary['n_examples']} examples scored{ci_text})")
    print(f"results in {out}")
    return 0
