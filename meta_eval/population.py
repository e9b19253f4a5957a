"""Which models a meta-evaluation runs on: the unlearned models, the P/N pools and the references.

`--zoo tiny:<preset>` (optionally `tiny:<preset>-<seed>`) reads the tiny world's recipes, so
whatever the world builds (core models, unlearning grids, pools) is picked up by kind.
`--zoo ou:tofu` is Open-Unlearning's TOFU Llama-3.2-1B-Instruct population of spec §7 (150
unlearned, 60 pool models, full and retain90), from the hub or from a folder of local copies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from pathlib import Path

from checkpoints.splits import DEFAULT_SPLIT, default_retain, get_split, tiny_split
from checkpoints.specs import DEFAULT_SEED, CheckpointSpec, as_spec, parse_tiny_zoo, resolve_spec, tiny_spec
from uds_core.adapters import is_checkpoint_folder
from uds_core.manifest import MANIFEST
from uds_core.paths import safe_name
from metrics.session import system_prompt_for
from uds_core.errors import UdsInputError

UNLEARNED, POOL, FULL, RETAIN = "unlearned", "pool", "full", "retain"
SUPPRESSED = "suppressed"   # pool members that know the forget facts and were taught not to say them
OU_ZOO = "ou:tofu"


@dataclass(frozen=True)
class Member:
    name: str
    spec: str                 # checkpoint spec (docs/design.md) of the model
    kind: str                 # unlearned | pool | full | retain
    method: str | None        # unlearning method; "full" / "retain" for the references
    epoch: int | None
    pool: str | None = None   # "P" (knowledge present) or "N" (absent) for pool models


@dataclass(frozen=True)
class Zoo:
    tag: str                  # as given, e.g. "tiny:test"
    preset: str | None        # tiny-world preset; None for real checkpoints (data: the TOFU files)
    seed: int
    members: tuple[Member, ...]
    full: str                 # spec of the full anchor
    retain: str
    base: str | None          # scorer of the fluency proxy
    tofu_dir: str | None = None        # real checkpoints: folder of the TOFU files (None: default)
    system_prompt: str | None = None   # chat system turn of the output metrics (real: OU's)
    split: str | None = None           # real checkpoints: TOFU forget split (checkpoints/splits.py; None: forget10)

    @property
    def slug(self) -> str:
        """Folder-safe name of the zoo (with its split when that is not the default)."""
        named = self.split not in (None, DEFAULT_SPLIT)
        return safe_name(f"{self.tag}-{self.split}" if named else self.tag)

    def of_kind(self, kind: str) -> list[Member]:
        return [m for m in self.members if m.kind == kind]

    def member(self, kind: str) -> Member:
        return self.of_kind(kind)[0]


def parse_zoo_tag(text: str) -> tuple[str, int]:
    """`tiny:small` -> ("small", 0); `tiny:small-3` -> ("small", 3)."""
    parsed = parse_tiny_zoo(text)
    if parsed is None:
        raise UdsInputError(f"unknown zoo {text!r}: expected tiny:<preset> (e.g. tiny:small, tiny:test) or {OU_ZOO}")
    return parsed


def tiny_zoo(text: str) -> Zoo:
    """The zoo of a tiny-world preset, from its recipes (nothing is built here)."""
    from checkpoints.catalogue import recipes
    from checkpoints.world.presets import get_preset

    preset, seed = parse_zoo_tag(text)
    recs = recipes(get_preset(preset))
    spec = lambda name: tiny_spec(preset, seed, name)  # noqa: E731
    members = []
    for r in recs:
        if r.kind in (UNLEARNED, FULL, RETAIN):
            members.append(Member(r.name, spec(r.name), r.kind, r.method if r.kind == UNLEARNED else r.kind, r.epoch))
        elif r.kind == POOL:
            members.append(Member(r.name, spec(r.name), POOL, None, r.epoch, (r.hparams or {}).get("pool", r.method)))
    zoo = Zoo(text, preset, seed, tuple(members), spec("full"), spec("retain"), spec("base"),
              system_prompt=system_prompt_for(resolve_spec(spec("full"))))
    if not zoo.of_kind(FULL) or not zoo.of_kind(RETAIN):
        raise UdsInputError(f"zoo {text} has no full or retain model")
    return zoo


def ou_zoo(models_dir: str | None = None, tofu_dir: str | None = None, split: str | None = None) -> Zoo:
    """Open-Unlearning's TOFU population (registry of spec §7). A member is read from
    `models_dir/<alias>` where that folder holds a saved model, else from the hub. `split`: the
    TOFU forget split the zoo is measured on; its retain model is the retain anchor (forget05:
    retain95). The registry's unlearned and pool aliases stay as they are: for another split,
    put that split's models under `models_dir/<alias>`."""
    from checkpoints import ou_checkpoints

    local = Path(models_dir).expanduser() if models_dir else None
    if local is not None and not local.is_dir():
        raise UdsInputError(f"--models-dir {models_dir}: no such folder")

    def spec(alias: str) -> str:
        return str(local / alias) if local is not None and is_checkpoint_folder(local / alias) else alias

    retain = default_retain("full", get_split(split or DEFAULT_SPLIT))
    members = [Member("full", spec("full"), FULL, FULL, 10), Member("retain", spec(retain), RETAIN, RETAIN, 10)]
    members += [Member(c.alias, spec(c.alias), UNLEARNED, c.method, c.epoch) for c in ou_checkpoints.UNLEARNED]
    members += [Member(c.alias, spec(c.alias), POOL, None, c.epoch, c.method) for c in ou_checkpoints.POOLS]
    return Zoo(OU_ZOO, None, DEFAULT_SEED, tuple(members), spec("full"), spec(retain), None,
               tofu_dir, system_prompt_for(resolve_spec(spec("full"))), split)


def parse_zoo(text: str, models_dir: str | None = None, tofu_dir: str | None = None,
              split: str | None = None) -> Zoo:
    """`tiny:<preset>[-<seed>]` or `ou:tofu`, on `split` (a tiny world: its one forget set)."""
    if text.strip() == OU_ZOO:
        return ou_zoo(models_dir, tofu_dir, split)
    if models_dir:
        raise UdsInputError("--models-dir applies to --zoo ou:tofu only (tiny models live in the world folder)")
    tiny_split(split, text)
    return tiny_zoo(text)


def available_members(zoo: Zoo) -> tuple[Zoo, list[str]]:
    """The zoo cut to the models that exist now, and the names left out: built tiny models (by
    their current recipe), or real checkpoints with a local copy. Full and retain must exist."""
    if zoo.preset is not None:
        from checkpoints.catalogue import recipes
        from checkpoints.world.build import is_built
        from checkpoints.world.presets import get_preset

        preset = get_preset(zoo.preset)
        built = {r.name for r in recipes(preset) if is_built(preset, zoo.seed, r)}
        present = lambda m: m.name in built  # noqa: E731
    else:
        present = lambda m: is_checkpoint_folder(Path(m.spec))  # noqa: E731
    have = {m.name: present(m) for m in zoo.members}
    for kind in (FULL, RETAIN):
        if not have[zoo.member(kind).name]:
            raise UdsInputError(f"zoo {zoo.tag}: the {kind} model is not available "
                                f"({'build the world first' if zoo.preset else 'no local copy'})")
    kept = tuple(m for m in zoo.members if have[m.name])
    return replace(zoo, members=kept), [m.name for m in zoo.members if not have[m.name]]


def build_zoo(zoo: Zoo, progress: bool = True) -> Path | None:
    """Build whatever of the zoo's members is missing (resumable); returns the world folder. Only
    members: the world's other models (the audit's LMLMs) are not meta-evaluated, so not built here.
    Real checkpoints are not built: each loads from the hub or its local folder when measured."""
    from checkpoints.world.build import build_world

    if zoo.preset is None:
        return None
    return build_world(zoo.preset, zoo.seed, progress=progress, names=[m.name for m in zoo.members])


def model_identity(spec: "str | CheckpointSpec") -> str:
    """What a cached measurement of `spec` is tied to: the folder stamp of a tiny or local model,
    the hub ID of a hub model (a hub checkpoint is treated as immutable)."""
    resolved = as_spec(spec)
    if resolved.kind == "hub":
        return f"hub:{resolved.location}"
    folder = Path(resolved.location)
    if not is_checkpoint_folder(folder):
        raise UdsInputError(f"{spec} is not built (no model folder at {folder})")
    if resolved.kind == "adapter":   # a measurement of an adapter is one of adapter and base together
        return f"{folder_stamp(folder)}+{model_identity(resolved.base)}"
    return folder_stamp(folder)


def folder_stamp(folder: Path) -> str:
    """Identity of a saved model folder: names, sizes and modification times of its files (cheap;
    a rebuilt model gets a new stamp, so its cached measurements are recomputed). The digest
    manifest is left out: recording one in a folder built before manifests (`uds_core.manifest`)
    keeps the folder's stamp, and its cached measurements."""
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.name != MANIFEST:
            st = f.stat()
            h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:20]
