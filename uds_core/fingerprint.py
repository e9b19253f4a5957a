"""Stable identities of models and tokenizers, for cache keys and reports.

A model fingerprint hashes its configuration (minus load-time fields such as its path or
dtype) and a deterministic sample of every state-dict tensor (name, shape and evenly spaced
values upcast to float64). Reloading the same weights, from any path or on any device, gives
the same fingerprint; any fine-tuning changes it.

A model loaded from a PEFT adapter (uds_core/adapters.py) is fingerprinted as base + adapter: its
base model's fingerprint and the adapter's digest (its config and weights) are hashed together
with the merged model's own config and weights, so another base or another adapter gives another
fingerprint, and so does any later change to the merged weights (relearning, say).
"""

from __future__ import annotations

import hashlib
import json
from typing import Mapping

import torch
import torch.nn as nn
from transformers import PreTrainedTokenizerBase

SAMPLES_PER_TENSOR = 4096
# Config fields that describe how a model was loaded or saved, not what it computes.
_VOLATILE_CONFIG_KEYS = {"_name_or_path", "transformers_version", "torch_dtype", "dtype", "_commit_hash",
                         "_attn_implementation", "_attn_implementation_autoset", "attn_implementation",
                         "use_cache", "output_hidden_states", "output_attentions", "return_dict"}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def config_digest(model: nn.Module) -> str:
    """SHA-256 of the model's config as canonical JSON, load-time fields removed."""
    cfg = getattr(model, "config", None)
    raw = cfg.to_dict() if cfg is not None else {"class": type(model).__name__}
    clean = {k: v for k, v in raw.items() if k not in _VOLATILE_CONFIG_KEYS}
    return _sha(json.dumps(clean, sort_keys=True, default=str).encode())


def weights_digest(model: nn.Module, samples: int = SAMPLES_PER_TENSOR) -> str:
    """SHA-256 over (name, shape, up to `samples` evenly spaced values) of each state-dict tensor."""
    return state_digest(model.state_dict(), samples)


@torch.no_grad()
def state_digest(state: Mapping[str, torch.Tensor], samples: int = SAMPLES_PER_TENSOR) -> str:
    """`weights_digest` of a plain name -> tensor mapping."""
    h = hashlib.sha256()
    for name, tensor in sorted(state.items()):
        flat = tensor.detach().reshape(-1)
        h.update(f"{name}:{tuple(tensor.shape)};".encode())
        if flat.numel() == 0:
            continue
        k = min(samples, flat.numel())
        idx = torch.linspace(0, flat.numel() - 1, k, dtype=torch.float64).round().long()
        values = flat[idx.to(flat.device)].to(torch.float64).cpu().numpy()
        h.update(values.tobytes())
    return h.hexdigest()


def model_fingerprint(model: nn.Module) -> str:
    """Short stable identity of a model's computation: 20 hex chars (base + adapter + merged
    weights for a model loaded from an adapter, see `mark_adapter`)."""
    own = config_digest(model) + weights_digest(model)
    origin = getattr(model, ADAPTER_ATTR, None)
    return _sha((f"adapter:{origin}:" if origin else "").encode() + own.encode())[:20]


ADAPTER_ATTR = "uds_adapter_origin"
def mark_adapter(model: nn.Module, base_fingerprint: str, adapter: str) -> None:
    """Record on `model` that it is `base_fingerprint`'s model with the adapter of digest `adapter`
    merged in; `model_fingerprint` hashes the record with the model's own weights."""
    setattr(model, ADAPTER_ATTR, f"{base_fingerprint}+{adapter}")


def tokenizer_hash(tokenizer: PreTrainedTokenizerBase) -> str:
    """SHA-256 (20 hex chars) of the vocabulary: token -> id, added tokens included."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
    return _sha(json.dumps(vocab, ensure_ascii=False).encode())[:20]
