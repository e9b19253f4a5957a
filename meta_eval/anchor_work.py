"""The anchors' heaviest work kept on disk, so a new process does not compute it again.

A meta-evaluation process computes the full and retain models' Fisher diagonals and entity states
once and shares them across its jobs (`metrics.work.WorkCache`); a campaign restarted after a stop,
or each task of a fan-out, would compute them again. `AnchorWorkFiles` is the cache's store for
those keys: one safetensors file per key (the tensors, no pickle) and a JSON file beside it naming
the key and the file's xxh3-128 digest, checked before every load (a damaged or half-written file
is computed again and overwritten). The file name is a digest of the key and of the `context` the
values depend on beyond the key: anchor identities (folder stamps: a rebuilt model is a new
model), metric settings, the annotated records and the code and torch versions. Writing a key
removes its files of other contexts, so the folder holds one copy of each key (for a 1B-parameter
model, a Fisher diagonal is about 4 GB).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable

import torch
from safetensors.torch import load_file, save_file

from meta_eval.campaign.files import digest_of
from metrics.hidden import EntityStates
from metrics.work import WorkKey
from uds_core.atomic import atomic_file, read_json, write_json
from uds_core.digests import file_digest
from uds_core.errors import UdsInputError

FORMAT = 1   # bump when what a file holds changes


def _blocks(value: list[torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict]:
    return {f"block.{i}": t for i, t in enumerate(value)}, {"blocks": len(value)}


def _unblocks(tensors: dict[str, torch.Tensor], meta: dict) -> list[torch.Tensor]:
    return [tensors[f"block.{i}"] for i in range(meta["blocks"])]


def _states(value: EntityStates) -> tuple[dict[str, torch.Tensor], dict]:
    tensors = {f"layer.{i}": t for i, t in enumerate(value.layers)}
    tensors.update(targets=value.targets, item_of_row=value.item_of_row)
    return tensors, {"layers": len(value.layers), "n_items": value.n_items}


def _unstates(tensors: dict[str, torch.Tensor], meta: dict) -> EntityStates:
    return EntityStates([tensors[f"layer.{i}"] for i in range(meta["layers"])], tensors["targets"],
                        tensors["item_of_row"], meta["n_items"])


# kind -> (to tensors and metadata, back); only these kinds are kept
CODECS: dict[str, tuple[Callable, Callable]] = {"fisher": (_blocks, _unblocks), "states": (_states, _unstates)}


class AnchorWorkFiles:
    """A `metrics.work.WorkStore` for the Fisher diagonals and entity states of the `anchors`
    (checkpoint specs), under `root`, valid for what `context()` returns (JSON-able)."""

    def __init__(self, root: Path, anchors: Iterable[str], context: Callable[[], object]):
        self.root, self.anchors, self._context, self._digest = Path(root), frozenset(anchors), context, None

    @property
    def context(self) -> str:
        """Digest of `context()`, asked once, when the first anchor key is (the anchors are built then)."""
        if self._digest is None:
            self._digest = digest_of(self._context())
        return self._digest

    def _paths(self, key: WorkKey) -> tuple[Path, Path] | None:
        if key.kind not in CODECS or not key.specs or not set(key.specs) <= self.anchors:
            return None
        name = f"{self._stem(key)}-{digest_of([FORMAT, self.context])}"
        return self.root / f"{name}.safetensors", self.root / f"{name}.json"

    @staticmethod
    def _stem(key: WorkKey) -> str:
        return f"{key.kind}-{digest_of([key.kind, list(key.specs), list(key.detail)])}"

    def load(self, key: WorkKey) -> tuple[bool, object]:
        paths = self._paths(key)
        if paths is None or not paths[0].is_file():
            return False, None
        data, about = paths
        try:
            meta = read_json(about, "anchor work record")
        except UdsInputError:
            meta = None
        if not isinstance(meta, dict) or meta.get("xxh3_128") != file_digest(data, "xxh3_128"):
            return False, None   # damaged, half-written or unrecorded: computed again, then overwritten
        return True, CODECS[key.kind][1](load_file(data), meta["meta"])

    def save(self, key: WorkKey, value: object) -> None:
        paths = self._paths(key)
        if paths is None:
            return
        data, about = paths
        tensors, meta = CODECS[key.kind][0](value)
        data.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(data) as tmp:
            save_file({k: t.contiguous() for k, t in tensors.items()}, str(tmp))
        write_json(about, {"key": {"kind": key.kind, "specs": list(key.specs), "detail": list(key.detail)},
                           "context": self.context, "meta": meta, "xxh3_128": file_digest(data, "xxh3_128")})
        # the same key under an older context (a rebuilt anchor, other settings) is not read again
        for old in self.root.glob(f"{self._stem(key)}-*"):
            if old not in paths:
                old.unlink(missing_ok=True)
