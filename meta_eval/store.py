"""On-disk cache of measurements: one JSON file per (setting, model), one value per metric key.

An entry is valid for one stamp (the model's identity plus the setting's recipe and the
evaluation settings); a different stamp discards it. Values are written after every metric
(atomically), so an interrupted run resumes at the first missing (model, setting, metric).
A metric that failed is recorded under "errors", not as a value, so a rerun retries it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core import atomic
from core.paths import safe_name


class MeasurementStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, setting: str, model: str) -> Path:
        return self.root / setting / (safe_name(model) + ".json")

    def entry(self, setting: str, model: str, stamp: str) -> dict:
        """{"stamp", "values": {key: float|None}, "info": {...}, "errors": {...}} (empty if stale)."""
        path = self.path(setting, model)
        fresh = {"stamp": stamp, "values": {}, "info": {}, "errors": {}}
        if not path.is_file():
            return fresh
        try:
            doc = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError) as exc:   # never silently used: said, then remeasured
            print(f"meta-eval: stored measurement {path} is corrupt ({exc}); measuring again", file=sys.stderr)
            return fresh
        return doc if doc.get("stamp") == stamp else fresh

    def values(self, setting: str, model: str, stamp: str) -> dict[str, float | None]:
        return dict(self.entry(setting, model, stamp)["values"])

    def write(self, setting: str, model: str, doc: dict) -> None:
        path = self.path(setting, model)
        atomic.write_json(path, doc, indent=1, allow_nan=False)
