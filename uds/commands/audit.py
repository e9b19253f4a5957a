"""`uds audit`: causal deletion audit of a retrieval-backed LM (spec-probes §3).

FULL / DEL-ON / DEL-OFF on the same prompts, per database variant and prompt style; writes
summary.json, grid.csv, traces.jsonl, facts.jsonl, attribution.png and, for the published
databases, published_comparison.csv. The database file is only read (copied into memory).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from uds_core.errors import UdsInputError
from uds.device_args import add_device_args, device_and_dtype


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="deletion audit of a lookup-based LM: FULL / DEL-ON / DEL-OFF")
    p.add_argument("--model", default=None,
                   help="checkpoint spec (default with --db tiny:<preset>: tiny:<preset>/lmlm)")
    p.add_argument("--db", required=True,
                   help="database file (.json/.sqlite), folder of <variant>.json, or tiny:<preset>")
    p.add_argument("--prompts", default=None, help="prompt file or folder (default: prompts/<variant> next to the db)")
    p.add_argument("--variants", default=None, help="comma-separated variants of a db folder (default: all present)")
    p.add_argument("--styles", default=None,
                   help="comma-separated: direct,paraphrased,contextual,cloze,continuation,fewshot")
    p.add_argument("--threshold", type=float, default=0.75, help="lookup similarity threshold in [0, 1]")
    p.add_argument("--limit", type=int, default=None, help="N evenly spaced prompt rows of each file (default: all)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--chat", action="store_true",
                   help="put each prompt in the model's chat template as a user turn (chat-tuned models, e.g. "
                        "the tiny world's full / retain / unlearned models; the LMLM is trained on raw prompts)")
    p.add_argument("--system-prompt", default=None, help="system turn with --chat (default: none)")
    add_device_args(p)
    p.add_argument("--published", default=None, help="published per_state_metrics.csv (default: the shared copy)")
    p.add_argument("--out", default="audit_out")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from checkpoints.lmlm.prompts import parse_styles
    from checkpoints.lmlm.recipes import published_root
    from checkpoints.specs import parse_tiny_zoo, tiny_spec
    from metrics.session import EvalSession, Placement
    from uds_analyses.audit.run import AuditSettings, run_audit, write_outputs
    from uds_analyses.audit.sources import resolve_sets

    if not 0.0 <= args.threshold <= 1.0:
        raise UdsInputError(f"--threshold {args.threshold} is not in [0, 1]")
    zoo = parse_tiny_zoo(args.db)
    spec = args.model or (tiny_spec(*zoo, "lmlm") if zoo else None)
    if spec is None:
        raise UdsInputError("--model is required unless --db is a tiny world (tiny:<preset>)")
    device, dtype = device_and_dtype(args)
    session = EvalSession(spec, references=False, placement=Placement(device, dtype))   # a bad spec fails first
    variants = [v.strip() for v in args.variants.split(",")] if args.variants else None
    sets = resolve_sets(args.db, args.prompts, variants, parse_styles(args.styles))
    dbs = [s.open_db() for s in sets]   # bad databases and alias cycles fail before any model loads
    if args.system_prompt is not None and not args.chat:
        raise UdsInputError("--system-prompt needs --chat")
    settings = AuditSettings(args.threshold, args.batch_size, args.max_new_tokens, args.limit,
                             chat=args.chat, system_prompt=args.system_prompt)
    model, tok = session.model(spec), session.tokenizer(spec)
    run = run_audit(model, tok, sets, dbs, settings)
    published = (Path(args.published) if args.published
                 else published_root() / "published_outputs" / "per_state_metrics.csv")
    summary = write_outputs(Path(args.out), spec, args.db, run, settings, published)
    print(f"{'variant':<12}{'n':>6}{'chance':>8}{'FULL EM':>9}{'DEL-ON':>8}{'DEL-OFF':>9}{'L':>7}{'R':>7}{'artef':>7}")
    for v, d in summary["variants"].items():
        print(f"{v:<12}{d['n_prompts']:>6}{d['chance']:>8.3f}{d['full_em']:>9.3f}{d['del_on_em']:>8.3f}"
              f"{d['del_off_em']:>9.3f}{d['leakage']:>7.3f}{d['retrieval_mediated']:>7.3f}{d['artifact_rate']:>7.3f}")
    print("chance: EM of answering the most frequent object of the relation after the target's deletion "
          "(EMs, L and artef are read against it; R against 0)")
    print(f"wrote {args.out}/summary.json ({run.seconds:.0f} s)")
    return 0
