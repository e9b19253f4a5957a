"""LoRA worlds: models kept as PEFT adapters on one pretrained base, stacked, never merged.

A preset with `lora` settings (the `qwen` worlds) trains full and retain as LoRA adapters on the
pretrained base and every unlearned model as a LoRA adapter on full. Each model folder is a PEFT
adapter folder whose `base_model_name_or_path` is a model spec (the base's alias, or
`tiny:<world>/full`), so any folder is itself a `uds` model spec.

Loaded here, a model is the base with its chain of adapters (full's, then the unlearned one's)
injected by peft and active together, unmerged: every model of a run shares the base's weight
tensors (one copy in memory, mapped from a narrowed copy of the base, `checkpoints.narrow`), and
each adds only its low-rank matrices. The output is peft's: base(x) + sum of scale * B(A(x)) over
the chain, which equals the merged model up to the rounding of the order of the additions.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import torch
from transformers import AutoModelForCausalLM, PreTrainedModel

from uds_core.adapters import adapter_base, is_adapter_folder
from uds_core.errors import UdsInputError

TRAINED = "default"   # the adapter being trained: peft saves the "default" adapter at the folder's root


@dataclass(frozen=True)
class LoraSettings:
    """Rank, scaling (alpha / r), dropout and target linears of the adapter; `seed` fixes the
    random initialisation of the A matrices (B starts at zero, so training starts at the base)."""
    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)

    def peft_config(self):
        from peft import LoraConfig

        return LoraConfig(task_type="CAUSAL_LM", r=self.r, lora_alpha=self.alpha, lora_dropout=self.dropout,
                          target_modules=list(self.targets), bias="none")


def adapter_chain(folder: Path, resolve_folder) -> tuple[str, list[Path]]:
    """(the spec of the non-adapter base, the adapter folders from the base upwards) of an
    adapter folder whose base may itself be an adapter. `resolve_folder(spec)`: the folder a spec
    names, or None when it names no local adapter folder (then it is the base)."""
    chain = [folder]
    while True:
        base = adapter_base(chain[0])
        if not base:
            raise UdsInputError(f"adapter {chain[0]} names no base model (base_model_name_or_path is empty)")
        parent = resolve_folder(base)
        if parent is None or not is_adapter_folder(parent):
            return base, chain
        if parent in chain or len(chain) > 16:
            raise UdsInputError(f"adapter {folder}: its chain of base models loops ({parent})")
        chain.insert(0, parent)


def load_base(folder: Path, dtype: torch.dtype, **kwargs) -> PreTrainedModel:
    """The base model in `dtype`, frozen, in eval mode; its weights mapped from a copy already in
    `dtype` (`checkpoints.narrow`), so that they cost their own size once and nothing more.
    `kwargs`: further `from_pretrained` options (the attention implementation)."""
    from checkpoints.narrow import narrowed

    model = AutoModelForCausalLM.from_pretrained(narrowed(folder, dtype), dtype=dtype, **kwargs)
    for p in model.parameters():
        p.requires_grad_(False)
    return model.eval()


def sharing_copy(model: PreTrainedModel) -> PreTrainedModel:
    """A second module tree over the same parameter tensors (buffers copied): adapters injected
    into it leave `model` as it is, and the base's weights exist once."""
    return copy.deepcopy(model, memo={id(p): p for p in model.parameters()})


def stack(base: PreTrainedModel, chain: Sequence[Path]):
    """A PeftModel: `base` (modified in place: adapter layers injected) with the adapters of
    `chain` loaded as `a0`, `a1`, ... (base upwards), all active, all frozen."""
    from peft import PeftModel

    names = [f"a{i}" for i in range(len(chain))]
    try:
        peft_model = PeftModel.from_pretrained(base, str(chain[0]), adapter_name=names[0], is_trainable=False)
        for name, folder in zip(names[1:], chain[1:]):
            peft_model.load_adapter(str(folder), adapter_name=name, is_trainable=False)
    except (RuntimeError, ValueError, KeyError, OSError) as exc:   # size mismatch, missing target modules
        raise UdsInputError(f"adapter chain {', '.join(map(str, chain))} does not fit its base: "
                            f"{' '.join(str(exc).split())[:300]}") from exc
    peft_model.base_model.set_adapter(names, inference_mode=True)
    return peft_model


def stacked_model(base: PreTrainedModel, chain: Sequence[Path]) -> PreTrainedModel:
    """The model an adapter chain names, for evaluation: a plain transformers model (the
    decoder blocks where `uds_core.arch` looks for them) whose linears carry the chain's LoRA
    layers, over `base`'s own weight tensors (`base` itself stays unchanged)."""
    return stack(sharing_copy(base), chain).base_model.model.eval()


def with_trainable_adapter(model, lora: LoraSettings):
    """`model` (a plain model, or a PeftModel of a frozen chain) with a fresh adapter `TRAINED`
    on top, the only trainable parameters; its weights in float32 whatever the base's dtype."""
    from peft import PeftModel, get_peft_model

    torch.manual_seed(lora.seed)
    if isinstance(model, PeftModel):
        chain = list(model.peft_config)
        model.add_adapter(TRAINED, lora.peft_config())
        model.base_model.set_adapter(chain + [TRAINED])
        for name, p in model.named_parameters():
            p.requires_grad_(f".{TRAINED}." in name)
        peft_model = model
    else:
        peft_model = get_peft_model(model, lora.peft_config())
    for p in peft_model.parameters():
        if p.requires_grad:
            p.data = p.data.float()
    # activations recomputed in the backward pass (the same numbers): a step keeps one block's
    # activations instead of all of them, which at 1.5B parameters is gigabytes
    peft_model.base_model.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return peft_model


class WithoutTrainedAdapter(torch.nn.Module):
    """The model being trained as it was before training: its `TRAINED` adapter switched off for
    one forward (the frozen chain below it stays on), gradients off. The reference of NPO-like
    methods, without a second copy of the model (a fresh adapter adds exactly zero, so this is
    the starting model's output, bit for bit)."""

    def __init__(self, peft_model):
        super().__init__()
        self.peft_model = peft_model

    @torch.no_grad()
    def forward(self, **kwargs):
        pm = self.peft_model
        below = [a for a in pm.peft_config if a != TRAINED]
        flags = {p: p.requires_grad for p in pm.parameters()}
        try:
            if below:
                pm.base_model.set_adapter(below, inference_mode=True)
                return pm(**kwargs)
            with pm.disable_adapter():
                return pm(**kwargs)
        finally:
            if below:
                pm.base_model.set_adapter(below + [TRAINED])
            for p, flag in flags.items():
                p.requires_grad_(flag)


def save_trained_adapter(peft_model, folder: Path, base: str) -> Path:
    """Write the `TRAINED` adapter as a PEFT folder whose `base_model_name_or_path` is `base`
    (the spec of the model it goes on)."""
    peft_model.peft_config[TRAINED].base_model_name_or_path = base
    peft_model.save_pretrained(str(folder), selected_adapters=[TRAINED])
    return folder
