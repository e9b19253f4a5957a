"""The anchors (full, retain) a campaign measures with: their fingerprints, recorded once per build,
and when the committed measurements used another build, a few measured models re-scored with this
one and the spread written beside them."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from meta_eval.campaign.files import digest_of
from meta_eval.campaign.ledger import CampaignLedger
from meta_eval.campaign.machine import machine
from meta_eval.measure import Job, Measurer
from meta_eval.perturb import ORIG
from meta_eval.population import FULL, RETAIN, UNLEARNED, Member
from metrics.registry import anchor_dependent

SPREAD_MODELS = 2   # measured models re-scored with rebuilt anchors


def cheapest_to_rebuild(measured: Sequence[dict], builds: dict[str, dict]) -> list[dict]:
    """Measurement documents ordered by their model's committed training seconds (unknown last, then
    by name): re-scoring a model on a fresh machine means training it again, so the spread of rebuilt
    anchors takes the quickest ones."""
    def cost(doc: dict) -> tuple[float, str]:
        seconds = builds.get(doc["model"], {}).get("train_seconds")
        return (float("inf") if seconds is None else float(seconds), doc["model"])
    return sorted(measured, key=cost)


class AnchorCheck:
    def __init__(self, ledger: CampaignLedger, measurer: Callable[[], Measurer], code: Callable[[], dict],
                 drop_weights: Callable[[Member], None], publish: Callable[[list[Path], str], None],
                 log: Callable[[str], None]):
        self.spec, self.files, self.zoo = ledger.spec, ledger.files, ledger.zoo
        self._measurer, self._code, self._drop_weights = measurer, code, drop_weights
        self.publish, self.log = publish, log

    @property
    def measurer(self) -> Measurer:
        return self._measurer()

    @property
    def code(self) -> dict:
        return self._code()

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
