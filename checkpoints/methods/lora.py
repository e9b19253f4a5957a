"""LoRA unlearning: any method of `losses.METHODS` trained through peft LoRA adapters only.

`lora_unlearn` wraps a causal LM with a peft `LoraConfig` and runs the one unlearning loop
(`trainer.unlearn`) on the wrapped model: the method's loss and data are the full fine-tuning
ones, but only the low-rank matrices receive gradients (the reference of NPO-like methods is the
model with its adapter switched off, so it is the base model itself). `save_adapter` writes what
people publish: the adapter folder, whose `base_model_name_or_path` names the model it goes on.
Methods that hook a decoder block (RMU) need the plain module paths of `uds_core.arch` and are not
supported through the wrapper.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Mapping

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.methods.data import UnlearnSets
from checkpoints.methods.trainer import unlearn
from checkpoints.world.lora import LoraSettings
from checkpoints.world.train import Loop, TrainConfig
from uds_core.errors import UdsInputError

HOOKED_METHODS = ("rmu",)   # losses that read a block's output through uds_core.arch module paths


def lora_unlearn(model: PreTrainedModel, tok: PreTrainedTokenizerBase, sets: UnlearnSets, method: str,
                 cfg: TrainConfig, hparams: Mapping[str, float] | None = None,
                 lora: LoraSettings = LoraSettings(), loop: Loop | None = None):
    """(PeftModel around `model`, step losses): `method` unlearned into a fresh LoRA adapter.

    `model` is wrapped in place (its own weights stay frozen and unchanged); `sets`, `loop` as
    `trainer.unlearn` takes them."""
    from peft import get_peft_model

    if method in HOOKED_METHODS:
        raise UdsInputError(f"method {method!r} hooks a decoder block and is not supported with LoRA")
    torch.manual_seed(lora.seed)
    peft_model = get_peft_model(model, lora.peft_config())
    losses = unlearn(peft_model, tok, sets, method, cfg, hparams, loop)
    return peft_model.eval(), losses


def save_adapter(peft_model, folder: Path, base: str) -> Path:
    """Write the adapter folder (`adapter_config.json`, `adapter_model.safetensors`) with
    `base_model_name_or_path` = `base` (a spec: local folder, hub ID or `tiny:` name)."""
    for config in peft_model.peft_config.values():
        config.base_model_name_or_path = base
    peft_model.save_pretrained(str(folder))
    return folder


def merged_copy(peft_model) -> PreTrainedModel:
    """A plain model with the adapter merged into a copy of the base weights (the wrapper and
    its base stay as they are)."""
    return copy.deepcopy(peft_model).merge_and_unload().eval()
