"""The attack campaign: which models an attacker is sent against, in which order, and how a unit runs.

The zoo (`attack_zoo`) of a tiny-world preset with a suppressed pool (`Preset.suppressed`):
- full and retain, rebuilt from their recipes;
- every unlearned model of the preset's grids, rebuilt;
- the suppressed pool: each member of the knowledge-present variant, then taught to refuse
  (`checkpoints.methods.zoo_recipes.suppressed_recipes`), and those P parents themselves;
- the N controls: the never-knew variant at the same grid points.
Its jobs (`attack_plan`): the metrics as built (the unlearned models, full and retain with utility;
the suppressed pool and the N controls as pool members are measured), and one `attack` unit per
member running every attack (`meta_eval.attacks`). A suppressed member comes right before its P
parent (`attack_order`): building it builds the parent, whose weights stay until its own unit
is done (`campaign.driver.Campaign._drop_weights`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from meta_eval.assemble import FILTER_SOURCE
from meta_eval.measure import BENCHMARK_EXTRA, Job
from meta_eval.perturb import ORIG
from meta_eval.population import FULL, POOL, RETAIN, SUPPRESSED, UNLEARNED, Member, Zoo, parse_zoo_tag, tiny_zoo
from uds_core.errors import UdsInputError

ATTACK = "attack"   # the setting of an attack unit: every attack on the model as built


def attack_zoo(text: str) -> Zoo:
    """The attack campaign's zoo of `tiny:<preset>[-<seed>]` (nothing is built here)."""
    from checkpoints.methods.zoo_recipes import suppressed_controls, suppressed_recipes
    from checkpoints.specs import tiny_spec
    from checkpoints.world.presets import get_preset

    preset_name, seed = parse_zoo_tag(text)
    preset = get_preset(preset_name)
    if preset.suppressed is None:
        raise UdsInputError(f"zoo {text}: preset {preset_name!r} has no suppressed pool (Preset.suppressed), "
                            "which the attack campaign needs")
    base = tiny_zoo(text)
    by_name = {m.name: m for m in base.members}
    sup = suppressed_recipes(preset)
    members = [m for m in base.members if m.kind in (FULL, RETAIN, UNLEARNED)]
    members += [Member(r.name, tiny_spec(preset_name, seed, r.name), SUPPRESSED, r.method, r.epoch, "S") for r in sup]
    members += [by_name[r.parent] for r in sup]
    members += [by_name[r.name] for r in suppressed_controls(preset)]
    return replace(base, members=tuple(members))


def parent_of(preset_name: str) -> Callable[[Member], str | None]:
    """The member a zoo member is trained from (its recipe's parent)."""
    from checkpoints.catalogue import find_recipe
    from checkpoints.world.presets import get_preset

    preset = get_preset(preset_name)
    return lambda m: find_recipe(preset, m.name).parent


def attack_plan(zoo: Zoo, keys: Sequence[str], attacks: Sequence[str], fluency: bool = True) -> list[Job]:
    """The metrics as built (unlearned, full and retain with the benchmark's utility; suppressed
    members and N controls as pool members are), then an attack unit for every member."""
    keys = tuple(keys)
    before = keys + tuple(dict.fromkeys(FILTER_SOURCE[k] for k in keys if k in FILTER_SOURCE and
                                        FILTER_SOURCE[k] not in keys))
    extra = tuple(k for k in BENCHMARK_EXTRA if (fluency or k != "fluency") and k not in before)
    jobs = [Job(m, ORIG, before + extra) for m in zoo.members if m.kind in (FULL, RETAIN, UNLEARNED)]
    jobs += [Job(m, ORIG, before) for m in zoo.members if m.kind == SUPPRESSED or (m.kind == POOL and m.pool == "N")]
    jobs += [Job(m, ATTACK, tuple(attacks)) for m in zoo.members]
    return jobs


def attack_order(zoo: Zoo, parent: Callable[[Member], str | None]) -> list[Member]:
    """Anchors first; then the unlearned models (every method's middle learning rate first, as the
    meta-evaluation campaign orders them), the suppressed members each followed by its parent, and
    the N controls, merged in proportion so that any prefix holds some of each."""
    from meta_eval.campaign.order import _rate_rank_order, merge_queues

    by_name = {m.name: m for m in zoo.members}
    anchors = [m for m in zoo.members if m.kind in (FULL, RETAIN)]
    pairs = [[m, by_name[parent(m)]] for m in zoo.of_kind(SUPPRESSED)]
    controls = [m for m in zoo.members if m.kind == POOL and m.pool == "N"]
    merged = merge_queues([_rate_rank_order(zoo.of_kind(UNLEARNED)), pairs, [[m] for m in controls]])
    return anchors + [m for item in merged for m in (item if isinstance(item, list) else [item])]


class AttackRunner:
    """Runs an attack job: every attack of the job on the member, as `meta_eval.attacks.run` runs
    them, into a measurement entry (values: the recovered share per attack, None where the attack
    cannot run here; the per-question hits and what each attack chose under info.detail)."""

    def __init__(self, zoo: Zoo, settings, log: Callable[[str], None]):
        from checkpoints.specs import load_tokenizer
        from checkpoints.world.store import load_world
        from meta_eval.attacks.base import attack_data
        from meta_eval.attacks.run import loader

        self.zoo, self.settings, self.log = zoo, settings, log
        world = load_world(zoo.preset, zoo.seed)
        self.data = attack_data(world.forget, world.retain, load_tokenizer(zoo.full), settings.seed)
        self.load = loader(settings.device)

    def run(self, job: Job) -> dict:
        from meta_eval.attacks.base import Target
        from meta_eval.attacks.run import run_attacks

        outcomes = run_attacks(Target(job.member.spec, self.zoo.full, self.load), self.data, job.keys,
                               self.settings, log=self.log)
        values = {n: o.share for n, o in outcomes.items() if o.share is not None or o.unavailable}
        errors = {n: ("unavailable here: " if o.unavailable else "") + o.error
                  for n, o in outcomes.items() if o.error}
        detail = {n: {"hits": o.hits, **o.detail} for n, o in outcomes.items() if o.hits is not None}
        return {"values": values, "errors": errors,
                "info": {"seconds": {n: o.seconds for n, o in outcomes.items()}, "detail": detail}}


class CampaignMeasurer:
    """The measurer of a campaign with attack units: `attack` jobs go to the attack runner, every
    other job to the metrics' `Measurer` (each made on first use)."""

    def __init__(self, metrics: Callable[[], object], attacks: Callable[[], AttackRunner]):
        self._make = {"metrics": metrics, "attacks": attacks}
        self._made: dict[str, object] = {}

    def _get(self, which: str):
        if which not in self._made:
            self._made[which] = self._make[which]()
        return self._made[which]

    def run(self, job: Job) -> dict:
        return self._get("attacks" if job.setting == ATTACK else "metrics").run(job)
