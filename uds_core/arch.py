"""Where the decoder blocks live in each model family: a data-only table, no `hasattr` chains.

Keyed by `config.model_type`. Each entry names, as dotted paths from the *CausalLM object:
the ModuleList of decoder blocks, the final norm (for the reference's last-layer quirk), and,
relative to one block, its attention and MLP sub-modules (None when the family has no single
module for it). Families whose decoder layers take the standard call (hidden states, position
embeddings computed once per model, a 4D mask, a cache with `update`; transformers 5.x, and 4.45+
where `legacy_fast_problem` finds nothing missing) also name their rotary-embedding module: the
fast engine (uds_core/suffix.py) runs only those.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Literal

import torch.nn as nn
import transformers

from uds_core.errors import UdsInputError

COMPONENTS = ("block", "attn", "mlp")
Component = Literal["block", "attn", "mlp"]   # COMPONENTS as a type


@dataclass(frozen=True)
class ArchPaths:
    layers: str          # ModuleList of decoder blocks
    final_norm: str      # norm applied after the last block
    attn: str | None     # attention sub-module of one block
    mlp: str | None      # MLP sub-module of one block
    rotary: str | None = None  # rotary-embedding module; set only for families the fast engine runs

    @property
    def fast(self) -> bool:
        """Whether the fast engine handles this family (standard decoder-layer call, RoPE module)."""
        return self.rotary is not None


_LLAMA_LIKE = ArchPaths("model.layers", "model.norm", "self_attn", "mlp")
_LLAMA_FAST = ArchPaths("model.layers", "model.norm", "self_attn", "mlp", rotary="model.rotary_emb")

ARCHITECTURES: dict[str, ArchPaths] = {
    **{name: _LLAMA_FAST for name in ("llama", "qwen2", "qwen3", "mistral")},
    **{name: _LLAMA_LIKE for name in (
        "mixtral", "gemma", "gemma2", "gemma3_text", "phi3",
        "olmo", "olmo2", "stablelm", "cohere", "granite", "starcoder2", "qwen2_moe", "qwen3_moe")},
    "phi": ArchPaths("model.layers", "model.final_layernorm", "self_attn", "mlp"),
    "gpt2": ArchPaths("transformer.h", "transformer.ln_f", "attn", "mlp"),
    "gpt_neo": ArchPaths("transformer.h", "transformer.ln_f", "attn", "mlp"),
    "gptj": ArchPaths("transformer.h", "transformer.ln_f", "attn", "mlp"),
    "gpt_neox": ArchPaths("gpt_neox.layers", "gpt_neox.final_layer_norm", "attention", "mlp"),
    "falcon": ArchPaths("transformer.h", "transformer.ln_f", "self_attention", "mlp"),
    # Bloom's attention and MLP modules add the residual themselves; their output projections
    # hold the sub-layer outputs spec §2.8 patches ("after o_proj, before the residual add").
    # (With pretraining_tp > 1 and slow_but_exact, Bloom bypasses these modules: not supported.)
    "bloom": ArchPaths("transformer.h", "transformer.ln_f", "self_attention.dense", "mlp.dense_4h_to_h"),
    "opt": ArchPaths("model.decoder.layers", "model.decoder.final_layer_norm", "self_attn", None),
}


FAST_FAMILIES = tuple(name for name, paths in ARCHITECTURES.items() if paths.fast)

# Names transformers gives the same argument across the versions the toolkit supports (4.45-5.x):
# the cache of a model's / decoder layer's forward, and the "score only the last k positions" option.
CACHE_KWARGS = ("cache", "past_key_values", "past_key_value")
LOGITS_KWARGS = ("logits_to_keep", "num_logits_to_keep")


def transformers_major() -> int:
    return int(transformers.__version__.split(".")[0])


def keyword_of(fn, names: tuple[str, ...]) -> str | None:
    """The first of `names` that `fn` takes as a parameter (None: none of them)."""
    params = inspect.signature(fn).parameters
    return next((name for name in names if name in params), None)


def legacy_fast_problem(model: nn.Module) -> str | None:
    """What transformers 4.x lacks for the fast engine on `model` (None: nothing, or 5.x).

    4.x Llama-like layers take the same call as 5.x (hidden states, 4D mask, a cache with `update`,
    position embeddings computed once per model), but 4.x builds sliding-window masks per family
    and some families (Mistral) compute RoPE inside each attention module."""
    if transformers_major() >= 5:
        return None
    config = model.config
    if getattr(config, "sliding_window", None) is not None and getattr(config, "use_sliding_window", True):
        return f"transformers {transformers.__version__} (< 5) builds sliding-window masks its own way"
    try:
        rotary_embedding(model)
    except AttributeError:
        return (f"transformers {transformers.__version__} (< 5) has no model-level rotary embedding "
                f"for {model_family(model)!r}")
    return None


def model_family(model: nn.Module) -> str:
    """`config.model_type` of a transformers model ("?" when it has no config)."""
    config = getattr(model, "config", None)
    return str(getattr(config, "model_type", "?"))


def arch_paths(model: nn.Module) -> ArchPaths:
    """The table entry for `model`; UdsInputError naming the family and the known ones."""
    family = model_family(model)
    try:
        return ARCHITECTURES[family]
    except KeyError:
        known = ", ".join(sorted(ARCHITECTURES))
        raise UdsInputError(
            f"unsupported model family {family!r}: the UDS engine knows where the decoder layers are "
            f"only for {known} (add an entry to uds_core/arch.py)") from None


def decoder_layers(model: nn.Module) -> nn.ModuleList:
    """The decoder blocks of `model`, in order."""
    return model.get_submodule(arch_paths(model).layers)


def rotary_embedding(model: nn.Module) -> nn.Module:
    """The module computing (cos, sin) once per forward (fast-engine families only)."""
    return model.get_submodule(arch_paths(model).rotary)


def attention_implementation(model: nn.Module) -> str | None:
    """The attention kernel transformers dispatches to ("eager", "sdpa", "flash_attention_2", ...)."""
    return getattr(model.config, "_attn_implementation", None)


def num_layers(model: nn.Module) -> int:
    return len(decoder_layers(model))


def final_norm(model: nn.Module) -> nn.Module:
    """The norm applied to the last block's output before the LM head."""
    return model.get_submodule(arch_paths(model).final_norm)


def component_module(model: nn.Module, layer: int, component: str = "block") -> nn.Module:
    """Block `layer` itself, or its attention / MLP sub-module, whose output UDS patches."""
    if component not in COMPONENTS:
        raise UdsInputError(f"unknown component {component!r} (choose {', '.join(COMPONENTS)})")
    paths = arch_paths(model)
    layers = decoder_layers(model)
    if not 0 <= layer < len(layers):
        raise UdsInputError(f"layer {layer} out of range: the model has {len(layers)} decoder layers")
    block = layers[layer]
    if component == "block":
        return block
    sub = paths.attn if component == "attn" else paths.mlp
    if sub is None:
        raise UdsInputError(f"model family {model_family(model)!r} has no single {component} module to patch")
    if getattr(model.config, "slow_but_exact", False) and getattr(model.config, "pretraining_tp", 1) > 1:
        # Bloom then applies its output projections' weights directly: a hook on them never fires
        raise UdsInputError(f"--component {component} is not supported with slow_but_exact and pretraining_tp > 1")
    return block.get_submodule(sub)
