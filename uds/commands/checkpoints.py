"""`uds checkpoints list`: the registry of real checkpoints and the tiny zoo."""

from __future__ import annotations

import argparse
import json

from checkpoints import ou_checkpoints
from uds_core.errors import UdsInputError

KINDS = ("reference", "unlearned", "pool", "tiny")


def register(sub: argparse._SubParsersAction) -> None:
    ck = sub.add_parser("checkpoints", help="list known checkpoints (hub registry and tiny zoo)")
    csub = ck.add_subparsers(dest="checkpoints_command", metavar="ACTION", required=True)
    ls = csub.add_parser("list", help="one line per checkpoint: alias, kind, method, epoch, hub ID or path")
    ls.add_argument("--kind", default=None, help=f"one of {', '.join(KINDS)} (default: all real ones)")
    ls.add_argument("--preset", default="small", help="tiny-world preset for --kind tiny")
    ls.add_argument("--seed", type=int, default=0)
    ls.set_defaults(func=run_list)


def run_list(args: argparse.Namespace) -> int:
    if args.kind is not None and args.kind not in KINDS:
        raise UdsInputError(f"unknown --kind {args.kind!r} (choose {', '.join(KINDS)})")
    if args.kind == "tiny":
        return _list_tiny(args.preset, args.seed)
    rows = [c for c in ou_checkpoints.ALL if args.kind in (None, c.kind)]
    for c in rows:
        print(f"{c.alias}\t{c.kind}\t{c.method}\t{'' if c.epoch is None else 'ep' + str(c.epoch)}\t{c.hub_id}")
    if args.kind is None:
        for alias, hub in ou_checkpoints.CONVENIENCE.items():
            print(f"{alias}\tconvenience\t{alias}\t\t{hub}")
    return 0


def _list_tiny(preset: str, seed: int) -> int:
    from checkpoints.catalogue import recipes
    from checkpoints.specs import tiny_spec
    from checkpoints.world.build import is_built
    from checkpoints.world.presets import get_preset
    from uds_core.paths import world_dir

    root = world_dir(get_preset(preset).name, seed)
    quality = {}
    qpath = root / "quality.json"
    if qpath.is_file():
        quality = {m["model"]: m for m in json.loads(qpath.read_text()).get("models", [])}
    print("name\tkind\tmethod\tepoch\tbuilt\tforget_hit\tretain_hit\tholdout_hit")
    for r in recipes(get_preset(preset)):
        built = is_built(get_preset(preset), seed, r)
        q = quality.get(r.name, {})
        hits = [q.get(f"{s}_hit_rate") for s in ("forget", "retain", "holdout")]
        cells = ["" if h is None else f"{h:.2f}" for h in hits]
        print(f"{tiny_spec(preset, seed, r.name)}\t{r.kind}\t{r.method or ''}\t{r.epoch or ''}\t"
              f"{'yes' if built else 'no'}\t" + "\t".join(cells))
    return 0
