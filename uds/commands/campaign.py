"""`uds campaign`: a resumable meta-evaluation campaign on a tiny-world zoo, from committed files.

`uds campaign run --zoo tiny:smol --dir docs/smol/campaign --commit` builds and measures the zoo
one (model, setting) at a time with one torch thread, writes each result as a small file under
--dir (git-committed at once with --commit), deletes a model's weights once it is measured in
all its settings, and stops cleanly on SIGINT / SIGTERM; run it again (here or on a fresh
machine) to continue. `uds campaign status` counts what is done without loading any model;
`uds meta-eval --from-campaign DIR` assembles the tables from the files.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from uds_core.errors import UdsInputError

DEFAULT_ZOO = "tiny:smol"
KEEP_KINDS = ("pool", "unlearned")
STALE_LOCK_S = 300.0   # git holds index.lock for about a second per commit; one this old outlived its process


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="a resumable meta-evaluation campaign: build, measure, commit, one unit at a time",
                       description=__doc__.splitlines()[0])
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    run = verbs.add_parser("run", help="build and measure what is missing, in order")
    status = verbs.add_parser("status", help="done / total (per kind and setting), what comes next and an ETA, "
                                              "from the files alone")
    for q in (run, status):
        q.add_argument("--zoo", default=DEFAULT_ZOO, help=f"tiny:<preset>[-<seed>] (default {DEFAULT_ZOO})")
        q.add_argument("--dir", required=True, metavar="DIR", help="the campaign folder (committed files)")
        q.add_argument("--batch-size", type=int, default=32, help="metric batch size (fixed by the first run)")
        q.add_argument("--max-new-tokens", type=int, default=128, help="generation length (fixed by the first run)")
        q.add_argument("--relearn-lr", type=float, default=None, help="relearning learning rate (default 2e-4)")
    for q in (run, status):
        q.add_argument("--plan", choices=("meta-eval", "world"), default="meta-eval",
                       help="meta-eval (default): every member in every setting of the meta-evaluation; world: a "
                            "world's builds, knowledge checks, `uds score` of every model, `uds metrics` of a few and "
                            "the engine and precision comparisons (uds/world_campaign)")
    status.add_argument("--json", action="store_true", help="print the status as one JSON object (for scripts)")
    run.add_argument("--bigmem-lock", metavar="FILE", default=None,
                     help="world plan: hold an exclusive flock on FILE while a unit that needs more memory than "
                          "the rest runs (the float32 comparisons, the metric runs)")
    run.add_argument("--commit", action="store_true", help="git-commit each unit's file as soon as it is written")
    run.add_argument("--keep", default="", metavar="KINDS",
                     help=f"comma-separated kinds whose weights are kept after measuring ({', '.join(KEEP_KINDS)})")
    run.add_argument("--max-units", type=int, default=None, help="stop after this many measurements")
    run.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    if args.plan == "world":
        return world_main(args)
    campaign = make_campaign(args)
    if args.verb == "status":
        st = campaign.status() | {"started": campaign.files.protocol.is_file()}
        if args.json:
            print(json.dumps(st, indent=1))
            return 0
        print("\n".join(campaign.status_report(st)))
        if not st["started"]:
            print(f"  no campaign in {args.dir} yet: `uds campaign run --zoo {args.zoo} --dir {args.dir}` fixes its "
                  "protocol (protocol.json) and starts it")
        return 0
    import torch

    if args.threads < 1:
        raise UdsInputError(f"--threads must be at least 1, got {args.threads}")
    torch.set_num_threads(args.threads)
    if args.max_units is not None and args.max_units < 1:
        raise UdsInputError(f"--max-units must be at least 1, got {args.max_units}")
    campaign.run(args.max_units)
    return 0


def world_main(args: argparse.Namespace) -> int:
    from uds.world_campaign.driver import WorldCampaign

    if args.verb == "run" and args.max_units is not None and args.max_units < 1:
        raise UdsInputError(f"--max-units must be at least 1, got {args.max_units}")
    commit = getattr(args, "commit", False)
    campaign = WorldCampaign(args.zoo, Path(args.dir), publish=git_publish(Path(args.dir)) if commit else
                             (lambda paths, msg: None), bigmem_lock=getattr(args, "bigmem_lock", None))
    if args.verb == "status":
        campaign.check_protocol(write=False)
        st = campaign.status()
        if args.json:
            print(json.dumps(st, indent=1))
        else:
            print(f"campaign {st['zoo']}: {st['units']}/{st['units_total']} units done; ETA {st['eta_seconds'] / 3600:.1f} h"
                  + (f"; next {st['next']}" if st["next"] else ""))
        return 0
    campaign.run(args.max_units)
    return 0


def make_campaign(args: argparse.Namespace):
    from checkpoints.catalogue import find_recipe
    from checkpoints.specs import parse_tiny_zoo
    from checkpoints.world.build import ensure_model, is_built, recipe_digest
    from checkpoints.world.presets import get_preset
    from checkpoints.world.store import model_dir
    from uds_core.digests import model_folder_digest
    from uds_core.paths import uds_home, world_dir
    from meta_eval.campaign import Campaign, CampaignSpec, campaign_order, check_protocol
    from meta_eval.campaign_files import CampaignFiles
    from meta_eval.population import tiny_zoo
    from metrics.registry import META_KEYS

    if args.batch_size < 1 or args.max_new_tokens < 1:
        raise UdsInputError("--batch-size and --max-new-tokens must be at least 1")
    if parse_tiny_zoo(args.zoo) is None:
        raise UdsInputError(f"--zoo {args.zoo}: a campaign builds its models, so it takes a tiny-world zoo "
                            f"(tiny:<preset>[-<seed>], e.g. {DEFAULT_ZOO}); published checkpoints are measured by "
                            "`uds meta-eval --zoo ou:tofu`")
    if Path(args.dir).exists() and not Path(args.dir).is_dir():
        raise UdsInputError(f"--dir {args.dir} is a file, not a campaign folder")
    zoo = tiny_zoo(args.zoo)
    preset = get_preset(zoo.preset)
    keep = frozenset(k.strip() for k in getattr(args, "keep", "").split(",") if k.strip())
    if keep - set(KEEP_KINDS):
        raise UdsInputError(f"--keep: unknown kind {', '.join(sorted(keep - set(KEEP_KINDS)))} "
                            f"(choose {', '.join(KEEP_KINDS)})")
    files = CampaignFiles(Path(args.dir))
    settings, recipe = measure_settings(args, zoo)
    scratch = uds_home() / "campaign" / zoo.slug
    recipe_of = lambda m: find_recipe(preset, m.name)  # noqa: E731
    digests = {m.name: recipe_digest(preset, recipe_of(m)) for m in zoo.members}
    spec = CampaignSpec(
        zoo=zoo, files=files, keys=tuple(META_KEYS),
        recipe_digest=lambda m: digests[m.name],
        settings_digest=lambda setting: settings_digest(setting, settings, recipe),
        is_built=lambda m: is_built(preset, zoo.seed, recipe_of(m)),
        build=lambda m: ensure_model(preset.name, zoo.seed, m.name, progress=True),
        folder=lambda m: model_dir(preset.name, zoo.seed, m.name),
        fingerprint=model_folder_digest,
        knowledge=lambda m: knowledge_of(preset.name, zoo.seed, m.name),
        keep=keep, alternates=world_dir(preset.name, zoo.seed) / "alternates" / "full-seed0.json",
        relearned=scratch / "relearned")
    # status only reads: a folder without protocol.json stays as it is until the first run fixes it
    check_protocol(files, protocol(zoo, digests, settings, recipe, campaign_order(zoo)), write=args.verb == "run")
    return Campaign(spec, lambda: make_measurer(zoo, scratch, settings, recipe),
                    publish=git_publish(files.root) if getattr(args, "commit", False) else lambda paths, msg: None)


def measure_settings(args: argparse.Namespace, zoo):
    """The campaign measures on the CPU under the spec's parity (fixed by its protocol)."""
    from uds.measure_args import measurement_settings

    return measurement_settings(args, zoo, device="cpu")


def settings_digest(setting: str, settings, recipe) -> str:
    from meta_eval.campaign import CAMPAIGN_VERSION
    from meta_eval.campaign_files import settings_digest as digest
    from meta_eval.measure import MEASURE_VERSION, setting_recipe, stamp_settings

    return digest(CAMPAIGN_VERSION, MEASURE_VERSION, setting, setting_recipe(setting, settings.device, recipe),
                  stamp_settings(settings))


def protocol(zoo, digests: dict[str, str], settings, recipe, order) -> dict:
    """What fixes the campaign: members and their recipes, jobs, settings (order is advisory)."""
    from meta_eval.campaign import CAMPAIGN_VERSION
    from meta_eval.knowledge import CHECK_TOKENS, WORDINGS
    from meta_eval.measure import plan_jobs, setting_recipe, stamp_settings
    from metrics.registry import META_KEYS

    jobs = plan_jobs(zoo, META_KEYS, fluency=bool(zoo.base))
    return {"version": CAMPAIGN_VERSION, "zoo": zoo.tag, "preset": zoo.preset, "seed": zoo.seed,
            "keys": list(META_KEYS),
            "members": {m.name: {"kind": m.kind, "pool": m.pool, "method": m.method, "epoch": m.epoch}
                        for m in zoo.members},
            "recipes": digests,
            "jobs": {f"{j.setting}/{j.member.name}": list(j.keys) for j in jobs},
            "settings": {s: setting_recipe(s, settings.device, recipe) for s in sorted({j.setting for j in jobs})},
            "metric_settings": stamp_settings(settings),
            "knowledge_check": {"max_new_tokens": CHECK_TOKENS, "wordings": sorted(WORDINGS)}}


def knowledge_of(preset: str, seed: int, name: str) -> dict:
    from transformers import LlamaForCausalLM

    from checkpoints.world.build import ensure_model
    from checkpoints.world.store import ensure_tokenizer, load_world
    from meta_eval.knowledge import knowledge_check

    model = LlamaForCausalLM.from_pretrained(ensure_model(preset, seed, name, progress=False))
    return knowledge_check(model, ensure_tokenizer(preset, seed), load_world(preset, seed).forget)


def make_measurer(zoo, scratch: Path, settings, recipe):
    from meta_eval.measure import Measurer
    from meta_eval.store import MeasurementStore

    return Measurer(zoo, MeasurementStore(scratch / "store"), scratch / "relearned", settings, recipe)


def stale_index_lock(stale_after: float = STALE_LOCK_S) -> tuple[Path, float] | None:
    """The repository's index.lock and its age in seconds, when it is older than `stale_after`
    (None: no lock, or a young one that a running git process may still hold)."""
    where = subprocess.run(["git", "rev-parse", "--git-path", "index.lock"], capture_output=True, text=True)
    if where.returncode != 0:
        return None
    path = Path(where.stdout.strip())
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return None
    return (path, age) if age > stale_after else None


def git_publish(root: Path, attempts: int = 30):
    """A publish callback: `git add` + `git commit` of the campaign folder alone (other staged or
    changed files are left as they are), retried while another git process holds the index; an
    index.lock too old to belong to a running git is said at once (retrying cannot clear it)."""
    def publish(paths: list[Path], message: str) -> None:
        for attempt in range(attempts):
            add = subprocess.run(["git", "add", "--", str(root)], capture_output=True, text=True)
            commit = subprocess.run(["git", "commit", "-q", "-m", message, "--", str(root)],
                                    capture_output=True, text=True) if add.returncode == 0 else add
            if commit.returncode == 0 or "nothing to commit" in commit.stdout + commit.stderr:
                return
            if "index.lock" not in commit.stderr and "merge" not in commit.stderr:
                break
            if (stale := stale_index_lock()) is not None:
                print(f"campaign: git cannot commit: {stale[0]} is {stale[1]:.0f} s old, left by a git process that "
                      "was killed; remove it if no git command is running. The files are on disk and go with the "
                      "next commit", file=sys.stderr)
                return
            time.sleep(2 + attempt)
        print(f"campaign: git commit of {root} failed ({(commit.stderr or commit.stdout).strip()[:200]}); "
              "the files are on disk and go with the next commit", file=sys.stderr)
    return publish
