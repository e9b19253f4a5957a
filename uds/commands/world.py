"""`uds world build`: data, tokenizer and zoo of a tiny world, then its quality report."""

from __future__ import annotations

import argparse
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
    build.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from checkpoints.world.build import build_world
    from checkpoints.world.store import ensure_world_data
    from checkpoints.world.quality import measure_quality, print_quality

    t0 = time.time()
    ensure_world_data(args.preset, args.seed, args.tofu_dir)
    names = args.models.split(",") if args.models else None
    from uds_core.loading import resolve_device

    root = build_world(args.preset, args.seed, names=names, device=resolve_device(args.device))
    print(f"world {args.preset} (seed {args.seed}) built in {time.time() - t0:.0f} s: {root}")
    if not args.no_quality:
        from checkpoints.methods.effect import print_effect

        report = measure_quality(args.preset, args.seed)
        print_quality(report)
        print_effect(args.preset, args.seed, report)
    print(root)
    return 0
