"""A meta-evaluation campaign: build and measure a whole zoo, one unit at a time, from files.

The zoo's members are taken in a fixed order (`campaign_order`: the anchors, then pool members
and unlearned models interleaved so that a partial campaign already has both pools and every
method). For each member: build it (if no committed file says it is measured), run the knowledge
check (pool members and anchors), measure each (model, setting) it needs (`measure.plan_jobs`),
write each result as a small sealed file (`campaign.files`) and hand it to `publish` (the command
commits it), then delete the member's weights. A stop (signal, crash, another machine) loses at
most the unit in flight; a rerun continues from the files alone, rebuilding only what it needs.
When the anchors (full, retain) had to be rebuilt, the first units re-score a few measured models
with the new anchors and write the spread (`anchors`). The plan and what the files hold are the
`ledger`'s, the counts and the ETA the `progress` report's, the protocol's check `protocol`'s.
"""

from __future__ import annotations

import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from meta_eval.campaign.alternates import AlternateAnswers
from meta_eval.campaign.anchors import AnchorCheck
from meta_eval.campaign.ledger import CampaignLedger
from meta_eval.campaign.machine import machine
from meta_eval.campaign.progress import CampaignStatus, Progress
from meta_eval.campaign.protocol import LEGACY_VERSION
from meta_eval.campaign.spec import CampaignSpec
from meta_eval.measure import Job, Measurer
from meta_eval.population import FULL, POOL, RETAIN, SUPPRESSED, Member
from uds_core.code_digest import code_commit
from uds_core.errors import UdsInputError


class Stopped(BaseException):
    """A signal asked the campaign to stop; nothing half-written is left. A BaseException, like
    KeyboardInterrupt, so that no `except Exception` on the way (a metric's) swallows it."""


class Campaign:
    """Runs a campaign: each member in order built (with its knowledge check), measured setting by
    setting into sealed files handed to `publish`, then its weights deleted."""

    def __init__(self, spec: CampaignSpec, measurer_factory: Callable[[], Measurer],
                 publish: Callable[[list[Path], str], None] = lambda paths, msg: None,
                 log: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)):
        self._measurer_factory, self._measurer = measurer_factory, None
        self.publish, self.log = publish, log
        self.spec = spec
        self.progress = Progress()
        self._code: dict | None = None
        # a status read under other code: how it differs from protocol.json (whose digests it counts by)
        self.other_code: list[str] = []

    @property
    def spec(self) -> CampaignSpec:
        return self._spec

    @spec.setter
    def spec(self, spec: CampaignSpec) -> None:
        """The spec and the parts made from it: the plan and what the files hold (`ledger`), the
        status (`report`), the anchors' check and AltPO's answers; `publish` and `log` are looked
        up at each call, so that replacing them later reaches every part."""
        self._spec, self.files, self.zoo = spec, spec.files, spec.zoo
        self.ledger = ledger = CampaignLedger(spec)
        self.jobs, self.order = ledger.jobs, ledger.order
        self.done, self.member_done, self.jobs_of = ledger.done, ledger.member_done, ledger.jobs_of
        self.settings_digest = ledger.settings_digest
        self.report = CampaignStatus(ledger)
        publish = lambda paths, msg: self.publish(paths, msg)  # noqa: E731
        self.anchors = AnchorCheck(ledger, lambda: self.measurer, lambda: self.code, self._drop_weights, publish,
                                   lambda s: self.log(s))
        self.alternates = AlternateAnswers(self.files, spec.alternates, publish, self.zoo.tag)

    @property
    def code(self) -> dict:
        """The code this run measures with: the commit at its start (with whether the project's
        packages differed from it) and the measuring code's digest."""
        if self._code is None:
            self._code = code_commit() | {"measure_code": self.spec.measure_code}
        return self._code

    @property
    def measurer(self) -> Measurer:
        if self._measurer is None:
            self._measurer = self._measurer_factory()
        return self._measurer

    def status(self) -> dict:
        return self.report.status()

    def status_report(self, st: dict | None = None) -> list[str]:
        return self.report.status_report(st)

    def check_anchors(self) -> None:
        self.anchors.check_anchors()

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
            self.progress = self.report.count()
            self.log(self.report.status_line(self.progress))
            self.anchors.anchor_fingerprints()   # full and retain (and their base) built before any measurement
            self.anchors.check_anchors()
            for member in self.order:
                if max_units is not None and units >= max_units:
                    break
                units += self.run_member(member, None if max_units is None else max_units - units)
            self.log(self.report.status_line())
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
        self.alternates.restore(member)
        t0 = time.time()
        folder = self.spec.build(member)
        fingerprint = self.spec.fingerprint(folder)
        if doc is None or doc.get("fingerprint") != fingerprint:
            if doc is not None:
                self.log(f"campaign: {member.name} was rebuilt here (fingerprint {fingerprint[:12]}, the committed "
                         f"build {str(doc.get('fingerprint'))[:12]}); "
                         "its unfinished settings are measured on this build")
            self._write_build(member, folder, fingerprint, fresh, time.time() - t0)
        self.alternates.save(member)
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
               "recipe_digest": self.spec.recipe_digest(job.member),
               "settings_digest": self.settings_digest(job.setting),
               "model_fingerprint": fingerprint, "anchors": self.anchors.anchor_fingerprints(),
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
                 f"{state} in {seconds:.0f} s; ETA {self.report.eta_seconds(self.progress) / 3600:.1f} h")

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


def _raise_stopped(signum, frame) -> None:
    raise Stopped(signal.Signals(signum).name)
