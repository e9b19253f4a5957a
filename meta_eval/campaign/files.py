"""The committed files of a meta-evaluation campaign, and what makes one of them valid.

A campaign folder (for example results/smol/campaign) holds small JSON files only:
- `protocol.json`: the zoo, every member's recipe digest, the jobs, the metric and perturbation
  settings, fixed by the first run (a later run under another protocol stops, it never mixes);
- `builds/<model>.json`: one per built member: recipe digest, content fingerprint, training
  seconds, the knowledge check (pool members and anchors);
- `measurements/<setting>/<model>.json`: one per (model, setting): the metric values, the model's
  and anchors' fingerprints, seconds per metric, the machine, and (version 2) the code: the commit
  the run started from and the measuring code's digest (which the settings digest covers);
- `anchors/<fingerprint>.json`: each build of full / retain / base the campaign measured with;
- `spread/<fingerprint>.json`: when the anchors were rebuilt, every anchor-dependent metric of
  measured models re-scored (version-1 files: UDS only);
- `alternates.json`: AltPO's alternate answers, generated once.
Every file carries a `digest` of its own content (`uds_core.sealed.seal`); a file whose digest does
not match, that does not parse, or that was made under another recipe or setting is reported and
redone.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from uds_core import atomic
from uds_core.paths import safe_name
from uds_core.sealed import read_sealed, seal


class CampaignFiles:
    """Paths and reads of one campaign folder. Problems are said once per path on `log`."""

    def __init__(self, root: Path, log=lambda s: print(s, file=sys.stderr)):
        self.root = Path(root)
        self.log = log
        self._said: set[Path] = set()

    # --- paths ---------------------------------------------------------------------------
    @property
    def protocol(self) -> Path:
        return self.root / "protocol.json"

    @property
    def alternates(self) -> Path:
        return self.root / "alternates.json"

    def build(self, model: str) -> Path:
        return self.root / "builds" / f"{safe_name(model)}.json"

    def measurement(self, setting: str, model: str) -> Path:
        return self.root / "measurements" / setting / f"{safe_name(model)}.json"

    def anchors(self, fingerprint: str) -> Path:
        return self.root / "anchors" / f"{fingerprint[:16]}.json"

    def spread(self, fingerprint: str) -> Path:
        return self.root / "spread" / f"{fingerprint[:16]}.json"

    # --- reading ---------------------------------------------------------------------------
    def read(self, path: Path) -> dict | None:
        """A whole, sealed document, else None (a damaged one is said, once)."""
        doc, problem = read_sealed(path)
        if problem:
            self._say(path, problem)
        return doc

    def _say(self, path: Path, problem: str) -> None:
        if path not in self._said:
            self._said.add(path)
            self.log(f"campaign: {path}: {problem}; it is not used and will be redone")

    def valid_measurement(self, setting: str, model: str, recipe_digest: str, settings_digest: str,
                          keys: Sequence[str], fingerprint: str | None = None) -> dict | None:
        """The measurement file of (setting, model) if it is whole, of this recipe and settings,
        holds every key, and (when `fingerprint` is given) was measured on that model."""
        path = self.measurement(setting, model)
        doc = self.read(path)
        if doc is None:
            return None
        problem = measurement_problem(doc, recipe_digest, settings_digest, keys, fingerprint)
        if problem:
            self._say(path, problem)
            return None
        return doc

    def write(self, path: Path, doc: dict) -> Path:
        return atomic.write_json(path, seal(doc), indent=1, allow_nan=False, sort_keys=True)

    def measurements(self) -> list[dict]:
        """Every whole measurement file (no recipe check: the assembly compares with the protocol)."""
        out = []
        for path in sorted((self.root / "measurements").glob("*/*.json")):
            doc = self.read(path)
            if doc is not None:
                out.append(doc)
        return out

    def builds(self) -> dict[str, dict]:
        out = {}
        for path in sorted((self.root / "builds").glob("*.json")):
            doc = self.read(path)
            if doc is not None:
                out[doc["model"]] = doc
        return out


def measurement_problem(doc: dict, recipe_digest: str, settings_digest: str, keys: Sequence[str],
                        fingerprint: str | None = None) -> str | None:
    """Why a whole measurement document cannot stand for this job (None: it can)."""
    if doc.get("recipe_digest") != recipe_digest:
        return "measured for another recipe of this model"
    if doc.get("settings_digest") != settings_digest:
        return "measured under other metric or perturbation settings"
    if fingerprint is not None and doc.get("model_fingerprint") != fingerprint:
        return (f"measured on another build of this model (fingerprint {str(doc.get('model_fingerprint'))[:12]}, "
                f"the model here is {fingerprint[:12]})")
    missing = [k for k in keys if k not in doc.get("values", {})]
    if missing:
        return f"lacks {', '.join(missing)}"
    return None


def digest_of(obj: Any) -> str:
    """A short stable digest of any JSON-able value (settings, recipes)."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:20]


def settings_digest(campaign_version: int, measured_by: int | str, setting: str, setting_recipe: dict,
                    metric_settings: dict) -> str:
    """The `settings_digest` a measurement of `setting` carries: the campaign version, what measured
    it (version 1: the declared measurement version; 2: the measuring code's digest), the
    setting's recipe and the metric settings (all as the protocol records them, so the digest can
    be recomputed from protocol.json alone)."""
    return digest_of([campaign_version, measured_by, setting, setting_recipe, metric_settings])
