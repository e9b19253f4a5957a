"""Stable identities of models and tokenizers, for cache keys and reports.

A model fingerprint hashes its configuration (minus load-time fields such as its path or
dtype) and a deterministic sample of every state-dict tensor (name, shape and evenly spaced
values upcast to float64). Reloading the same weights, from any path or on any device, gives
the same fingerprint; any fine-tuning changes it.
"""

from __future__ import annotations

import hashlib
import json

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


@torch.no_grad()
def weights_digest(model: nn.Module, samples: int = SAMPLES_PER_TENSOR) -> str:
    """SHA-256 over (name, shape, up to `samples` evenly spaced values) of each state-dict tensor."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
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
    """Short stable identity of a model's computation: 20 hex chars."""
    return _sha((config_digest(model) + weights_digest(model)).encode())[:20]


def tokenizer_hash(tokenizer: PreTrainedTokenizerBase) -> str:
    """SHA-256 (20 hex chars) of the vocabulary: token -> id, added tokens included."""
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
    return _sha(json.dumps(vocab, ensure_ascii=False).encode())[:20]
