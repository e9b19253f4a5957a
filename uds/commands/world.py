"""`uds world build`: data, tokenizer and zoo of a tiny world, then its quality report."""

from __future__ import annotations

import argparse
import sys
import time

from checkpoints.world.presets import PRESETS


def register(sub: argparse._SubParsersAction) -> None:
    world = sub.add_parser("world", help="the tiny world: synthetic or TOFU data, tokenizer, model zoo")
    wsub = world.add_subparsers(dest="world_command", metavar="ACTION", required=True)
    build = wsub.add_parser("build", help="build (or resume building) a preset's world; prints its folder")
    build.add_argument("--preset", default="small", choices=sorted(PRESETS), help="default: small")
    build.add_argument("--seed", type=int, default=0)
    build.add_argument("--tofu-dir", default=None, help="folder of the TOFU JSON files (tofu preset; or UDS_TOFU_DIR)")
    build.add_argument("--models", default=None, help="comma-separated model names (default: the whole zoo)")
    build.add_argument("--no-quality", action="store_true", help="skip measuring quality.json")
    build.add_argument("--device", default="cpu",
                       help="cpu (default) or cuda: where the models train (the recipes are the same)")
    curve = build.add_argument_group("curves during unlearning (uds.callbacks.UdsCallback; unlearned models only)")
    curve.add_argument("--curve-every", type=int, default=None, metavar="N",
                       help="evaluate UDS and the curve metrics every N optimiser steps while each unlearned model "
                            "trains (and before the first step and after the last); off by default")
    curve.add_argument("--curve-on-epoch", action="store_true", help="also evaluate at the end of every epoch")
    curve.add_argument("--curve-dir", default="uds_curves", metavar="DIR",
                       help="where each model's curve goes, DIR/<model>.jsonl (default: uds_curves)")
    curve.add_argument("--curve-metrics", default=None, metavar="KEYS",
                       help="registry metric keys recorded beside UDS (default: prob,truth_ratio,es,retain_q_prob)")
    curve.add_argument("--keep-best", default="uds", metavar="RULE",
                       help="rule choosing the checkpoint, e.g. 'uds, retain_q_prob>=0.9x' (default: uds)")
    curve.add_argument("--save-best", action="store_true",
                       help="save the chosen checkpoint to DIR/<model>.best/ (replaced as the rule's choice moves)")
    build.set_defaults(func=run_build, resumes=True)


def run_build(args: argparse.Namespace) -> int:
    from checkpoints.world.build import build_world
    from checkpoints.world.store import ensure_world_data
    from checkpoints.world.quality import measure_quality, print_quality

    t0 = time.time()
    callbacks_for = _curve_callbacks(args)   # bad curve flags fail before anything is built
    ensure_world_data(args.preset, args.seed, args.tofu_dir)
    names = args.models.split(",") if args.models else None
    from uds_core.loading import resolve_device

    root = build_world(args.preset, args.seed, names=names, device=resolve_device(args.device),
                       callbacks_for=callbacks_for)
    print(f"world {args.preset} (seed {args.seed}) built in {time.time() - t0:.0f} s: {root}")
    from checkpoints.world.presets import get_preset

    if get_preset(args.preset).random is not None:   # untrained models: nothing learned to measure
        print(f"world {args.preset}: models not trained, no quality report", file=sys.stderr)
    elif not args.no_quality:
        from checkpoints.methods.effect import print_effect

        report = measure_quality(args.preset, args.seed)
        print_quality(report)
        print_effect(args.preset, args.seed, report)
    print(root)
    return 0


def _curve_callbacks(args: argparse.Namespace):
    """The builder's per-recipe callbacks when `--curve-every` is given (flags checked now), else None."""
    if args.curve_every is None:
        return None
    from pathlib import Path

    from uds.callbacks import DEFAULT_METRICS
    from uds.callbacks.world import CurveOptions, world_callbacks

    metrics = DEFAULT_METRICS if args.curve_metrics is None else tuple(args.curve_metrics.split(","))
    opts = CurveOptions(args.curve_every, Path(args.curve_dir), args.curve_on_epoch, metrics,
                        args.keep_best or None, args.save_best)
    return world_callbacks(args.preset, args.seed, opts)
