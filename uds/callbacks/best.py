"""The best-checkpoint rule of a training curve: which evaluation to keep.

A rule is a key to optimise and, optionally, a floor another key must stay at or above:

    uds                              highest UDS (an erasure score: higher is better)
    min:prob                         lowest forget Prob (`max:` / `min:` override the key's orientation)
    uds, retain_q_prob>=0.9x         highest UDS among evaluations whose retain Prob is at least
                                     0.9 times its value at the first evaluation (step 0)
    uds, retain_q_prob>=0.5          ... at least 0.5 (an absolute floor)

Without `max:`/`min:`, erasure and utility keys (uds, cka, retain_q_prob, ...) are maximised and
knowledge keys (prob, truth_ratio, es, ...) minimised (metrics.spec orientation). Ties keep the
earlier step. Pure functions of the records: no model, no torch.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Mapping, Sequence

from uds_core.errors import UdsInputError

_FLOOR = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*>=\s*([0-9.eE+-]+)\s*(x?)\s*$")


@dataclass(frozen=True)
class BestRule:
    key: str = "uds"
    maximise: bool = True
    floor_key: str | None = None
    floor: float | None = None
    floor_relative: bool = False     # floor is a fraction of floor_key's value at the first evaluation

    @classmethod
    def parse(cls, text: str, orientation: Mapping[str, str]) -> "BestRule":
        """The rule `text` (module docstring); `orientation`: key -> knowledge | erasure | utility
        of every key the curve records. UdsInputError names what is wrong."""
        head, _, floor_text = (text or "").partition(",")
        direction, _, key = head.strip().rpartition(":")
        key = key.strip()
        if key not in orientation:
            raise UdsInputError(f"best-checkpoint rule {text!r}: {key!r} is not recorded (recorded: "
                                f"{', '.join(orientation)})")
        if direction not in ("", "max", "min"):
            raise UdsInputError(f"best-checkpoint rule {text!r}: direction {direction!r} (use max: or min:)")
        maximise = direction == "max" if direction else orientation[key] != "knowledge"
        if not floor_text.strip():
            return cls(key, maximise)
        m = _FLOOR.match(floor_text)
        if not m or m.group(1) not in orientation:
            raise UdsInputError(f"best-checkpoint rule {text!r}: the floor must read KEY>=VALUE or KEY>=FRACTIONx "
                                f"with KEY among {', '.join(orientation)}")
        try:
            value = float(m.group(2))
        except ValueError:
            raise UdsInputError(f"best-checkpoint rule {text!r}: {m.group(2)!r} is not a number") from None
        return cls(key, maximise, m.group(1), value, bool(m.group(3)))

    def text(self) -> str:
        head = f"{'max' if self.maximise else 'min'}:{self.key}"
        if self.floor_key is None:
            return head
        return f"{head}, {self.floor_key}>={self.floor:g}{'x' if self.floor_relative else ''}"

    def threshold(self, records: Sequence[dict]) -> float | None:
        """The floor's absolute value (a relative floor: times the first finished evaluation's)."""
        if self.floor_key is None:
            return None
        if not self.floor_relative:
            return self.floor
        first = next((r.get(self.floor_key) for r in records if "error" not in r), None)
        return None if first is None else self.floor * first

    def eligible(self, record: dict, threshold: float | None) -> bool:
        value = record.get(self.key)
        if "error" in record or not _finite(value):
            return False
        if self.floor_key is None:
            return True
        floor_value = record.get(self.floor_key)
        return threshold is not None and _finite(floor_value) and floor_value >= threshold

    def best_step(self, records: Sequence[dict]) -> int | None:
        """The step of the best eligible record (None: none is eligible)."""
        threshold = self.threshold(records)
        best = None
        for r in records:
            if not self.eligible(r, threshold):
                continue
            better = best is None or (r[self.key] > best[self.key] if self.maximise else r[self.key] < best[self.key])
            if better:
                best = r
        return None if best is None else int(best["step"])


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
