"""PEFT adapter folders as checkpoints: detect one, read its base, load it merged into its base.

An adapter folder is what `PeftModel.save_pretrained` writes: `adapter_config.json` (its
`base_model_name_or_path` names the base model) and `adapter_model.safetensors`. It is loaded
with peft onto an already loaded base model and merged (`merge_and_unload`), for two reasons:
the result is a plain transformers model, so every hook path of `uds_core.arch` (the block outputs
UDS patches, the fast path's per-block recomputation, the metrics' hooks) sees the modules it
knows, not peft's LoRA wrappers; and its numbers are by construction those of the merged model
saved as a full folder (tests/test_adapters.py checks this to 1e-6). Which spec names the base
(the config's, or `--base`) is `checkpoints.specs`' job.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from transformers import PreTrainedModel

from uds_core.errors import UdsInputError
from uds_core.fingerprint import ADAPTER_ATTR, mark_adapter, model_fingerprint, state_digest

ADAPTER_CONFIG = "adapter_config.json"
SAFE_WEIGHTS = "adapter_model.safetensors"
PICKLE_WEIGHTS = "adapter_model.bin"


def is_adapter_folder(folder: Path) -> bool:
    """Whether `folder` holds a PEFT adapter (rather than a full `save_pretrained` model)."""
    return (folder / ADAPTER_CONFIG).is_file()


def adapter_config(folder: Path) -> dict:
    """The parsed `adapter_config.json`; UdsInputError when it is not a JSON object."""
    try:
        config = json.loads((folder / ADAPTER_CONFIG).read_text())
    except (OSError, ValueError) as exc:
        raise UdsInputError(f"adapter {folder}: unreadable {ADAPTER_CONFIG} ({exc})") from exc
    if not isinstance(config, dict):
        raise UdsInputError(f"adapter {folder}: {ADAPTER_CONFIG} is not a JSON object")
    return config


def adapter_base(folder: Path) -> str | None:
    """The base model the adapter was saved for (`base_model_name_or_path`), None when unset."""
    base = adapter_config(folder).get("base_model_name_or_path")
    return str(base) if base else None


def check_adapter_folder(folder: Path, trust_pickle: bool = False) -> None:
    """UdsInputError unless the adapter's weights are there (safetensors, or a pickle if trusted)."""
    if (folder / SAFE_WEIGHTS).is_file() or (trust_pickle and (folder / PICKLE_WEIGHTS).is_file()):
        return
    extra = f" (its {PICKLE_WEIGHTS} loads only with --trust-pickle)" if (folder / PICKLE_WEIGHTS).is_file() else ""
    raise UdsInputError(f"adapter {folder} holds no {SAFE_WEIGHTS}{extra}")


# Adapter config fields that say where the adapter was saved or looked for its base, not what it adds.
_VOLATILE_KEYS = {"base_model_name_or_path", "revision", "inference_mode", "peft_version"}


def adapter_digest(folder: Path) -> str:
    """SHA-256 of an adapter folder's config (minus where its base was) and its weights."""
    clean = {k: v for k, v in adapter_config(folder).items() if k not in _VOLATILE_KEYS}
    path = next((folder / f for f in (SAFE_WEIGHTS, PICKLE_WEIGHTS) if (folder / f).is_file()), None)
    if path is None:
        state = {}
    elif path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    text = json.dumps(clean, sort_keys=True, default=str) + state_digest(state)
    return hashlib.sha256(text.encode()).hexdigest()


def merge_adapter(base: PreTrainedModel, folder: Path, base_label: str) -> PreTrainedModel:
    """`base` (modified in place) with the adapter of `folder` merged into its weights, in eval
    mode, fingerprinted as base + adapter (`uds_core.fingerprint.mark_adapter`).

    base_label: how the base was named (for the error when the adapter does not fit it)."""
    from peft import PeftModel

    base_fp = model_fingerprint(base)
    try:
        peft_model = PeftModel.from_pretrained(base, str(folder), is_trainable=False)
    except (RuntimeError, ValueError, KeyError, OSError) as exc:  # size mismatch, missing target modules
        detail = " ".join(str(exc).split())[:300]
        raise UdsInputError(f"adapter {folder} does not fit its base model {base_label}: {detail}") from exc
    merged = peft_model.merge_and_unload()
    mark_adapter(merged, base_fp, adapter_digest(folder))
    return merged.eval()


@torch.no_grad()
def cast_parameters(model: PreTrainedModel, dtype: torch.dtype) -> PreTrainedModel:
    """`model` with its floating-point parameters in `dtype` and its buffers as they are, as
    `from_pretrained(dtype=...)` leaves them (`model.to(dtype)` would also round buffers that
    transformers keeps in float32, such as the rotary inverse frequencies)."""
    for param in model.parameters():
        if param.is_floating_point() and param.dtype != dtype:
            param.data = param.data.to(dtype)
    return model


def copy_origin(source: PreTrainedModel, target: PreTrainedModel) -> None:
    """Carry the base + adapter record of `source` over to `target` (a reload of its weights)."""
    if hasattr(source, ADAPTER_ATTR):
        setattr(target, ADAPTER_ATTR, getattr(source, ADAPTER_ATTR))


def is_checkpoint_folder(folder: Path) -> bool:
    """Whether `folder` holds a model a spec can name: a `save_pretrained` folder or an adapter."""
    return (folder / "config.json").is_file() or is_adapter_folder(folder)
