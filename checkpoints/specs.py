"""Checkpoint specs: one string names a model, in one of four forms (DESIGN.md), and its loading.

- `tiny:<preset>/<model>` or `tiny:<model>` (preset `small`): a tiny-world model, built on first use;
- a local folder saved with `save_pretrained`;
- a registry alias of an Open-Unlearning TOFU checkpoint (`full`, `retain`, `npo_lr5e5_b01_a2_ep10`);
- anything else: a Hugging Face hub ID.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints import ou_checkpoints
from uds.errors import UdsInputError
from uds.loading import check_folder, has_tokenizer, load_model_from, load_tokenizer_from

DEFAULT_PRESET = "small"
DEFAULT_SEED = 0
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class CheckpointSpec:
    raw: str          # the string as the user gave it
    kind: str         # "tiny" | "local" | "hub"
    location: str     # folder (tiny, local) or hub ID (hub)
    preset: str | None = None  # tiny only
    name: str | None = None    # tiny model name, or registry alias
    seed: int = DEFAULT_SEED   # tiny only: the world's seed


def _looks_like_path(spec: str) -> bool:
    return spec.startswith((".", "/", "~")) or os.sep in spec.rstrip(os.sep) and not HUB_ID.match(spec)


def parse_tiny(spec: str) -> tuple[str, int, str]:
    """`tiny:small/full` -> ("small", 0, "full"); `tiny:full` -> ("small", 0, "full");
    `tiny:small-3/full` -> ("small", 3, "full") (a world built with `--seed 3`)."""
    body = spec[len("tiny:"):]
    preset, _, name = body.rpartition("/")
    if not name:
        raise UdsInputError(f"bad tiny-world spec {spec!r}: expected tiny:<preset>/<model>, e.g. tiny:small/full")
    world = _world_tag(preset)
    return (*world, name) if world else ((preset or DEFAULT_PRESET), DEFAULT_SEED, name)


def _world_tag(tag: str) -> tuple[str, int] | None:
    """`small` -> ("small", 0), `small-3` -> ("small", 3); None when `tag` is not of that form."""
    m = re.fullmatch(r"(\w+?)(?:-(\d+))?", tag)
    return (m.group(1), int(m.group(2)) if m.group(2) else DEFAULT_SEED) if m else None


def tiny_tag(preset: str, seed: int = DEFAULT_SEED) -> str:
    """The world part of a tiny spec: `small`, or `small-3` for a world built with `--seed 3`."""
    return preset if seed == DEFAULT_SEED else f"{preset}-{seed}"


def tiny_spec(preset: str, seed: int, name: str) -> str:
    """`tiny:<preset>[-<seed>]/<name>`, the inverse of `parse_tiny`."""
    return f"tiny:{tiny_tag(preset, seed)}/{name}"


def parse_tiny_zoo(text: str) -> tuple[str, int] | None:
    """A whole tiny world, `tiny:<preset>[-<seed>]`: `tiny:small` -> ("small", 0), `tiny:small-3` ->
    ("small", 3); None when `text` is not of that form."""
    text = text.strip()
    return _world_tag(text[len("tiny:"):]) if text.startswith("tiny:") else None


def resolve_spec(spec: str) -> CheckpointSpec:
    """Resolve a spec string; tiny models are located (not built) under `$UDS_HOME`."""
    if not spec:
        raise UdsInputError("empty checkpoint spec")
    if spec.startswith("tiny:"):
        from uds.paths import world_dir

        preset, seed, name = parse_tiny(spec)
        return CheckpointSpec(spec, "tiny", str(world_dir(preset, seed) / "models" / name), preset, name, seed)
    path = Path(spec).expanduser()
    if path.is_dir():
        return CheckpointSpec(spec, "local", str(path.resolve()))
    hub = ou_checkpoints.hub_id_for_alias(spec)
    if hub is not None:
        return CheckpointSpec(spec, "hub", hub, name=spec)
    if _looks_like_path(spec) or path.exists():
        raise UdsInputError(f"no model folder at {spec!r} (expected a folder saved with save_pretrained)")
    if not HUB_ID.match(spec):
        raise UdsInputError(
            f"unknown checkpoint {spec!r}: not a folder, a registry alias (see `uds checkpoints list`), "
            "a tiny-world name (tiny:<preset>/<model>) or a hub ID (owner/name)")
    return CheckpointSpec(spec, "hub", spec)


def default_references(unlearned: str, tofu_dir: str | None = None) -> tuple[str, str, str]:
    """(full spec, retain spec, UDS data path) that go with an unlearned model (DESIGN.md defaults).

    A tiny-world model takes its own preset's full, retain and forget set; anything else the
    Open-Unlearning TOFU full and retain90 models and the annotated forget10 file (of `tofu_dir`
    when given, see `default_tofu_annotated`).
    """
    if unlearned.startswith("tiny:"):
        from checkpoints.world.store import ensure_world_data

        preset, seed, _ = parse_tiny(unlearned)
        data = ensure_world_data(preset, seed) / "uds_data.json"
        return tiny_spec(preset, seed, "full"), tiny_spec(preset, seed, "retain"), str(data)
    return "full", "retain", str(default_tofu_annotated(tofu_dir))


def default_tofu_annotated(tofu_dir: str | None = None) -> Path:
    """The annotated forget10 file in `tofu_dir`, else `$UDS_TOFU_DIR`, else ../shared/data/tofu."""
    folder = tofu_dir or os.environ.get("UDS_TOFU_DIR")
    if folder:
        return Path(folder) / "forget10_annotated.json"
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "tofu" / "forget10_annotated.json"


def model_source(spec: str | CheckpointSpec) -> str:
    """Folder or hub ID that transformers should load; builds a tiny model if needed."""
    s = as_spec(spec)
    if s.kind == "tiny":
        from checkpoints.world.build import ensure_model

        return str(ensure_model(s.preset, s.seed, s.name))
    if s.kind == "local":
        check_folder(Path(s.location))
    return s.location


def as_spec(spec: str | CheckpointSpec) -> CheckpointSpec:
    return spec if isinstance(spec, CheckpointSpec) else resolve_spec(spec)


def load_model(spec: str | CheckpointSpec, device: str = "cpu", dtype: torch.dtype = torch.float32,
               trust_pickle: bool = False, **kwargs) -> PreTrainedModel:
    """The causal LM a spec names, in eval mode on `device` with parameters in `dtype`."""
    s = as_spec(spec)
    return load_model_from(model_source(s), s.kind == "hub", device, dtype, trust_pickle, **kwargs)


def has_own_tokenizer(spec: str | CheckpointSpec) -> bool:
    """Whether the checkpoint carries its own tokenizer (a hub repository is assumed to)."""
    s = as_spec(spec)
    return s.kind == "hub" or has_tokenizer(Path(model_source(s)))


def load_tokenizer(spec: str | CheckpointSpec) -> PreTrainedTokenizerBase:
    """The tokenizer of the checkpoint a spec names (pad = eos when it has none)."""
    s = as_spec(spec)
    return load_tokenizer_from(model_source(s), s.kind == "hub")


def load_world_for_spec(spec: CheckpointSpec, tofu_dir: str | None = None):
    """The data a model is evaluated on: its own tiny world, or the real TOFU splits."""
    if spec.kind == "tiny":
        from checkpoints.world.store import load_world

        return load_world(spec.preset, spec.seed)
    from checkpoints.world.tofu import read_tofu

    return read_tofu(tofu_dir)
