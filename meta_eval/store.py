"""On-disk cache of measurements: one JSON file per (setting, model), one value per metric key.

An entry is valid for one stamp (the model's identity plus the setting's recipe and the
evaluation settings); a different stamp discards it. Values are written after every metric
(atomically), so an interrupted run resumes at the first missing (model, setting, metric).
A metric that failed is recorded under "errors", not as a value, so a rerun retries it.
Each entry is sealed with the digest of its content (`uds_core.sealed`): an entry changed on disk,
even by one byte that keeps it valid JSON, is said in one line and measured again, never used.
An entry written before digests (no `digest`, the older keys exactly) is sealed as it is when
first read (said once per store and process).
"""

from __future__ import annotations

import sys
from pathlib import Path

from uds_core import atomic, sealed
from uds_core.paths import safe_name

LEGACY_KEYS = frozenset({"stamp", "values", "info", "errors"})   # an entry written before digests


class MeasurementStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self._said_legacy = False

    def path(self, setting: str, model: str) -> Path:
        return self.root / setting / (safe_name(model) + ".json")

    def entry(self, setting: str, model: str, stamp: str) -> dict:
        """{"stamp", "values": {key: float|None}, "info": {...}, "errors": {...}} (empty if stale
        or damaged)."""
        path = self.path(setting, model)
        fresh = {"stamp": stamp, "values": {}, "info": {}, "errors": {}}
        checked = sealed.read_checked(path, LEGACY_KEYS)
        if checked.problem:   # never silently used: said, then measured again
            print(f"meta-eval: stored measurement {path} is damaged ({checked.problem}); measuring again",
                  file=sys.stderr)
            return fresh
        if checked.doc is None:
            return fresh
        if checked.legacy:
            self._seal_legacy(path, checked.doc)
        return checked.doc if checked.doc.get("stamp") == stamp else fresh

    def _seal_legacy(self, path: Path, doc: dict) -> None:
        atomic.write_json(path, sealed.seal(doc), indent=1, allow_nan=False)
        if not self._said_legacy:
            self._said_legacy = True
            print(f"meta-eval: stored measurements under {self.root} were written before content digests; "
                  "each is sealed as it is when first read (checked on every later use)", file=sys.stderr)

    def values(self, setting: str, model: str, stamp: str) -> dict[str, float | None]:
        return dict(self.entry(setting, model, stamp)["values"])

    def write(self, setting: str, model: str, doc: dict) -> None:
        path = self.path(setting, model)
        atomic.write_json(path, sealed.seal(doc), indent=1, allow_nan=False)
