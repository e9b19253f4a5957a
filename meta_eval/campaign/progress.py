"""How far a campaign is and how long the rest will take, from its files (and this run's timings)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Sequence

from meta_eval.campaign.ledger import CampaignLedger
from meta_eval.measure import Job
from meta_eval.perturb import NF4, ORIG, RELEARN
from meta_eval.population import FULL, POOL, RETAIN, SUPPRESSED, UNLEARNED

# First guesses (seconds) for the ETA until the campaign has timed a unit of that kind itself.
GUESS = {"build:pool": 450.0, "build:unlearned": 300.0, "build:full": 700.0, "build:retain": 500.0,
         f"{POOL}:{ORIG}": 420.0, f"{UNLEARNED}:{ORIG}": 600.0, f"{UNLEARNED}:{NF4}": 330.0,
         f"{UNLEARNED}:{RELEARN}": 360.0, f"build:{SUPPRESSED}": 300.0, f"{SUPPRESSED}:{ORIG}": 420.0}


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


class CampaignStatus:
    """The counts, ETA and status lines of a campaign's plan, from its files (`CampaignLedger`)."""

    def __init__(self, ledger: CampaignLedger):
        self.spec, self.files, self.zoo, self.jobs, self.order = (ledger.spec, ledger.files, ledger.zoo,
                                                                  ledger.jobs, ledger.order)
        self.done, self.member_done, self.jobs_of = ledger.done, ledger.member_done, ledger.jobs_of

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
