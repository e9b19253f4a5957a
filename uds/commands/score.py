"""`uds score`: the Unlearning Depth Score of one unlearned model (docs/design.md, spec §2)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from checkpoints.specs import file_name
from uds_core import engine
from uds_core.engine import EngineSettings
from uds_core.errors import UdsInputError
from uds_core.formula import TAU
from uds_core.parity import REFERENCE, SPEC, resolve_alias
from uds_core.report import headline, write_report
from metrics.session import Placement
from uds.api import measure
from uds.device_args import device_and_dtype
from uds.split_args import add_split_arg

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
                        "then found here as `uds annotate` finds them (default: goes with --unlearned: a tiny "
                        "world's own; for real checkpoints forget10_annotated.json in $UDS_TOFU_DIR, else the "
                        "Hugging Face dataset jaeunglee/uds-annotated-tofu, fetched once into $UDS_HOME/hub)")
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
                   help="spec (default: pre-norm capture at every layer, spec §2.4) or reference (the reference's "
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
    device, dtype = device_and_dtype(args)
    placement = Placement(device, dtype, args.trust_pickle)
    result, meta, order = measure(args.unlearned, full=args.full, retain=args.retain, data=args.data,
                                  split=args.split, base=args.base, settings=settings, tau=args.tau,
                                  placement=placement, parity=args.parity, use_s1_cache=not args.no_s1_cache,
                                  started=t0)
    out = Path(args.out) if args.out else Path("uds_out") / file_name(args.unlearned)
    summary = write_report(out, result, meta, order=order, title=args.unlearned)
    print(headline(summary))
    print(f"results in {out}")
    return 0
