"""A meta-evaluation campaign: build and measure a whole zoo, one unit at a time, from files.

The zoo's members are taken in a fixed order (`campaign_order`: the anchors, then pool members
and unlearned models interleaved so that a partial campaign already has both pools and every
method). For each member: build it (if no committed file says it is measured), run the knowledge
check (pool members and anchors), measure each (model, setting) it needs (`measure.plan_jobs`),
write each result as a small sealed file (`campaign.files`) and hand it to `publish` (the command
commits it), then delete the member's weights. A stop (signal, crash, another machine) loses at
most the unit in flight; a rerun continues from the files alone, rebuilding only what it needs.
When the anchors (full, retain) had to be rebuilt, the first units re-score a few measured models
with the new anchors and write the spread.
"""

from __future__ import annotations

import platform
import shutil
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import torch

from meta_eval.campaign.files import CampaignFiles, digest_of
from meta_eval.measure import Job, Measurer, plan_jobs
from meta_eval.perturb import NF4, ORIG, RELEARN
from meta_eval.population import FULL, POOL, RETAIN, SUPPRESSED, UNLEARNED, Member, Zoo
from metrics.registry import anchor_dependent
from uds_core.code_digest import code_commit
from uds_core.errors import UdsInputError

# Version 2: recipe digests of scheme 2 (world settings and trainer code, `checkpoints.world.
# recipe_digest`), the measuring code's digest in the settings digest, the code commit in every file.
CAMPAIGN_VERSION = 2
LEGACY_VERSION = 1   # folders fixed before: read (status, assembly) under their own rules, never run
SPREAD_MODELS = 2   # measured models re-scored with rebuilt anchors
# First guesses (seconds) for the ETA until the campaign has timed a unit of that kind itself.
GUESS = {"build:pool": 450.0, "build:unlearned": 300.0, "build:full": 700.0, "build:retain": 500.0,
         f"{POOL}:{ORIG}": 420.0, f"{UNLEARNED}:{ORIG}": 600.0, f"{UNLEARNED}:{NF4}": 330.0,
         f"{UNLEARNED}:{RELEARN}": 360.0, f"build:{SUPPRESSED}": 300.0, f"{SUPPRESSED}:{ORIG}": 420.0}


class Stopped(BaseException):
    """A signal asked the campaign to stop; nothing half-written is left. A BaseException, like
    KeyboardInterrupt, so that no `except Exception` on the way (a metric's) swallows it."""


@dataclass
class Progress:
    """Counts and timings of a campaign, from its files and this run."""
    measured: int = 0
    total: int = 0
    built: int = 0
    members: int = 0
    seconds: dict[str, list[float]] = field(default_factory=dict)

    def add(self, kind: str, seconds: float) -> None:
        self.seconds.setdefault(kind, []).append(seconds)

    def estimate(self, kind: str) -> float:
        """Median seconds of the units of `kind` timed so far; before the first, the median of
        the timed units of its family (builds, or measurements), so that a zoo of another size
        than the guesses' is not estimated at theirs once anything of it is timed; else a guess."""
        seen = self.seconds.get(kind)
        if seen:
            return statistics.median(seen)
        family = [s for k, ss in self.seconds.items() if _is_build(k) == _is_build(kind) for s in ss]
        return statistics.median(family) if family else GUESS.get(kind, 400.0)


def _is_build(kind: str) -> bool:
    return kind.startswith("build:")


def campaign_order(zoo: Zoo) -> list[Member]:
    """Anchors first (full, retain), then pool members and unlearned models merged in proportion
    (each queue keeps its zoo order, the unlearned one by learning-rate rank: every method's
    middle rate first), so that any prefix of the campaign holds both pools and every method."""
    anchors = [m for m in zoo.members if m.kind in (FULL, RETAIN)]
    return anchors + merge_queues([_spread_pool_order(zoo.of_kind(POOL)), _rate_rank_order(zoo.of_kind(UNLEARNED))])


def merge_queues(queues: Sequence[Sequence]) -> list:
    """The items of every queue, each queue in its own order, merged in proportion (item i of a
    queue of n at i / n; ties: the earlier queue first). Empty queues are skipped."""
    queues = [q for q in queues if q]
    merged = sorted(((i / len(q), qi, i) for qi, q in enumerate(queues) for i in range(len(q))))
    return [queues[qi][i] for _, qi, i in merged]


def _rate_rank_order(members: Sequence[Member]) -> list[Member]:
    """Each method's models by rank of their position in the zoo: rank 1 (the middle of three
    learning rates) of every method, then rank 0, then rank 2, ..."""
    by_method: dict[str | None, list[Member]] = {}
    for m in members:
        by_method.setdefault(m.method, []).append(m)
    depth = max((len(v) for v in by_method.values()), default=0)
    ranks = ([1, 0] + list(range(2, depth))) if depth > 1 else list(range(depth))
    return [v[r] for r in ranks for v in by_method.values() if r < len(v)]


def _spread_pool_order(members: Sequence[Member]) -> list[Member]:
    """Pool members point by point (a point = one learning rate and epoch count), the points in
    an order that spreads over the grid (0, 5, 2, 7, ...), P and N variants alternating inside."""
    points: dict[str, list[Member]] = {}
    for m in members:
        points.setdefault(m.name.split("_", 2)[-1], []).append(m)
    keys = list(points)
    step = len(keys) // 2 or 1
    order = [keys[(i * step + i // 2) % len(keys)] if len(keys) > 2 else keys[i] for i in range(len(keys))]
    order = list(dict.fromkeys(order)) + [k for k in keys if k not in order]
    out = []
    for key in order:
        ps = [m for m in points[key] if m.pool == "P"]
        ns = [m for m in points[key] if m.pool == "N"]
        out += [m for pair in zip(ps, ns) for m in pair] + ps[len(ns):] + ns[len(ps):]
    return out


def cheapest_to_rebuild(measured: Sequence[dict], builds: dict[str, dict]) -> list[dict]:
    """Measurement documents ordered by their model's committed training seconds (unknown last, then
    by name): re-scoring a model on a fresh machine means training it again, so the spread of rebuilt
    anchors takes the quickest ones."""
    def cost(doc: dict) -> tuple[float, str]:
        seconds = builds.get(doc["model"], {}).get("train_seconds")
        return (float("inf") if seconds is None else float(seconds), doc["model"])
    return sorted(measured, key=cost)


def cpu_name() -> str:
    """The CPU's model name (Linux), else the architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    return {"cpu": cpu_name(), "platform": platform.platform(), "torch": torch.__version__,
            "threads": torch.get_num_threads()}


@dataclass(frozen=True)
class CampaignSpec:
    """What the campaign runs on: the zoo, and how to build, identify and check its members.
    `settings_digest(setting)`: the metric and perturbation settings of a setting's measurements;
    `fingerprint(folder)`: the content digest of a built model folder."""
    zoo: Zoo
    files: CampaignFiles
    keys: tuple[str, ...]
    recipe_digest: Callable[[Member], str]
    settings_digest: Callable[[str], str]
    is_built: Callable[[Member], bool]
    build: Callable[[Member], Path]
    folder: Callable[[Member], Path]
    fingerprint: Callable[[Path], str]
    knowledge: Callable[[Member], dict] | None = None   # the knowledge check of a built member
    keep: frozenset[str] = frozenset()                   # kinds whose weights are kept
    alternates: Path | None = None                       # where the AltPO builder keeps its answers
    relearned: Path | None = None                        # folder of the measurer's relearned copies
    plan: Callable[[Zoo], list[Job]] | None = None       # the zoo's jobs (None: the meta-evaluation's)
    order: Callable[[Zoo], list[Member]] | None = None   # the members' order (None: `campaign_order`)
    parent: Callable[[Member], str | None] = lambda m: None   # the member a member is trained from
    legacy_digest: Callable[[Member], str] | None = None  # its scheme-1 digest, recorded beside the new one
    measure_code: str | None = None                      # digest of the measuring code (recorded per file)
    legacy: bool = False                                 # fixed under version 1: readable, never run


class Campaign:
    def __init__(self, spec: CampaignSpec, measurer_factory: Callable[[], Measurer],
                 publish: Callable[[list[Path], str], None] = lambda paths, msg: None,
                 log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)):
        self.spec, self.files, self.zoo = spec, spec.files, spec.zoo
        self._measurer_factory, self._measurer = measurer_factory, None
        self.publish, self.log = publish, log
        self.jobs = spec.plan(self.zoo) if spec.plan else plan_jobs(self.zoo, spec.keys, fluency=bool(self.zoo.base))
        self.order = spec.order(self.zoo) if spec.order else campaign_order(self.zoo)
        self.progress = Progress()
        self._code: dict | None = None

    @property
    def code(self) -> dict:
        """The code this run measures with: the commit at its start (with whether the project's
        packages differed from it) and the measuring code's digest."""
        if self._code is None:
            self._code = code_commit() | {"measure_code": self.spec.measure_code}
        return self._code

    # --- identities ------------------------------------------------------------------------
    @property
    def measurer(self) -> Measurer:
        if self._measurer is None:
            self._measurer = self._measurer_factory()
        return self._measurer

    def settings_digest(self, setting: str) -> str:
        return self.spec.settings_digest(setting)

    def jobs_of(self, member: Member) -> list[Job]:
        return [j for j in self.jobs if j.member.name == member.name]

    # --- state from the files --------------------------------------------------------------
    def done(self, job: Job, fingerprint: str | None = None) -> bool:
        return self.files.valid_measurement(job.setting, job.member.name, self.spec.recipe_digest(job.member),
                                            self.settings_digest(job.setting), job.keys, fingerprint) is not None

    def member_done(self, member: Member) -> bool:
        return all(self.done(j) for j in self.jobs_of(member))

    def count(self) -> Progress:
        p = Progress(members=len(self.order), total=len(self.jobs))
        for doc in self.files.measurements():
            p.add(f"{doc.get('kind')}:{doc.get('setting')}", float(sum(doc.get("seconds", {}).values())))
        for doc in self.files.builds().values():
            if doc.get("train_seconds") is not None:
                p.add(f"build:{doc.get('kind')}", float(doc["train_seconds"]))
        p.measured = sum(self.done(j) for j in self.jobs)
        p.built = sum(1 for m in self.order if self.member_done(m) or self.spec.is_built(m))
        return p

    def eta_seconds(self, p: Progress) -> float:
        left = 0.0
        for m in self.order:
            todo = [j for j in self.jobs_of(m) if not self.done(j)]
            if todo and not self.spec.is_built(m):
                left += p.estimate(f"build:{m.kind}")
            left += sum(p.estimate(f"{m.kind}:{j.setting}") for j in todo)
        return left

    def status_line(self, p: Progress | None = None) -> str:
        p = p or self.count()
        return _headline(self.zoo.tag, p.measured, p.total, sum(self.member_done(m) for m in self.order), p.members,
                         self.eta_seconds(p))

    def status(self) -> dict:
        """Where the campaign stands, from the files: units measured (per kind and setting), models
        complete, the next member to work on, the median seconds per unit kind and the ETA."""
        p = self.count()
        done = {(j.member.name, j.setting) for j in self.jobs if self.done(j)}

        def tally(kind: str, setting: str, pool: str | None = None) -> dict:
            js = [j for j in self.jobs if j.member.kind == kind and j.setting == setting
                  and (pool is None or j.member.pool == pool)]
            return {"measured": sum((j.member.name, j.setting) in done for j in js), "total": len(js)}
        todo = [(m, [j.setting for j in self.jobs_of(m) if (m.name, j.setting) not in done]) for m in self.order]
        member, settings = next(((m, s) for m, s in todo if s), (None, []))
        return {
            "zoo": self.zoo.tag, "units": p.measured, "units_total": p.total,
            "models_complete": sum(self.member_done(m) for m in self.order), "models_total": p.members,
            "pool": {lab: tally(POOL, ORIG, lab) for lab in ("P", "N")},
            "unlearned": {s: tally(UNLEARNED, s) for s in (ORIG, NF4, RELEARN)},
            "anchors": {f"{j.setting}/{j.member.name}": (j.member.name, j.setting) in done
                        for j in self.jobs if j.member.kind in (FULL, RETAIN)},
            "groups": {group: {"measured": sum((j.member.name, j.setting) in done for j in js), "total": len(js)}
                       for group, js in job_groups(self.jobs).items()},
            "next": None if member is None else {"member": member.name, "built": self.spec.is_built(member),
                                                 "settings": settings},
            "median_seconds": {k: statistics.median(v) for k, v in sorted(p.seconds.items())},
            "eta_seconds": round(self.eta_seconds(p), 1)}

    def status_report(self, st: dict | None = None) -> list[str]:
        """`status` as the lines `uds campaign status` prints."""
        st = st or self.status()
        count = lambda t: f"{t['measured']}/{t['total']}"  # noqa: E731
        un = st["unlearned"]
        lines = [_headline(st["zoo"], st["units"], st["units_total"], st["models_complete"], st["models_total"],
                           st["eta_seconds"])]
        if self.spec.plan is None:   # the meta-evaluation's plan: its own words
            lines += [f"  pool members measured: P {count(st['pool']['P'])}, N {count(st['pool']['N'])}",
                      f"  unlearned models measured: as built {count(un[ORIG])}, NF4 {count(un[NF4])}, "
                      f"relearned {count(un[RELEARN])}"]
        else:
            lines += [f"  {group}: {count(t)}" for group, t in st["groups"].items()]
        anchors = ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in st["anchors"].items())
        lines.append(f"  anchors measured: {anchors}")
        if st["next"] is not None:
            nxt = st["next"]
            lines.append(f"  next: {nxt['member']} ({'built here' if nxt['built'] else 'to build'}; "
                         f"then {', '.join(nxt['settings'])})")
        if st["median_seconds"]:
            timed = ", ".join(f"{k} {v:.0f}" for k, v in st["median_seconds"].items())
            lines.append(f"  median seconds per unit (from the files): {timed}")
        return lines

    # --- running ---------------------------------------------------------------------------
    def run(self, max_units: int | None = None) -> int:
        """Measure what is missing, in order; returns the number of units measured. A signal
        (SIGINT, SIGTERM) stops after cleaning up the unit in flight (nothing partial is kept)."""
        if self.spec.legacy:
            raise UdsInputError(
                f"the campaign in {self.files.root} was fixed under campaign version {LEGACY_VERSION} (recipe "
                "digests without the world settings and trainer code, no record of the measuring code); its files "
                "stay readable (`uds campaign status`, `uds meta-eval --from-campaign`) but it is not continued: "
                "start a new campaign folder with --dir")
        self.code   # the commit this process started from
        previous = {s: signal.signal(s, _raise_stopped) for s in (signal.SIGINT, signal.SIGTERM)}
        units = self.units_run = 0
        try:
            self.progress = self.count()
            self.log(self.status_line(self.progress))
            self.anchor_fingerprints()   # full and retain (and their base) built before any measurement
            self.check_anchors()
            for member in self.order:
                if max_units is not None and units >= max_units:
                    break
                units += self.run_member(member, None if max_units is None else max_units - units)
            self.log(self.status_line())
        except Stopped:
            self.log(f"campaign: stopped by a signal after {self.units_run} unit(s); every finished unit is in "
                     f"{self.files.root}; run the same command to continue")
        finally:
            for s, h in previous.items():
                signal.signal(s, h)
        return units

    def run_member(self, member: Member, budget: int | None) -> int:
        jobs = self.jobs_of(member)
        if all(self.done(j) for j in jobs):
            self._drop_weights(member)
            return 0
        fingerprint = self.ensure_built(member)
        units = 0
        for job in jobs:
            if budget is not None and units >= budget:
                return units
            if self.done(job, fingerprint):
                continue
            self.measure(job, fingerprint)
            units += 1
        if all(self.done(j, fingerprint) for j in jobs):
            self._drop_weights(member)
        return units

    def ensure_built(self, member: Member) -> str:
        """Build the member if needed (with its knowledge check) and return its fingerprint."""
        path = self.files.build(member.name)
        doc = self.files.read(path)
        if doc is not None and doc.get("recipe_digest") != self.spec.recipe_digest(member):
            doc = None
        fresh = not self.spec.is_built(member)
        self._restore_alternates(member)
        t0 = time.time()
        folder = self.spec.build(member)
        fingerprint = self.spec.fingerprint(folder)
        if doc is None or doc.get("fingerprint") != fingerprint:
            if doc is not None:
                self.log(f"campaign: {member.name} was rebuilt here (fingerprint {fingerprint[:12]}, the committed "
                         f"build {str(doc.get('fingerprint'))[:12]}); its unfinished settings are measured on this build")
            self._write_build(member, folder, fingerprint, fresh, time.time() - t0)
        self._save_alternates(member)
        return fingerprint

    def _write_build(self, member: Member, folder: Path, fingerprint: str, fresh: bool, seconds: float) -> None:
        import json

        recipe = json.loads((folder / "recipe.json").read_text()) if (folder / "recipe.json").is_file() else {}
        doc = {"model": member.name, "kind": member.kind, "pool": member.pool, "method": member.method,
               "recipe_digest": self.spec.recipe_digest(member), "fingerprint": fingerprint,
               "train_seconds": recipe.get("train_seconds"), "recipe": {k: recipe.get(k) for k in
                                                                       ("data", "train", "hparams", "parent")},
               "recipe_covers": recipe.get("digest_covers"), "code": self.code, "machine": machine()}
        if self.spec.legacy_digest is not None:
            doc["legacy_recipe_digest"] = self.spec.legacy_digest(member)
        if self.spec.knowledge is not None and member.kind in (POOL, FULL, RETAIN, SUPPRESSED):
            doc["knowledge"] = self.spec.knowledge(member)
        path = self.files.write(self.files.build(member.name), doc)
        if fresh and recipe.get("train_seconds") is not None:
            self.progress.add(f"build:{member.kind}", float(recipe["train_seconds"]))
        self.publish([path], f"campaign {self.zoo.tag}: built {member.name}")

    def measure(self, job: Job, fingerprint: str) -> None:
        m = self.measurer
        t0 = time.time()
        entry = m.run(job)
        values = {k: entry["values"][k] for k in job.keys if k in entry["values"]}
        doc = {"model": job.member.name, "kind": job.member.kind, "pool": job.member.pool,
               "method": job.member.method, "epoch": job.member.epoch, "setting": job.setting,
               "recipe_digest": self.spec.recipe_digest(job.member), "settings_digest": self.settings_digest(job.setting),
               "model_fingerprint": fingerprint, "anchors": self.anchor_fingerprints(),
               "values": values, "errors": dict(entry.get("errors", {})),
               "seconds": {k: v for k, v in entry["info"].get("seconds", {}).items() if k in job.keys},
               "fluency_source": entry["info"].get("fluency_source"), "code": self.code, "machine": machine()}
        if entry["info"].get("detail"):
            doc["detail"] = entry["info"]["detail"]
        path = self.files.write(self.files.measurement(job.setting, job.member.name), doc)
        self.units_run = getattr(self, "units_run", 0) + 1
        seconds = time.time() - t0
        self.progress.add(f"{job.member.kind}:{job.setting}", seconds)
        missing = [k for k in job.keys if k not in values]   # an attack that cannot run here is None, not missing
        self.progress.measured += 0 if missing else 1
        self.publish([path], f"campaign {self.zoo.tag}: {job.setting}/{job.member.name} "
                             f"({self.progress.measured}/{self.progress.total})")
        state = f"missing {', '.join(missing)}" if missing else "done"
        self.log(f"campaign: [{self.progress.measured}/{self.progress.total}] {job.setting}/{job.member.name} "
                 f"{state} in {seconds:.0f} s; ETA {self.eta_seconds(self.progress) / 3600:.1f} h")

    # --- anchors -----------------------------------------------------------------------------
    def anchor_fingerprints(self) -> dict[str, str]:
        if not hasattr(self, "_anchor_fps"):
            anchors = {m.kind: m for m in self.zoo.members if m.kind in (FULL, RETAIN)}
            self._anchor_fps = {role: self.spec.fingerprint(self.spec.build(m)) for role, m in sorted(anchors.items())}
        return self._anchor_fps

    def check_anchors(self) -> None:
        """Record this build of the anchors; when earlier measurements used another build, re-score
        a few measured models with this one and write the spread (once per anchor build)."""
        fps = self.anchor_fingerprints()
        build = digest_of(fps)
        path = self.files.anchors(build)
        measurements = self.files.measurements()
        if self.files.read(path) is None:
            self.files.write(path, {"anchors": fps, "machine": machine()})
            self.publish([path], f"campaign {self.zoo.tag}: anchor build {build[:12]}")
        else:
            # a build on another machine that reproduced the recorded bytes needs no spread: say so
            used = sum(d.get("anchors") == fps for d in measurements)
            self.log(f"campaign: full/retain here are anchor build {path.stem} of anchors/ "
                     f"(the same fingerprints; {used} committed measurement(s) used it)")
        measured = [d for d in measurements if d.get("setting") == ORIG]
        earlier = {digest_of(d["anchors"]) for d in measured if d.get("anchors")}
        if earlier <= {build} or self.files.read(self.files.spread(build)) is not None:
            return
        self.log(f"campaign: full/retain here differ from the build the committed measurements used; "
                 f"re-scoring {SPREAD_MODELS} measured models to state the spread")
        self.write_spread(fps, measured)

    def write_spread(self, fps: dict[str, str], measured: list[dict]) -> None:
        """Re-measure every anchor-dependent key (UDS, the retain-normalised MIAs, CKA, Logit Lens,
        Fisher, fluency: `metrics.registry.anchor_dependent`) of the cheapest measured models with
        these anchors, beside the committed values."""
        names = {m.name: m for m in self.zoo.members}
        candidates = [d for d in measured if d["kind"] == UNLEARNED and d["model"] in names
                      and d["values"].get("uds") is not None]
        chosen = cheapest_to_rebuild(candidates, self.files.builds())[:SPREAD_MODELS]
        rows = []
        for d in chosen:
            member = names[d["model"]]
            keys = tuple(k for k in anchor_dependent(list(d["values"])) if d["values"].get(k) is not None)
            self.spec.build(member)
            entry = self.measurer.run(Job(member, ORIG, keys))
            rows.append(spread_row(member.name, d, entry["values"], keys))
            self._drop_weights(member)
        path = self.files.write(self.files.spread(digest_of(fps)), {"anchors_here": fps, "models": rows,
                                                                   "code": self.code, "machine": machine()})
        worst = {k: max((r["metrics"][k]["abs_diff"] for r in rows if k in r["metrics"]
                         and r["metrics"][k]["abs_diff"] is not None), default=None)
                 for k in dict.fromkeys(k for r in rows for k in r["metrics"])}
        self.log(f"campaign: spread with the rebuilt anchors over {len(rows)} models, largest |difference| per "
                 f"key: {', '.join(f'{k} {v:.2g}' if v is not None else f'{k} n/a' for k, v in worst.items())}")
        self.publish([path], f"campaign {self.zoo.tag}: spread of rebuilt anchors")

    # --- files beside the models -------------------------------------------------------------
    def _restore_alternates(self, member: Member) -> None:
        """AltPO's answers are generated once: a committed copy goes where the builder reads it."""
        dst = self.spec.alternates
        if member.method == "altpo" and dst is not None and self.files.alternates.is_file() and not dst.is_file():
            doc = self.files.read(self.files.alternates)
            if doc is not None:
                import json

                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_text(json.dumps(doc["alternates"], indent=1))

    def _save_alternates(self, member: Member) -> None:
        src = self.spec.alternates
        if member.method != "altpo" or src is None or not src.is_file() or self.files.alternates.is_file():
            return
        import json

        path = self.files.write(self.files.alternates, {"alternates": json.loads(src.read_text()),
                                                         "made_by": "the full model of the first build"})
        self.publish([path], f"campaign {self.zoo.tag}: AltPO alternate answers")

    def _drop_weights(self, member: Member) -> None:
        """Delete a measured member's weights and relearned copy (anchors and kept kinds stay, and so
        does a member that an unfinished member is still to be trained from)."""
        if member.kind in (FULL, RETAIN) or member.kind in self.spec.keep:
            return
        if any(self.spec.parent(m) == member.name and not self.member_done(m) for m in self.order):
            return
        folders = [self.spec.folder(member)]
        if self.spec.relearned is not None:
            folders.append(self.spec.relearned / f"{member.name}-relearn")
        for folder in folders:
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)


def spread_row(model: str, committed: dict, here: dict, keys: Sequence[str]) -> dict:
    """One model of a spread file: per anchor-dependent key the committed value, this build's and
    their absolute difference; UDS's also under the fields spread files had before the other keys."""
    def diff(a, b):
        return None if a is None or b is None else abs(a - b)
    metrics = {k: {"committed": committed["values"].get(k), "here": here.get(k),
                   "abs_diff": diff(here.get(k), committed["values"].get(k))} for k in keys}
    uds = metrics.get("uds", {"committed": None, "here": None, "abs_diff": None})
    return {"model": model, "uds_committed": uds["committed"], "uds_here": uds["here"], "abs_diff": uds["abs_diff"],
            "metrics": metrics, "committed_anchors": committed.get("anchors")}


def job_groups(jobs: Sequence[Job]) -> dict[str, list[Job]]:
    """Jobs by "<kind>[ <pool>] <setting>" (e.g. "pool N attack"), in first-seen order."""
    out: dict[str, list[Job]] = {}
    for j in jobs:
        kind = j.member.kind + (f" {j.member.pool}" if j.member.pool else "")
        out.setdefault(f"{kind} {j.setting}", []).append(j)
    return out


def _headline(zoo: str, units: int, total: int, complete: int, members: int, eta_seconds: float) -> str:
    return (f"campaign {zoo}: measured {units}/{total} (model, setting) units, {complete}/{members} models "
            f"complete; ETA {eta_seconds / 3600:.1f} h on this machine")


def _raise_stopped(signum, frame) -> None:
    raise Stopped(signal.Signals(signum).name)


RECORDED_ONLY = ("digest", "fixed_at")   # protocol fields that are recorded, not compared


def check_protocol(files: CampaignFiles, protocol: dict, write: bool = True, refix: bool = False) -> None:
    """Write the protocol on the first run (`write`); afterwards refuse to run under another one
    (every field but the recorded-only ones: its seal and the commit that fixed it). `refix`: while
    no build or measurement file exists, another protocol replaces the fixed one (said on stderr)."""
    import json
    import sys

    doc = files.read(files.protocol)
    unmeasured = not any((files.root / "builds").glob("*.json")) and not any(
        (files.root / "measurements").glob("*/*.json"))
    if doc is not None and refix and unmeasured and {k: v for k, v in doc.items() if k not in RECORDED_ONLY} != {
            k: v for k, v in protocol.items() if k not in RECORDED_ONLY}:
        changed = sorted(k for k in set(doc) | set(protocol)
                         if k not in RECORDED_ONLY and doc.get(k) != protocol.get(k))
        print(f"campaign: {files.protocol} fixed again (no unit was measured under it; changed: {', '.join(changed)})",
              file=sys.stderr)
        files.write(files.protocol, protocol)
        return
    if doc is None:
        if files.protocol.is_file():
            raise UdsInputError(f"{files.protocol} is damaged; restore it from git (it fixes the campaign's protocol)")
        if write:
            files.write(files.protocol, protocol)
        return
    body = {k: v for k, v in doc.items() if k not in RECORDED_ONLY}
    protocol = {k: v for k, v in protocol.items() if k not in RECORDED_ONLY}
    if body != protocol:
        diff = sorted(k for k in set(body) | set(protocol) if body.get(k) != protocol.get(k))
        detail = diff
        if "measure_code" in diff:
            detail = [d for d in detail if d != "measure_code"] + [
                "the measuring code (its digest; run from the commit in protocol.json's fixed_at)"]
        if "recipes" in diff:
            old, new = body.get("recipes", {}), protocol.get("recipes", {})
            changed = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
            detail = [d for d in detail if d != "recipes"] + [f"recipes of {', '.join(changed[:6])}"
                                                            + (" ..." if len(changed) > 6 else "")]
        if unmeasured:
            raise UdsInputError(f"the campaign in {files.root} was fixed under another protocol (differs in: "
                                f"{'; '.join(detail)}) and nothing is measured under it yet: `uds campaign protocol` "
                                "with the same options fixes it again for this code")
        raise UdsInputError(f"the campaign in {files.root} was fixed under another protocol (differs in: "
                            f"{'; '.join(detail)}); its files are not mixed with new ones: start a new "
                            f"campaign folder with --dir, or restore the code that made {json.dumps(files.protocol.name)}")
