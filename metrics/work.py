"""Shared work of metric runs: expensive results kept by what they were computed from.

A `WorkKey` names one piece of work by its kind, the checkpoint specs it depends on and any other
detail (split, answer variant, prompt kind, fraction, settings). A `WorkCache` computes each key
once; several evaluation contexts may share one cache (the meta-evaluation keeps the anchors' work
across models) and drop everything one model contributed with `drop_model`. A `WorkStore` given
to the cache keeps the keys it chooses beyond the process (the meta-evaluation's anchor work on
disk, `meta_eval.anchor_work`): a key it holds is loaded instead of computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Protocol


@dataclass(frozen=True)
class WorkKey:
    kind: str                        # e.g. "tf" (teacher-forced sweep), "gen", "states", "fisher", "s1"
    specs: tuple[str, ...] = ()      # checkpoint specs the work was computed from
    detail: tuple[Hashable, ...] = ()


class WorkStore(Protocol):
    def load(self, key: WorkKey) -> tuple[bool, object]:
        """(True, value) when the store holds `key`, else (False, None)."""

    def save(self, key: WorkKey, value: object) -> None:
        """Keep `value` under `key` if the store keeps keys of its kind (else nothing)."""


class WorkCache:
    def __init__(self, store: WorkStore | None = None) -> None:
        self._entries: dict[WorkKey, object] = {}
        self._store = store

    def memo(self, key: WorkKey, make: Callable[[], object]):
        """The value of `key`: from the store, else computed by `make()` (and given to the store),
        the first time it is asked for."""
        if key not in self._entries:
            found, value = self._store.load(key) if self._store is not None else (False, None)
            if not found:
                value = make()
                if self._store is not None:
                    self._store.save(key, value)
            self._entries[key] = value
        return self._entries[key]

    def peek(self, key: WorkKey):
        """The value of `key` if it was computed, else None (nothing is computed)."""
        return self._entries.get(key)

    def discard(self, key: WorkKey) -> None:
        """Forget one entry (kept in the store, if it was given one); nothing when it is not held."""
        self._entries.pop(key, None)

    def drop_model(self, spec: str) -> int:
        """Forget every entry computed from the checkpoint `spec`; returns how many were dropped."""
        gone = [k for k in self._entries if spec in k.specs]
        for k in gone:
            del self._entries[k]
        return len(gone)

    def keys(self) -> list[WorkKey]:
        """The keys held now, in the order they were computed."""
        return list(self._entries)
