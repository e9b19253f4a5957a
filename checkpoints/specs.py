"""Checkpoint specs: one string names a model, in one of four forms (docs/design.md), and its loading.

- `tiny:<preset>/<model>` or `tiny:<model>` (preset `small`): a tiny-world model, built on first use;
- a local folder saved with `save_pretrained`, or a PEFT adapter folder (`adapter_config.json`),
  loaded on its base model (the adapter config's `base_model_name_or_path`, itself any spec, or
  the `base` argument, a command's `--base SPEC`) and merged (uds_core/adapters.py);
- a registry alias of an Open-Unlearning TOFU checkpoint (`full`, `retain`, `npo_lr5e5_b01_a2_ep10`);
- a `.gguf` file, or the alias of an installed one (`smollm2-135m-instruct`): converted once into a
  safetensors folder under `$UDS_HOME/gguf/` (checkpoints/gguf.py) and treated as that local folder;
- anything else: a Hugging Face hub ID.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints import gguf, ou_checkpoints
from checkpoints.world.names import DEFAULT_SEED, tiny_spec, tiny_tag  # noqa: F401 (re-exported)
from uds_core import adapters
from uds_core.errors import UdsInputError
from uds_core.paths import safe_name
from uds_core.loading import check_folder, has_tokenizer, load_config_from, load_model_from, load_tokenizer_from

DEFAULT_PRESET = "small"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class CheckpointSpec:
    raw: str          # the string as the user gave it
    kind: str         # "tiny" | "local" | "hub" | "adapter"
    location: str     # folder (tiny, local, adapter) or hub ID (hub)
    preset: str | None = None  # tiny only
    name: str | None = None    # tiny model name, or registry alias
    seed: int = DEFAULT_SEED   # tiny only: the world's seed
    base: "CheckpointSpec | None" = None  # adapter only: the resolved base model


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
    """`small` -> ("small", 0), `small-3` -> ("small", 3), `smol-ci` -> ("smol-ci", 0), `smol-ci-2` ->
    ("smol-ci", 2) (a trailing number is the seed); None when `tag` is not of that form."""
    m = re.fullmatch(r"(\w[\w-]*?)(?:-(\d+))?", tag)
    return (m.group(1), int(m.group(2)) if m.group(2) else DEFAULT_SEED) if m else None


def parse_tiny_zoo(text: str) -> tuple[str, int] | None:
    """A whole tiny world, `tiny:<preset>[-<seed>]`: `tiny:small` -> ("small", 0), `tiny:small-3` ->
    ("small", 3); None when `text` is not of that form."""
    text = text.strip()
    return _world_tag(text[len("tiny:"):]) if text.startswith("tiny:") else None


def resolve_spec(spec: str, base: str | None = None) -> CheckpointSpec:
    """Resolve a spec string; tiny models are located (not built) under `$UDS_HOME`. `base`
    overrides the base model of an adapter folder (ignored for other specs)."""
    if not spec:
        raise UdsInputError("empty checkpoint spec")
    if spec.startswith("tiny:"):
        from uds_core.paths import world_dir

        preset, seed, name = parse_tiny(spec)
        return CheckpointSpec(spec, "tiny", str(world_dir(preset, seed) / "models" / name), preset, name, seed)
    path = Path(spec).expanduser()
    if gguf.is_gguf_spec(spec) and not path.is_dir():
        return CheckpointSpec(spec, "local", str(gguf.ensure_converted(spec)))
    if path.is_dir() and adapters.is_adapter_folder(path):
        return _resolve_adapter(spec, path.resolve(), base)
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


def _resolve_adapter(spec: str, folder: Path, base: str | None) -> CheckpointSpec:
    """An adapter folder with its base resolved (`base`, else the adapter config's); a base that
    names no model is bad input naming the adapter and `--base`."""
    base = base or adapters.adapter_base(folder)
    if not base:
        raise UdsInputError(f"adapter {spec} names no base model (base_model_name_or_path is empty); "
                            "pass --base SPEC")
    try:
        resolved = resolve_spec(base)
    except UdsInputError as exc:
        raise _base_error(spec, exc) from exc
    return CheckpointSpec(spec, "adapter", str(folder), base=resolved)


def _base_error(adapter: str, exc: UdsInputError) -> UdsInputError:
    detail = " ".join(str(exc).split())
    return UdsInputError(f"base model of adapter {adapter}: {detail}; pass --base SPEC to use another")


def default_references(unlearned: "str | CheckpointSpec", tofu_dir: str | None = None,
                       base: str | None = None) -> tuple[str, str, str]:
    """(full spec, retain spec, UDS data path) that go with an unlearned model (docs/design.md defaults).

    `default_anchors`, and the data of `default_data` (which may fetch the annotated file from
    the Hub: ask `default_anchors` alone where the data is given).
    """
    spec = origin(as_spec(unlearned, base))
    return (*default_anchors(spec), default_data(spec, tofu_dir))


def default_anchors(unlearned: "str | CheckpointSpec", base: str | None = None) -> tuple[str, str]:
    """(full spec, retain spec) that go with an unlearned model: a tiny-world model's own preset's,
    anything else the Open-Unlearning TOFU full and retain90 models. An adapter goes with what
    its base goes with. A resolved spec is not resolved again."""
    spec = origin(as_spec(unlearned, base))
    if spec.kind == "tiny":
        return tiny_spec(spec.preset, spec.seed, "full"), tiny_spec(spec.preset, spec.seed, "retain")
    return "full", "retain"


def default_data(unlearned: "str | CheckpointSpec", tofu_dir: str | None = None, base: str | None = None) -> str:
    """The annotated forget file that goes with an unlearned model: a tiny-world model's own forget
    set, anything else the annotated forget10 file (`default_tofu_annotated`)."""
    spec = origin(as_spec(unlearned, base))
    if spec.kind == "tiny":
        from checkpoints.world.store import ensure_world_data

        return str(ensure_world_data(spec.preset, spec.seed) / "uds_data.json")
    return str(default_tofu_annotated(tofu_dir))


def default_tofu_annotated(tofu_dir: str | None = None) -> Path:
    """The annotated forget10 file: in `tofu_dir` or `$UDS_TOFU_DIR` when one is named, else the
    copy an installed wheel ships, else the Hub's (`jaeunglee/uds-annotated-tofu`, fetched once
    into `$UDS_HOME/hub` and checked); checkpoints/tofu_files.py."""
    from checkpoints.tofu_files import ANNOTATED, tofu_file

    return tofu_file(ANNOTATED, tofu_dir)


def file_name(spec: str) -> str:
    """Output-folder name of a spec: a folder's base name, else the spec made file-safe
    (`tiny:small/rmu_x` -> `tiny_small_rmu_x`); never empty."""
    path = Path(spec).expanduser()
    named = path.is_dir() or (path.is_file() and gguf.is_gguf_spec(spec))
    return safe_name(path.name if named else spec).strip("._-") or "run"


def model_source(spec: str | CheckpointSpec) -> str:
    """Folder or hub ID that transformers should load; builds a tiny model if needed (an
    adapter: its base model's)."""
    s = as_spec(spec)
    if s.kind == "adapter":
        return model_source(s.base)
    if s.kind == "tiny":
        from checkpoints.world.build import ensure_model

        return str(ensure_model(s.preset, s.seed, s.name))
    if s.kind == "local":
        check_folder(Path(s.location))
    return s.location


def as_spec(spec: str | CheckpointSpec, base: str | None = None) -> CheckpointSpec:
    return spec if isinstance(spec, CheckpointSpec) else resolve_spec(spec, base)


def load_model(spec: str | CheckpointSpec, *, device: str = "cpu", dtype: torch.dtype = torch.float32,
               trust_pickle: bool = False, base: str | None = None, **kwargs) -> PreTrainedModel:
    """The causal LM a spec names, in eval mode on `device` with parameters in `dtype`; an adapter
    is merged into its base (`base` overrides the adapter config's)."""
    s = built_spec(as_spec(spec, base))
    if s.kind == "adapter":
        return _load_adapter(s, device, dtype, trust_pickle, **kwargs)
    return load_model_from(model_source(s), s.kind == "hub", device, dtype, trust_pickle, **kwargs)


def built_spec(spec: CheckpointSpec) -> CheckpointSpec:
    """`spec` once its model exists: a tiny model is built, and one whose folder is a PEFT adapter
    (a LoRA world's model, `checkpoints.world.lora`) is that adapter on its base, so that it loads
    merged and has its base's config; other specs are returned as they are."""
    if spec.kind != "tiny":
        return spec
    folder = Path(model_source(spec))
    return _resolve_adapter(spec.raw, folder, None) if adapters.is_adapter_folder(folder) else spec


def is_lora_world(spec: CheckpointSpec) -> bool:
    """Whether `spec` names a model of a LoRA world (a tiny spec whose preset keeps its models as
    adapters on a pretrained base, `checkpoints.world.lora`)."""
    if spec.kind != "tiny":
        return False
    from checkpoints.world.presets import get_preset

    return get_preset(spec.preset).lora is not None


def load_stacked(spec: CheckpointSpec, bases: dict, *, device: str = "cpu", dtype: torch.dtype = torch.float32,
                 **kwargs) -> PreTrainedModel:
    """A LoRA world's model as its base with its adapter chain active and unmerged
    (`checkpoints.world.lora.stacked_model`), over the base weights of `bases` (a dict the caller
    keeps: (folder, dtype, device) -> base model, filled on first use), so that every model of a
    run that shares the base holds it once. `kwargs`: `from_pretrained` options of the base."""
    from checkpoints.world.build import ensure_model, lineage
    from checkpoints.world.lora import load_base, stacked_model
    from checkpoints.world.presets import get_preset

    preset = get_preset(spec.preset)
    folder = ensure_model(preset.name, spec.seed, "base")   # a pretrained base's own folder, or the world's
    key = (str(folder), dtype, device, tuple(sorted(kwargs.items())))
    if key not in bases:
        bases[key] = load_base(folder, dtype, **kwargs).to(device)
    if spec.name == "base":
        return bases[key]
    chain = [ensure_model(preset.name, spec.seed, name) for name in lineage(preset, spec.name)]
    return stacked_model(bases[key], chain)


def _load_adapter(s: CheckpointSpec, device: str, dtype: torch.dtype, trust_pickle: bool,
                  **kwargs) -> PreTrainedModel:
    """Base loaded as a spec in float32, adapter merged, then cast to `dtype`: the numbers of the
    merged model saved as a float32 folder and loaded in `dtype`, whatever `dtype` is. With a
    `quantization_config` (NF4) the merged model is saved to a temporary folder and quantised from
    there, as a merged checkpoint would be: bitsandbytes quantises at load time, and the quantised
    model is the merged one, not a quantised base with a float adapter on top."""
    folder = Path(s.location)
    adapters.check_adapter_folder(folder, trust_pickle)
    quantised = "quantization_config" in kwargs
    try:
        base = load_model(s.base, device="cpu" if quantised else device, dtype=torch.float32,
                          trust_pickle=trust_pickle, **({} if quantised else kwargs))
    except UdsInputError as exc:
        raise _base_error(s.raw, exc) from exc
    merged = adapters.merge_adapter(base, folder, s.base.raw)
    if not quantised:
        return adapters.cast_parameters(merged, dtype)
    with tempfile.TemporaryDirectory(prefix="uds-merged-") as tmp:
        merged.save_pretrained(tmp)
        model = load_model_from(tmp, False, device, dtype, trust_pickle, **kwargs)
    adapters.copy_origin(merged, model)
    return model


def load_config(spec: str | CheckpointSpec, *, base: str | None = None):
    """The transformers config of the model a spec names (an adapter: its base's), weights not loaded."""
    s = built_spec(as_spec(spec, base))
    if s.kind == "adapter":
        return load_config(s.base)
    return load_config_from(model_source(s), s.kind == "hub")


def has_own_tokenizer(spec: str | CheckpointSpec, *, base: str | None = None) -> bool:
    """Whether the checkpoint carries its own tokenizer (a hub repository is assumed to; an
    adapter folder without tokenizer files has its base's)."""
    s = as_spec(spec, base)
    if s.kind == "adapter":
        return has_tokenizer(Path(s.location)) or has_own_tokenizer(s.base)
    return s.kind == "hub" or has_tokenizer(Path(model_source(s)))


def load_tokenizer(spec: str | CheckpointSpec, *, base: str | None = None) -> PreTrainedTokenizerBase:
    """The tokenizer of the checkpoint a spec names (pad = eos when it has none); an adapter
    folder's own, else its base's."""
    s = as_spec(spec, base)
    if s.kind == "adapter" and has_tokenizer(Path(s.location)):
        return load_tokenizer_from(s.location, False)
    if s.kind == "adapter":
        try:
            return load_tokenizer(s.base)
        except UdsInputError as exc:
            raise _base_error(s.raw, exc) from exc
    return load_tokenizer_from(model_source(s), s.kind == "hub")


def origin(spec: CheckpointSpec) -> CheckpointSpec:
    """The spec whose world a model belongs to: an adapter's base (followed down), else itself."""
    return origin(spec.base) if spec.kind == "adapter" else spec


def tiny_base(spec: CheckpointSpec) -> str | None:
    """The base model of the tiny world a model belongs to (its fluency reference), None outside."""
    home = origin(spec)   # a LoRA adapter on a tiny model belongs to the tiny world
    if home.kind != "tiny":
        return None
    from checkpoints.world.presets import get_preset

    # a world of untrained models has no base: like a real model's, its fluency needs a classifier
    return None if get_preset(home.preset).random is not None else tiny_spec(home.preset, home.seed, "base")


def load_world_for_spec(spec: CheckpointSpec, tofu_dir: str | None = None):
    """The data a model is evaluated on: its own tiny world, or the real TOFU splits (an adapter:
    its base's)."""
    if spec.kind == "adapter":
        return load_world_for_spec(spec.base, tofu_dir)
    if spec.kind == "tiny":
        from checkpoints.world.store import load_world

        return load_world(spec.preset, spec.seed)
    from checkpoints.world.tofu import read_tofu

    return read_tofu(tofu_dir)
