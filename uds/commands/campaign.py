"""`uds campaign`: a resumable meta-evaluation campaign on a tiny-world zoo, from committed files.

`uds campaign run --zoo tiny:smol --dir results/smol/campaign --commit` builds and measures the zoo
one (model, setting) at a time with one torch thread, writes each result as a small file under
--dir (git-committed at once with --commit), deletes a model's weights once it is measured in
all its settings, and stops cleanly on SIGINT / SIGTERM; run it again (here or on a fresh
machine) to continue. `uds campaign status` counts what is done without loading any model;
`uds meta-eval --from-campaign DIR` assembles the tables from the files.

`--plan attack` runs the attack campaign instead (`meta_eval.campaign.attack`): the unlearned
models, full, retain, the suppressed pool with its P parents and the N controls, each measured as
built and attacked (`uds attack`'s attacks); `uds attack --from-campaign DIR` assembles its result.
A folder fixed under campaign version 1 (recipe digests of scheme 1) is read but not continued.

`--plan world` runs a world campaign (`uds.world_campaign`): a large world's builds, knowledge
checks, `uds score` of every model and `uds metrics` of a few, one unit at a time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from uds_core.errors import UdsInputError

DEFAULT_ZOO = "tiny:smol"
KEEP_KINDS = ("pool", "unlearned", "suppressed")
PLANS = ("meta-eval", "attack", "world")
STALE_LOCK_S = 300.0   # git holds index.lock for about a second per commit; one this old outlived its process


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign",
                       help="a resumable meta-evaluation campaign: build, measure, commit, one unit at a time",
                       description=__doc__.splitlines()[0])
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    run = verbs.add_parser("run", help="build and measure what is missing, in order")
    status = verbs.add_parser("status", help="done / total (per kind and setting), what comes next and an ETA, "
                                              "from the files alone")
    fix = verbs.add_parser("protocol", help="fix the protocol (protocol.json) without measuring; re-fix it while "
                                            "no unit is measured under it")
    for q in (run, status, fix):
        q.add_argument("--zoo", default=DEFAULT_ZOO, help=f"tiny:<preset>[-<seed>] (default {DEFAULT_ZOO})")
        q.add_argument("--dir", required=True, metavar="DIR", help="the campaign folder (committed files)")
        q.add_argument("--batch-size", type=int, default=32, help="metric batch size (fixed by the first run)")
        q.add_argument("--max-new-tokens", type=int, default=128, help="generation length (fixed by the first run)")
        q.add_argument("--relearn-lr", type=float, default=None, help="relearning learning rate (default 2e-4)")
        q.add_argument("--plan", choices=PLANS, default="meta-eval",
                       help="meta-eval (default): every member in every setting of the meta-evaluation; attack: the "
                            "attack campaign; world: a world's builds, knowledge checks, `uds score` of every model, "
                            "`uds metrics` of a few and the engine and precision comparisons (uds/world_campaign)")
    status.add_argument("--json", action="store_true", help="print the status as one JSON object (for scripts)")
    run.add_argument("--bigmem-lock", metavar="FILE", default=None,
                     help="world plan: hold an exclusive flock on FILE while a unit that needs more memory than "
                          "the rest runs (the float32 comparisons, the metric runs)")
    run.add_argument("--commit", action="store_true", help="git-commit each unit's file as soon as it is written")
    fix.add_argument("--commit", action="store_true", help="git-commit protocol.json")
    run.add_argument("--keep", default="", metavar="KINDS",
                     help=f"comma-separated kinds whose weights are kept after measuring ({', '.join(KEEP_KINDS)})")
    run.add_argument("--max-units", type=int, default=None, help="stop after this many measurements")
    run.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.set_defaults(func=main, resumes=True)


def main(args: argparse.Namespace) -> int:
    if args.plan == "world":
        return world_main(args)
    campaign = make_campaign(args)
    if args.verb == "protocol":
        doc = json.loads(campaign.files.protocol.read_text())
        print(f"{campaign.files.protocol}: {len(doc['members'])} members, {len(doc['jobs'])} units, fixed at commit "
              f"{(doc.get('fixed_at') or {}).get('commit')}; start it with `uds campaign run --zoo {args.zoo}"
              f"{'' if args.plan == 'meta-eval' else ' --plan ' + args.plan} --dir {args.dir} --commit`")
        if args.commit:
            git_publish(campaign.files.root)([campaign.files.protocol], f"campaign {args.zoo}: protocol ({args.plan})")
        return 0
    if args.verb == "status":
        st = campaign.status() | {"started": campaign.files.protocol.is_file()}
        if args.json:
            print(json.dumps(st, indent=1))
            return 0
        print("\n".join(campaign.status_report(st)))
        if not st["started"]:
            plan = "" if args.plan == "meta-eval" else f" --plan {args.plan}"
            print(f"  no campaign in {args.dir} yet: `uds campaign run --zoo {args.zoo}{plan} --dir {args.dir}` fixes "
                  "its protocol (protocol.json) and starts it")
        elif campaign.spec.legacy:
            print("  (fixed under campaign version 1: read here, not continued by `uds campaign run`)")
        if campaign.other_code:
            from meta_eval.campaign.protocol import nothing_measured

            commit = (json.loads(campaign.files.protocol.read_text()).get("fixed_at") or {}).get("commit")
            nothing = nothing_measured(campaign.files)
            then = ("nothing is measured under it yet: `uds campaign protocol` with the same options fixes it again "
                    "for this code" if nothing else f"`uds campaign run` continues it from commit {commit}")
            print(f"  (counted by the digests protocol.json recorded: this code differs from it in "
                  f"{'; '.join(campaign.other_code)}; {then})")
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
    if args.verb == "protocol":
        campaign.check_protocol(write=True, refix=True)
        print(f"{campaign.root / 'protocol.json'}: {len(campaign.units)} units; start it with `uds campaign run "
              f"--zoo {args.zoo} --plan world --dir {args.dir} --commit`")
        return 0
    if args.verb == "status":
        from uds.world_campaign import preflight

        campaign.check_protocol(write=False)
        st = campaign.status()
        st["bf16_slowdown"], st["bf16_products"] = (preflight.choose(campaign.dtypes()) if st["next"]
                                                    else (None, None))
        if args.json:
            print(json.dumps(st, indent=1))
            return 0
        print(f"campaign {st['zoo']}: {st['units']}/{st['units_total']} units done; "
              f"ETA {st['eta_seconds'] / 3600:.1f} h" + (f"; next {st['next']}" if st["next"] else ""))
        if st["bf16_products"] == "float32":
            slower = "" if st["bf16_slowdown"] is None else f" ({st['bf16_slowdown']:.0f}x slower than float32 here)"
            print(f"  bfloat16 products would run through float32 kernels{slower}; the ETA is from the units' "
                  "files, whatever CPU they ran on")
        return 0
    campaign.run(args.max_units)
    return 0


def make_campaign(args: argparse.Namespace):
    from checkpoints.catalogue import find_recipe
    from checkpoints.specs import parse_tiny_zoo
    from checkpoints.world.build import ensure_model, is_built
    from checkpoints.world.presets import get_preset
    from checkpoints.world.recipe_digest import legacy_recipe_digest, recipe_digest
    from checkpoints.world.store import model_dir
    from uds_core.digests import model_folder_digest
    from uds_core.paths import uds_home, world_dir
    from meta_eval.campaign.driver import Campaign
    from meta_eval.campaign.protocol import LEGACY_VERSION, check_protocol, differences, recorded_settings_digest
    from meta_eval.campaign.spec import CampaignSpec
    from meta_eval.campaign.files import CampaignFiles
    from metrics.registry import META_KEYS

    if args.batch_size < 1 or args.max_new_tokens < 1:
        raise UdsInputError("--batch-size and --max-new-tokens must be at least 1")
    if parse_tiny_zoo(args.zoo) is None:
        raise UdsInputError(f"--zoo {args.zoo}: a campaign builds its models, so it takes a tiny-world zoo "
                            f"(tiny:<preset>[-<seed>], e.g. {DEFAULT_ZOO}); published checkpoints are measured by "
                            "`uds meta-eval --zoo ou:tofu`")
    if Path(args.dir).exists() and not Path(args.dir).is_dir():
        raise UdsInputError(f"--dir {args.dir} is a file, not a campaign folder")
    plan = getattr(args, "plan", "meta-eval")
    keep = frozenset(k.strip() for k in getattr(args, "keep", "").split(",") if k.strip())
    if keep - set(KEEP_KINDS):
        raise UdsInputError(f"--keep: unknown kind {', '.join(sorted(keep - set(KEEP_KINDS)))} "
                            f"(choose {', '.join(KEEP_KINDS)})")
    files = CampaignFiles(Path(args.dir))
    fixed = files.read(files.protocol) if files.protocol.is_file() else None
    legacy = fixed is not None and fixed.get("version") == LEGACY_VERSION
    if legacy and plan != "meta-eval":
        raise UdsInputError(f"--dir {args.dir}: a campaign of version {LEGACY_VERSION} (the meta-evaluation's), not "
                            f"an {plan} campaign")
    zoo = campaign_zoo(args.zoo, plan)
    preset = get_preset(zoo.preset)
    settings, recipe = measure_settings(args, zoo)
    scratch = uds_home() / "campaign" / (zoo.slug + ("" if plan == "meta-eval" else f"-{plan}"))
    recipe_of = lambda m: find_recipe(preset, m.name)  # noqa: E731
    legacy_digests = {m.name: legacy_recipe_digest(preset, recipe_of(m)) for m in zoo.members}
    digests = legacy_digests if legacy else {m.name: recipe_digest(preset, recipe_of(m), seed=zoo.seed)
                                             for m in zoo.members}
    attack = attack_settings(zoo) if plan == "attack" else None
    code = None if legacy else measure_code_of(plan)
    recipes_of_settings = setting_recipes(zoo, plan, settings, recipe, attack)
    spec = CampaignSpec(
        zoo=zoo, files=files, keys=tuple(META_KEYS),
        recipe_digest=lambda m: digests[m.name],
        settings_digest=lambda setting: settings_digest(setting, recipes_of_settings[setting], settings, code),
        is_built=lambda m: is_built(preset, zoo.seed, recipe_of(m)),
        build=lambda m: ensure_model(preset.name, zoo.seed, m.name, progress=True),
        folder=lambda m: model_dir(preset.name, zoo.seed, m.name),
        fingerprint=model_folder_digest,
        knowledge=lambda m: knowledge_of(preset.name, zoo.seed, m.name),
        keep=keep, alternates=world_dir(preset.name, zoo.seed) / "alternates" / "full-seed0.json",
        relearned=scratch / "relearned", **plan_parts(zoo, plan),
        legacy_digest=None if legacy else (lambda m: legacy_digests[m.name]), measure_code=code, legacy=legacy)
    campaign = Campaign(spec, measurer_factory(zoo, scratch, settings, recipe, attack),
                        publish=git_publish(files.root) if getattr(args, "commit", False) else lambda paths, msg: None)
    body = (legacy_protocol(zoo, digests, settings, recipe, campaign) if legacy else
            protocol(zoo, plan, digests, recipes_of_settings, settings, code, campaign))
    if args.verb == "status" and fixed is not None and not legacy and (changed := differences(fixed, body)):
        # status only counts: under other code it counts the files by the digests protocol.json recorded
        campaign.spec = replace(spec, recipe_digest=lambda m: fixed["recipes"].get(m.name, ""),
                                settings_digest=lambda setting: recorded_settings_digest(fixed, setting))
        campaign.other_code = changed
        return campaign
    # status only reads: a folder without protocol.json stays as it is until the first run fixes it
    check_protocol(files, body, write=args.verb in ("run", "protocol"), refix=args.verb == "protocol")
    if plan == "attack" and args.verb in ("run", "protocol"):
        adopt_alternates(files)
    return campaign


def adopt_alternates(files) -> None:
    """The attack campaign rebuilds the AltPO models from their recipes: with the AltPO answers the
    meta-evaluation campaign beside it committed (sampled once from its full model), when there are
    any, so that they train on the same answers, not on ones sampled from a rebuilt full."""
    source = files.root.parent / "campaign" / "alternates.json"
    if files.alternates.is_file() or not source.is_file():
        return
    doc = files.read(source)
    if doc is not None:
        files.write(files.alternates, {"alternates": doc["alternates"], "made_by": doc.get("made_by"),
                                       "copied_from": "../campaign/alternates.json"})


def campaign_zoo(tag: str, plan: str):
    from meta_eval.population import tiny_zoo

    if plan == "attack":
        from meta_eval.campaign.attack import attack_zoo

        return attack_zoo(tag)
    return tiny_zoo(tag)


def plan_parts(zoo, plan: str) -> dict:
    """The CampaignSpec fields of a plan other than the meta-evaluation's: its jobs, order, parents."""
    if plan != "attack":
        return {}
    from meta_eval.campaign.attack import attack_order, attack_plan, parent_of
    from meta_eval.attacks import ATTACKS
    from metrics.registry import META_KEYS

    parent = parent_of(zoo.preset)
    return {"plan": lambda z: attack_plan(z, META_KEYS, list(ATTACKS), fluency=bool(z.base)),
            "order": lambda z: attack_order(z, parent), "parent": parent}


def attack_settings(zoo):
    """The attack campaign's attack settings: the defaults, the preset's encodings, on the CPU."""
    from checkpoints.world.presets import get_preset
    from meta_eval.attacks.base import AttackSettings

    return AttackSettings(device="cpu", forms=tuple(get_preset(zoo.preset).forms))


def measure_code_of(plan: str) -> str:
    from meta_eval.measure import measure_code

    return measure_code(("meta_eval.campaign.attack", "meta_eval.attacks.*") if plan == "attack" else ())


def measure_settings(args: argparse.Namespace, zoo):
    """The campaign measures on the CPU under the spec's parity (fixed by its protocol)."""
    from uds.measure_args import measurement_settings

    return measurement_settings(args, zoo, device="cpu")


def setting_recipes(zoo, plan: str, settings, recipe, attack) -> dict[str, dict]:
    """What each setting of the plan's jobs does to a model, as the protocol records it."""
    from meta_eval.measure import plan_jobs, setting_recipe
    from metrics.registry import META_KEYS

    if plan == "attack":
        from meta_eval.campaign.attack import ATTACK
        from meta_eval.attacks import ATTACKS
        from meta_eval.perturb import ORIG

        return {ORIG: setting_recipe(ORIG, settings.device, recipe),
                ATTACK: {"settings": attack.to_dict(), "attacks": {n: a.recipe(attack) for n, a in ATTACKS.items()}}}
    jobs = plan_jobs(zoo, META_KEYS, fluency=bool(zoo.base))
    return {s: setting_recipe(s, settings.device, recipe) for s in sorted({j.setting for j in jobs})}


def settings_digest(setting: str, setting_recipe: dict, settings, code: str | None) -> str:
    """The settings digest a measurement of `setting` carries: version 2 with the measuring code's
    digest (`code`); a version-1 folder's (code None) with the declared measurement version."""
    from meta_eval.campaign.protocol import CAMPAIGN_VERSION, LEGACY_VERSION
    from meta_eval.campaign.files import settings_digest as digest
    from meta_eval.measure import MEASURE_VERSION, stamp_settings

    if code is None:
        return digest(LEGACY_VERSION, MEASURE_VERSION, setting, setting_recipe, stamp_settings(settings))
    return digest(CAMPAIGN_VERSION, code, setting, setting_recipe, stamp_settings(settings))


def legacy_protocol(zoo, digests: dict[str, str], settings, recipe, campaign) -> dict:
    """A version-1 folder's protocol as this code would have fixed it (to check the folder's)."""
    from meta_eval.campaign.protocol import LEGACY_VERSION
    from meta_eval.knowledge import CHECK_TOKENS, WORDINGS
    from meta_eval.measure import setting_recipe, stamp_settings
    from metrics.registry import META_KEYS

    return {"version": LEGACY_VERSION, "zoo": zoo.tag, "preset": zoo.preset, "seed": zoo.seed,
            "keys": list(META_KEYS), "members": _members(zoo), "recipes": digests,
            "jobs": {f"{j.setting}/{j.member.name}": list(j.keys) for j in campaign.jobs},
            "settings": {s: setting_recipe(s, settings.device, recipe)
                         for s in sorted({j.setting for j in campaign.jobs})},
            "metric_settings": stamp_settings(settings),
            "knowledge_check": {"max_new_tokens": CHECK_TOKENS, "wordings": sorted(WORDINGS)}}


def protocol(zoo, plan: str, digests: dict[str, str], recipes_of_settings: dict, settings, code: str,
             campaign) -> dict:
    """What fixes the campaign: members and their recipe digests (scheme 2) with what those cover
    that is shared (the world settings, each trainer's code), jobs, settings, the measuring code's
    digest; `fixed_at` (the commit) is recorded, not compared."""
    from checkpoints.catalogue import find_recipe
    from checkpoints.world.presets import get_preset
    from checkpoints.world.recipe_digest import RECIPE_SCHEME, trainer_code, world_settings
    from meta_eval.campaign.protocol import CAMPAIGN_VERSION
    from meta_eval.knowledge import CHECK_TOKENS, WORDINGS
    from meta_eval.measure import stamp_settings
    from metrics.registry import META_KEYS
    from uds_core.code_digest import code_commit

    preset = get_preset(zoo.preset)
    methods = set()
    for m in zoo.members:
        r = find_recipe(preset, m.name)
        while r is not None:
            methods.add(r.method)
            r = find_recipe(preset, r.parent) if r.parent else None
    return {"version": CAMPAIGN_VERSION, "plan": plan, "zoo": zoo.tag, "preset": zoo.preset, "seed": zoo.seed,
            "keys": list(META_KEYS), "members": _members(zoo), "recipes": digests, "recipe_scheme": RECIPE_SCHEME,
            "world_settings": world_settings(preset, zoo.seed),
            "trainer_code": {m: trainer_code(m) for m in sorted(methods, key=str)},
            "measure_code": code,
            "jobs": {f"{j.setting}/{j.member.name}": list(j.keys) for j in campaign.jobs},
            "settings": recipes_of_settings, "metric_settings": stamp_settings(settings),
            "knowledge_check": {"max_new_tokens": CHECK_TOKENS, "wordings": sorted(WORDINGS)},
            "fixed_at": code_commit()}


def _members(zoo) -> dict:
    return {m.name: {"kind": m.kind, "pool": m.pool, "method": m.method, "epoch": m.epoch} for m in zoo.members}


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


def measurer_factory(zoo, scratch: Path, settings, recipe, attack):
    """The campaign's measurer, made on first use: the metrics' alone, or with the attack runner."""
    if attack is None:
        return lambda: make_measurer(zoo, scratch, settings, recipe)

    def make():
        from meta_eval.campaign.attack import AttackRunner, CampaignMeasurer

        log = lambda line: print(f"campaign: {line}", file=sys.stderr, flush=True)  # noqa: E731
        return CampaignMeasurer(lambda: make_measurer(zoo, scratch, settings, recipe),
                                lambda: AttackRunner(zoo, attack, log))
    return make


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


def _refuse_ignored(paths: list[Path]) -> None:
    """Stop when git ignores a file the campaign just wrote: `git add` of its folder skips it without
    a word, so it would never be committed and a fresh machine would measure it again."""
    check = subprocess.run(["git", "check-ignore", "--verbose", "--", *map(str, paths)], capture_output=True, text=True)
    if check.returncode == 0:   # 0: at least one path is ignored; 1: none is
        source, _, path = check.stdout.splitlines()[0].partition("\t")
        raise UdsInputError(f"campaign: git ignores {path} (rule {source}), so it cannot be committed; "
                            "change that rule and run the same command again (the file is kept on disk)")


def git_publish(root: Path, attempts: int = 30):
    """A publish callback: `git add` + `git commit` of the campaign folder alone (other staged or
    changed files are left as they are), retried while another git process holds the index; an
    index.lock too old to belong to a running git is said at once (retrying cannot clear it)."""
    def publish(paths: list[Path], message: str) -> None:
        _refuse_ignored(paths)
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
