"""`uds attack`: what an attacker recovers from one model, against the same attack on the retain model.

Runs attacks (relearning on disjoint facts, LLM.int8 and FP4 quantisation, directional ablation,
few-shot and role-play prompts; `meta_eval.attacks`) on `--model` and on its retain model, and
reports per attack the share of the forget questions answered with their entity (greedy chat
answers, the campaign's knowledge check), each question held out from what the attack fitted.
Writes `DIR/attack.json` (per attack: model, retain, difference, recipe, seconds, why one did not
run), `DIR/hits.jsonl` (per attack, model and question: the answer and whether it names the entity)
and `DIR/attack.png`. Deterministic: the same seed gives the same shares.

`uds attack --from-campaign DIR [--legacy DIR] --out OUT` assembles the attack campaign's result
from its committed files alone (`meta_eval.campaign.attack_assemble`): OUT/result.json and OUT/rho.png;
`--legacy` names the meta-evaluation campaign whose committed values the rebuilt models are compared
with (default: results/smol/campaign beside DIR's, when it exists).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from uds_core.errors import UdsInputError
from uds.device_args import add_device_args

DEFAULT_OUT = Path("out") / "attack"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("attack", help="what an attacker recovers: relearning, quantisation, ablation, prompts",
                       description=__doc__.splitlines()[0])
    p.add_argument("--model", metavar="SPEC", help="the model attacked (hub ID, folder, alias, "
                                                   "tiny:<preset>/<model>)")
    p.add_argument("--from-campaign", metavar="DIR",
                   help="instead: assemble an attack campaign's result from its files")
    p.add_argument("--legacy", metavar="DIR", help="with --from-campaign: the meta-evaluation campaign to compare "
                                                   "the rebuilt models with")
    p.add_argument("--attacks", default="all", help="all, or comma-separated attack names (meta_eval/attacks: "
                                                    "plain, relearn, ...; a wrong name lists them all; default all)")
    p.add_argument("--retain", metavar="SPEC", help="the reference never trained on the forget set "
                                                    "(default: goes with --model)")
    p.add_argument("--full", metavar="SPEC", help="the model before unlearning, the ablation's reference "
                                                  "(default: goes with --model)")
    p.add_argument("--tofu-dir", metavar="DIR", help="TOFU files for a model outside the tiny worlds "
                                                     "(default: $UDS_TOFU_DIR, else the Hub's copies)")
    p.add_argument("--out", metavar="DIR", help=f"output folder (default: {DEFAULT_OUT}/<model>)")
    p.add_argument("--seed", type=int, default=0, help="halves, training order and few-shot examples (default 0)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-new-tokens", type=int, default=None, help="answer length (default: the knowledge "
                                                                    "check's, 64)")
    p.add_argument("--relearn-epochs", type=int, default=None, help="relearning epochs (default 3; 0: none)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    add_device_args(p, dtype=False)
    p.set_defaults(func=run)


def settings_for(spec, args: argparse.Namespace):
    """The attack settings: a tiny-world model relearns in its preset's encodings, any other in chat."""
    from dataclasses import replace

    from checkpoints.specs import origin
    from checkpoints.world.presets import get_preset
    from meta_eval.attacks.base import AttackSettings
    from uds_core.loading import resolve_device

    home = origin(spec)
    forms = tuple(get_preset(home.preset).forms) if home.kind == "tiny" else ("chat",)
    s = AttackSettings(seed=args.seed, batch_size=args.batch_size, device=resolve_device(args.device), forms=forms)
    if args.max_new_tokens is not None:
        s = replace(s, max_new_tokens=args.max_new_tokens)
    if args.relearn_epochs is not None:
        s = replace(s, relearn_epochs=args.relearn_epochs)
    return s


def _check(args: argparse.Namespace) -> None:
    for name, low in (("batch_size", 1), ("max_new_tokens", 1), ("relearn_epochs", 0), ("threads", 1)):
        value = getattr(args, name)
        if value is not None and value < low:
            raise UdsInputError(f"--{name.replace('_', '-')} must be at least {low} (got {value})")
    if args.out and Path(args.out).is_file():
        raise UdsInputError(f"--out {args.out} is a file, not a folder")


def run(args: argparse.Namespace) -> int:
    _check(args)
    if (args.model is None) == (args.from_campaign is None):
        raise UdsInputError("give exactly one of --model SPEC (attack a model) and --from-campaign DIR "
                            "(assemble an attack campaign's result)")
    if args.from_campaign is not None:
        return assemble(args)
    from meta_eval.attacks.run import attack_names

    names = attack_names(args.attacks)   # bad names fail before any model loads
    import torch

    from checkpoints.specs import as_spec, default_anchors, file_name, load_tokenizer, load_world_for_spec
    from meta_eval.attacks.base import Target, attack_data
    from meta_eval.attacks.figure import attack_figure
    from meta_eval.attacks.run import attack_report, loader, run_attacks
    from uds_core import atomic

    if args.threads:
        torch.set_num_threads(args.threads)
    spec = as_spec(args.model)
    full, retain = default_anchors(spec)
    full, retain = args.full or full, args.retain or retain
    s = settings_for(spec, args)
    world = load_world_for_spec(spec, args.tofu_dir)
    data = attack_data(world.forget, world.retain, load_tokenizer(full), s.seed)
    if len(data.items) < 2:
        raise UdsInputError(f"{args.model}: its forget set has {len(data.items)} question(s) with an entity; "
                            "the attacks need at least 2 (one per half)")
    load = loader(s.device)
    mine = run_attacks(Target(args.model, full, load), data, names, s)
    theirs = mine if retain == args.model else run_attacks(Target(retain, full, load), data, names, s)
    report = attack_report(Target(args.model, full, load), retain, mine, theirs, s, data)
    out = Path(args.out) if args.out else DEFAULT_OUT / file_name(args.model)
    rows = [{"attack": n, "model": side, "question": data.items[i]["question"], "entity": data.entities[i],
             "answer": o.answers[i], "hit": o.hits[i]}
            for side, outcomes in (("model", mine), ("retain", theirs)) for n, o in outcomes.items()
            if o.answers is not None for i in range(len(data.items))]
    atomic.write_text(out / "hits.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    attack_figure(out / "attack.png", report)
    atomic.write_json(out / "attack.json", report, indent=1)
    print(f"{'attack':<12} {'model':>7} {'retain':>7} {'above':>7}")
    fmt = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
    for n, r in report["attacks"].items():
        print(f"{n:<12} {fmt(r['model']):>7} {fmt(r['retain']):>7} {fmt(r['above_retain']):>7}")
    print(f"({len(data.items)} forget questions; share answered with the entity; results in {out})")
    return 0


def assemble(args: argparse.Namespace) -> int:
    """`--from-campaign`: the result document and its figure, from the campaign's files."""
    from meta_eval.campaign.attack_assemble import assemble_attacks
    from meta_eval.attacks.figure import rho_figure
    from meta_eval.campaign.read import read_campaign
    from metrics.registry import META_KEYS
    from uds_core import atomic
    import sys

    root = Path(args.from_campaign)
    if args.out is None:
        raise UdsInputError("--from-campaign needs --out DIR (where result.json goes)")
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    data = read_campaign(root, log=log)
    if data.protocol.get("plan") != "attack":
        raise UdsInputError(f"--from-campaign {root}: not an attack campaign (its protocol's plan is "
                            f"{data.protocol.get('plan', 'meta-eval')!r}); `uds meta-eval --from-campaign` reads it")
    legacy_root = Path(args.legacy) if args.legacy else root.parent / "campaign"
    legacy = read_campaign(legacy_root, log=log) if args.legacy or (legacy_root / "protocol.json").is_file() else None
    doc = assemble_attacks(data, META_KEYS, legacy)
    out = Path(args.out)
    rho_figure(out / "rho.png", doc)
    atomic.write_json(out / "result.json", doc, indent=1, sort_keys=True, allow_nan=False)
    c = doc["campaign"]
    print(f"{c['units']}/{c['units_total']} units assembled; result in {out / 'result.json'}")
    return 0
