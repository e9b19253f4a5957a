"""Which models a meta-evaluation runs on: the unlearned models, the P/N pools and the references.

`--zoo tiny:<preset>` (optionally `tiny:<preset>-<seed>`) reads the tiny world's recipes, so
whatever the world builds (core models, unlearning grids, pools) is picked up by kind.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from uds.errors import UdsInputError
from uds.specs import DEFAULT_SEED

UNLEARNED, POOL, FULL, RETAIN = "unlearned", "pool", "full", "retain"


@dataclass(frozen=True)
class Member:
    name: str
    spec: str                 # checkpoint spec (DESIGN.md) of the model
    kind: str                 # unlearned | pool | full | retain
    method: str | None        # unlearning method; "full" / "retain" for the references
    epoch: int | None
    pool: str | None = None   # "P" (knowledge present) or "N" (absent) for pool models


@dataclass(frozen=True)
class Zoo:
    tag: str                  # as given, e.g. "tiny:test"
    preset: str
    seed: int
    members: tuple[Member, ...]
    full: str                 # spec of the full anchor
    retain: str
    base: str | None          # scorer of the fluency proxy

    @property
    def slug(self) -> str:
        """Folder-safe name of the zoo."""
        return re.sub(r"[^\w.-]+", "_", self.tag)

    def of_kind(self, kind: str) -> list[Member]:
        return [m for m in self.members if m.kind == kind]

    def member(self, kind: str) -> Member:
        return self.of_kind(kind)[0]


def parse_zoo_tag(text: str) -> tuple[str, int]:
    """`tiny:small` -> ("small", 0); `tiny:small-3` -> ("small", 3)."""
    m = re.fullmatch(r"tiny:(\w+?)(?:-(\d+))?", text.strip())
    if not m:
        raise UdsInputError(f"unknown zoo {text!r}: expected tiny:<preset>, e.g. tiny:small or tiny:test")
    return m.group(1), int(m.group(2)) if m.group(2) else DEFAULT_SEED


def tiny_zoo(text: str) -> Zoo:
    """The zoo of a tiny-world preset, from its recipes (nothing is built here)."""
    from checkpoints.world.presets import get_preset
    from checkpoints.world.zoo import recipes

    preset, seed = parse_zoo_tag(text)
    recs = recipes(get_preset(preset))
    tag = preset if seed == DEFAULT_SEED else f"{preset}-{seed}"
    spec = lambda name: f"tiny:{tag}/{name}"  # noqa: E731
    members = []
    for r in recs:
        if r.kind in (UNLEARNED, FULL, RETAIN):
            members.append(Member(r.name, spec(r.name), r.kind, r.method if r.kind == UNLEARNED else r.kind, r.epoch))
        elif r.kind == POOL:
            members.append(Member(r.name, spec(r.name), POOL, None, r.epoch, (r.hparams or {}).get("pool", r.method)))
    zoo = Zoo(text, preset, seed, tuple(members), spec("full"), spec("retain"), spec("base"))
    if not zoo.of_kind(FULL) or not zoo.of_kind(RETAIN):
        raise UdsInputError(f"zoo {text} has no full or retain model")
    return zoo


def build_zoo(zoo: Zoo, progress: bool = True) -> Path:
    """Build whatever of the tiny world is missing (resumable); returns the world folder."""
    from checkpoints.world.build import build_world

    return build_world(zoo.preset, zoo.seed, progress=progress)


def folder_stamp(folder: Path) -> str:
    """Identity of a saved model folder: names, sizes and modification times of its files (cheap;
    a rebuilt model gets a new stamp, so its cached measurements are recomputed)."""
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        if f.is_file():
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:20]
