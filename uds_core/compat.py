"""Full, retain and unlearned models must be patchable into each other: same architecture
family, layer count, hidden size and tokenizer vocabulary. Checked before any compute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch.nn as nn
from transformers import PreTrainedTokenizerBase

from uds_core.arch import model_family, num_layers
from uds_core.errors import UdsInputError
from uds_core.fingerprint import tokenizer_hash


@dataclass(frozen=True)
class ModelShape:
    family: str
    layers: int
    hidden_size: int
    vocab: str  # tokenizer_hash of the model's own tokenizer


def model_shape(model: nn.Module, tokenizer: PreTrainedTokenizerBase) -> ModelShape:
    """What must agree across the three models; raises for an unknown family."""
    hidden = getattr(model.config, "hidden_size", None)
    return ModelShape(model_family(model), num_layers(model), int(hidden) if hidden else -1,
                      tokenizer_hash(tokenizer))


_WHAT = {"family": "architecture family", "layers": "number of decoder layers",
         "hidden_size": "hidden size", "vocab": "tokenizer vocabulary (hash)"}


def check_compatible(models: Mapping[str, tuple[nn.Module, PreTrainedTokenizerBase]]) -> None:
    """Raise UdsInputError naming the first mismatch and the models involved.

    `models`: label (e.g. "full (tiny:test/full)") -> (model, its tokenizer); the first entry is
    the reference the others are compared with.
    """
    _first_mismatch({label: model_shape(m, t) for label, (m, t) in models.items()})


def _first_mismatch(shapes: Mapping[str, ModelShape]) -> None:
    (ref_label, ref), *others = shapes.items()
    for label, shape in others:
        for attr, what in _WHAT.items():
            a, b = getattr(ref, attr), getattr(shape, attr)
            if a != b:
                raise UdsInputError(
                    f"models are not compatible: {what} differs: {ref_label} has {a}, {label} has {b}; "
                    "UDS patches hidden states between the models, so all three must share it")


def config_shape(config, tokenizer: PreTrainedTokenizerBase) -> ModelShape:
    """`model_shape` from a model's config, before its weights are loaded."""
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None) or -1
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or -1
    return ModelShape(str(getattr(config, "model_type", "?")), int(layers), int(hidden), tokenizer_hash(tokenizer))


def check_vocab(label: str, config, tokenizer: PreTrainedTokenizerBase) -> None:
    """UdsInputError when the tokenizer has ids beyond the model's embedding rows (not its tokenizer)."""
    rows = getattr(config, "vocab_size", None)
    if rows is not None and len(tokenizer) > int(rows):
        raise UdsInputError(f"{label}: its tokenizer has {len(tokenizer)} tokens but the model's embedding has "
                            f"{rows} rows; the tokenizer does not belong to this model")


def check_compatible_configs(models: Mapping[str, tuple[object, PreTrainedTokenizerBase]]) -> None:
    """`check_compatible` on (config, tokenizer) pairs, before any weights are loaded, plus each
    tokenizer against its model's embedding rows."""
    for label, (config, tok) in models.items():
        check_vocab(label, config, tok)
    _first_mismatch({label: config_shape(c, t) for label, (c, t) in models.items()})
