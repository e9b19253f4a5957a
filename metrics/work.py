"""Shared work of metric runs: expensive results kept by what they were computed from.

A `WorkKey` names one piece of work by its kind, the checkpoint specs it depends on and any other
detail (split, answer variant, prompt kind, fraction, settings). A `WorkCache` computes each key
once; several evaluation contexts may share one cache (the meta-evaluation keeps the anchors' work
across models) and drop everything one model contributed with `drop_model`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable


@dataclass(frozen=True)
class WorkKey:
    kind: str                        # e.g. "tf" (teacher-forced sweep), "gen", "states", "fisher", "s1"
    specs: tuple[str, ...] = ()      # checkpoint specs the work was computed from
    detail: tuple[Hashable, ...] = ()


class WorkCache:
    def __init__(self) -> None:
        self._entries: dict[WorkKey, object] = {}

    def memo(self, key: WorkKey, make: Callable[[], object]):
        """The value of `key`, computed by `make()` the first time it is asked for."""
        if key not in self._entries:
            self._entries[key] = make()
        return self._entries[key]

    def peek(self, key: WorkKey):
        """The value of `key` if it was computed, else None (nothing is computed)."""
        return self._entries.get(key)

    def drop_model(self, spec: str) -> int:
        """Forget every entry computed from the checkpoint `spec`; returns how many were dropped."""
        gone = [k for k in self._entries if spec in k.specs]
        for k in gone:
            del self._entries[k]
        return len(gone)

    def keys(self) -> list[WorkKey]:
        """The keys held now, in the order they were computed."""
        return list(self._entries)
