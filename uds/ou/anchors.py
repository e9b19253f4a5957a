"""The full and retain anchors of the OU handlers: loaded once per process, on the evaluated
model's device and dtype and with its attention kernel (so S1 and S2 run under one setting)."""

from __future__ import annotations

import torch
import torch.nn as nn
from transformers import PreTrainedTokenizerBase

from checkpoints.specs import has_own_tokenizer, load_model, load_tokenizer, resolve_spec
from uds.arch import attention_implementation

Loaded = tuple[nn.Module, PreTrainedTokenizerBase]
_LOADED: dict[tuple, Loaded] = {}


def placement(model: nn.Module) -> tuple[str, torch.dtype]:
    """(device string, parameter dtype) of a loaded model, e.g. ("cpu", torch.float32)."""
    param = next(model.parameters())
    return str(param.device), param.dtype


def load_anchor(spec: str, like: nn.Module, tokenizer: PreTrainedTokenizerBase | None = None) -> Loaded:
    """(model, tokenizer) of the checkpoint `spec`, placed like the model `like`; a folder
    without tokenizer files gets `tokenizer` (the full model's). Cached per process."""
    resolve_spec(spec)   # a wrong path or name fails here with one line naming it
    device, dtype = placement(like)
    attn = attention_implementation(like)
    key = (spec, device, dtype, attn)
    if key not in _LOADED:
        extra = {"attn_implementation": attn} if attn else {}
        model = load_model(spec, device=device, dtype=dtype, **extra)
        own = tokenizer is None or has_own_tokenizer(spec)
        _LOADED[key] = (model, load_tokenizer(spec) if own else tokenizer)
    return _LOADED[key]


def loaded_count() -> int:
    """How many anchor models this process holds (tests check they load once)."""
    return len(_LOADED)
