"""The two robustness perturbations of spec §5.3: NF4 quantisation and relearning.

A model is measured in three settings: ORIG (the checkpoint as built), NF4 and RELEARN.

- NF4: the checkpoint is loaded through the shared loader with a bitsandbytes 4-bit NF4 config
  (block size 64, no double quantisation; embeddings, LM head and norms stay unquantised), then
  every 4-bit linear is replaced by a dense linear holding its dequantised weight. spec §4.5 asks
  for that for Fisher; doing it for every metric keeps one model per setting and, on CPU, is
  bit-identical to bitsandbytes' own float32-compute path (tests/test_meta_eval_perturb.py).
  Without the replacement, bitsandbytes would switch to a fused kernel that computes in bfloat16
  on CPUs with AVX512-BF16, which is not the float32 compute spec §12 prescribes.
- Relearning: one epoch of fine-tuning on the forget set with the shared training loop (spec §5.3's
  recipe: no warm-up, no weight decay, linear decay, seed 42), learning rate rescaled for tiny
  models like the unlearning grid (recorded in every output).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.world.encode import BOTH_FORMS, forms_words, qa_examples
from checkpoints.world.train import Loop, TrainConfig, collate, train
from uds_core import manifest
from uds_core.batching import pad_token_id
from uds_core.errors import UdsInputError

ORIG, NF4, RELEARN = "orig", "nf4", "relearn"   # the settings a model is measured in
NF4_BLOCK = 64  # bitsandbytes' default block size, the reference's


def nf4_dtypes(device: str) -> tuple[torch.dtype, torch.dtype]:
    """(compute dtype, dtype of the unquantised modules): float32 on CPU (spec §12); on CUDA the
    reference's bfloat16 compute with float16 elsewhere (spec §5.3)."""
    return (torch.float32, torch.float32) if device == "cpu" else (torch.bfloat16, torch.float16)


def nf4_config(device: str):
    """The BitsAndBytesConfig of spec §5.3 for `device`."""
    try:
        from transformers import BitsAndBytesConfig
        import bitsandbytes  # noqa: F401
    except ImportError as exc:
        raise UdsInputError(f"NF4 quantisation needs bitsandbytes and accelerate ({exc}); "
                            "install them with `pip install bitsandbytes accelerate`") from exc
    compute, _ = nf4_dtypes(device)
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=compute,
                              bnb_4bit_use_double_quant=False)


def nf4_description(device: str) -> dict:
    compute, other = nf4_dtypes(device)
    import bitsandbytes

    return {"quant_type": "nf4", "block_size": NF4_BLOCK, "double_quant": False, "compute_dtype": str(compute),
            "unquantised_dtype": str(other), "bitsandbytes": bitsandbytes.__version__,
            "evaluated_as": "dense linears holding the dequantised NF4 weights"}


@torch.no_grad()
def dequantize_linears(model: torch.nn.Module) -> int:
    """Replace every bitsandbytes 4-bit linear by an nn.Linear with its dequantised weight, in the
    dtype of the model's first floating parameter (spec §4.5). Returns how many were replaced."""
    import bitsandbytes as bnb

    dtype = next(p.dtype for p in model.parameters() if p.is_floating_point())
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if not isinstance(child, bnb.nn.Linear4bit):
                continue
            weight = bnb.functional.dequantize_4bit(child.weight.data, child.weight.quant_state)
            dense = torch.nn.Linear(child.in_features, child.out_features, bias=child.bias is not None,
                                    device=weight.device, dtype=dtype)
            dense.weight.copy_(weight.to(dtype))
            if child.bias is not None:
                dense.bias.copy_(child.bias.to(dtype))
            setattr(parent, name, dense)
            replaced += 1
    return replaced


def load_nf4(spec: str, device: str = "cpu") -> PreTrainedModel:
    """The checkpoint quantised to NF4 by bitsandbytes, evaluated through dequantised dense linears."""
    from checkpoints.specs import load_model

    _, other = nf4_dtypes(device)
    model = load_model(spec, device=device, dtype=other, quantization_config=nf4_config(device),
                       device_map={"": device})
    if dequantize_linears(model) == 0:
        raise UdsInputError(f"NF4 loading of {spec} quantised no linear layer")
    return model.eval()


# --- relearning --------------------------------------------------------------------------------

RELEARN_LR = 2e-4      # spec §5.3's 2e-5 times 10, the same rescaling as the tiny unlearning grid
RELEARN_SEED = 42      # HF Trainer's default seed
RELEARN_BATCH = 8      # spec §5.3's 8 x 4 accumulation, scaled with the forget set (see relearn_config)


@dataclass(frozen=True)
class RelearnRecipe:
    train: TrainConfig
    data: str = "forget QA (chat + raw Question/Answer forms, as the tiny models were fine-tuned)"
    forms: tuple[str, ...] = BOTH_FORMS   # the encodings the zoo was fine-tuned in

    def to_dict(self) -> dict:
        return {"train": self.train.to_dict(), "data": self.data}


def relearn_config(batch_size: int, lr: float = RELEARN_LR, forms: tuple[str, ...] = BOTH_FORMS) -> RelearnRecipe:
    """spec §5.3: 1 epoch, no warm-up, no weight decay, linear decay, clip 1.0 (HF default), seed 42.
    `forms`: as the zoo was fine-tuned (the `smol` world: the chat template only)."""
    train = TrainConfig(lr=lr, epochs=1, batch_size=batch_size, warmup_ratio=0.0, weight_decay=0.0,
                        max_grad_norm=1.0, seed=RELEARN_SEED)
    if tuple(forms) == BOTH_FORMS:
        return RelearnRecipe(train)
    return RelearnRecipe(train, f"forget QA ({forms_words(tuple(forms))}, as the zoo was fine-tuned)", tuple(forms))


def zoo_relearn_config(preset: str | None, lr: float = RELEARN_LR) -> RelearnRecipe:
    """The relearning recipe of a zoo: a tiny world's unlearning batch and fine-tuning forms (spec §5.3:
    the batch its unlearning grid uses); any other zoo's `RELEARN_BATCH` and both forms."""
    from checkpoints.world.presets import PRESETS

    p = PRESETS.get(preset) if preset else None
    return relearn_config(p.unlearn_batch if p else RELEARN_BATCH, lr, p.forms if p else BOTH_FORMS)


def relearn(model: PreTrainedModel, tok: PreTrainedTokenizerBase, forget: Sequence[dict], recipe: RelearnRecipe,
            progress: bool = False, desc: str = "relearn") -> list[float]:
    """Fine-tune `model` in place on the forget QA for one epoch; returns the step losses."""
    pad = pad_token_id(tok)
    data = qa_examples(tok, list(forget), forms=recipe.forms)
    return train(model, data, recipe.train, lambda ex: collate(ex, pad), loop=Loop(desc=desc, progress=progress))


def ensure_relearned(spec: str, folder: Path, stamp: str, tok: PreTrainedTokenizerBase, forget: Sequence[dict],
                     recipe: RelearnRecipe, device: str = "cpu", progress: bool = False) -> Path:
    """Folder of the relearned copy of `spec`, trained and saved (atomically) unless a copy made
    from the same parent stamp and recipe is already there, whole (its files as its digest
    manifest records them, `uds_core.manifest`)."""
    from checkpoints.specs import load_model

    meta = {"parent": spec, "parent_stamp": stamp, "recipe": recipe.to_dict()}
    if _reusable(folder, meta):
        return folder
    model = load_model(spec, device=device, dtype=torch.float32)
    losses = relearn(model, tok, forget, recipe, progress, desc=f"relearn {folder.name}")
    tmp = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "losses.json").write_text(json.dumps(losses))
    (tmp / "relearn.json").write_text(json.dumps(meta, indent=1))
    manifest.record(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)
    return folder


def _reusable(folder: Path, meta: dict) -> bool:
    """A relearned copy made from `meta` (parent stamp and recipe) whose files are whole; a
    damaged one is said in one line (then relearned again)."""
    try:
        same = json.loads((folder / "relearn.json").read_text()) == meta
    except (OSError, ValueError):   # absent, or damaged so that it no longer parses
        same = False
    if not same and not manifest.has_manifest(folder):
        return False
    problem = manifest.verify(folder) if not same else manifest.verify_or_record(folder)
    if problem:
        print(f"relearned copy {folder.name}: {problem}; relearning again", file=sys.stderr, flush=True)
    return same and problem is None
