"""Model plumbing of the representation metrics (spec §4.5) on the UDS inputs (spec §2.1-2.3).

- `capture_entity_states`: each decoder block's output (pre-final-norm residual stream) at the
  entity eval positions, one forward per batch, for CKA and Logit Lens;
- `lens_logprobs`: those states decoded through a (full) model's final norm and LM head;
- `fisher_diagonal`: empirical diagonal Fisher of every decoder block's parameters.
"""

from __future__ import annotations

import re

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch

from uds_core.progress import progress as track
from uds_core.batching import batches, right_padded
from uds_core.arch import LOGITS_KWARGS, decoder_layers, final_norm, keyword_of, transformers_major
from uds_core.hooks import at_positions, capture_outputs
from uds_core.prompts import PreparedItem
from uds_core.logprobs import token_logprobs
from metrics.forward import PassOptions


@dataclass(frozen=True)
class EntityStates:
    """Block outputs at the entity positions of all items, rows in item order."""
    layers: list[torch.Tensor]   # one (N_rows, D) float32 CPU tensor per decoder block
    targets: torch.Tensor        # (N_rows,) entity token predicted from each row
    item_of_row: torch.Tensor    # (N_rows,) index of the item each row belongs to
    n_items: int


def _rows_positions(items: Sequence[PreparedItem]) -> tuple[torch.Tensor, torch.Tensor]:
    rows = [r for r, it in enumerate(items) for _ in it.eval_positions]
    pos = [p for it in items for p in it.eval_positions]
    return torch.tensor(rows, dtype=torch.long), torch.tensor(pos, dtype=torch.long)


def _batch_inputs(items: Sequence[PreparedItem], pad_id: int, device) -> dict[str, torch.Tensor]:
    ids, mask = right_padded([it.input_ids for it in items], pad_id)
    return {"input_ids": ids.to(device), "attention_mask": mask.to(device)}


@torch.no_grad()
def capture_entity_states(model: torch.nn.Module, items: Sequence[PreparedItem], *, batch_size: int,
                          pad_id: int, device="cpu", desc: str = "states", progress: bool = True) -> EntityStates:
    """One forward per batch; hooks on every decoder block keep the rows at the eval positions."""
    blocks = {str(i): b for i, b in enumerate(decoder_layers(model))}
    per_layer: list[list[torch.Tensor]] = [[] for _ in blocks]
    keep_kw = keyword_of(type(model).forward, LOGITS_KWARGS)
    head = {keep_kw: 1} if keep_kw else {}   # the states come from the blocks: one position's logits will do
    for idx in track(batches(len(items), batch_size), desc=desc, unit="batch", enabled=progress):
        chunk = [items[i] for i in idx]
        rows, pos = _rows_positions(chunk)
        with capture_outputs(blocks, at_positions(rows, pos)) as store:
            model(**_batch_inputs(chunk, pad_id, device), use_cache=False, **head)
        for l in range(len(blocks)):
            per_layer[l].append(store[str(l)].float().cpu())
    targets = torch.tensor([t for it in items for t in it.target_ids], dtype=torch.long)
    item_of_row = torch.tensor([i for i, it in enumerate(items) for _ in it.target_ids], dtype=torch.long)
    return EntityStates([torch.cat(p) for p in per_layer], targets, item_of_row, len(items))


@torch.no_grad()
def lens_logprobs(states: EntityStates, decoder: torch.nn.Module, chunk: int = 256,
                  model_dtype: bool = False) -> np.ndarray:
    """k[l, i] = mean over item i's entity tokens of log p(token) when block l's state is decoded
    through `decoder`'s final norm and LM head. (L, N) nats.

    Default: log-softmax over the vocabulary in fp32, the per-item mean in fp64. `model_dtype`
    (parity `reference`): as the reference computes it, one item at a time, log-softmax and the
    per-item mean in the decoder's dtype (bf16 for a bf16 model), the mean then read as a float.
    """
    norm, head = final_norm(decoder), decoder.get_output_embeddings()
    param = next(head.parameters())
    if model_dtype:
        return _lens_logprobs_model_dtype(states, norm, head, param)
    counts = torch.bincount(states.item_of_row, minlength=states.n_items).double()
    out = np.zeros((len(states.layers), states.n_items))
    for l, h in enumerate(states.layers):
        sums = torch.zeros(states.n_items, dtype=torch.float64)
        for s in range(0, h.shape[0], chunk):
            x = h[s:s + chunk].to(device=param.device, dtype=param.dtype)
            logits = head(norm(x)).float()
            tok_lp = token_logprobs(logits, states.targets[s:s + chunk].to(logits.device))
            sums.index_add_(0, states.item_of_row[s:s + chunk], tok_lp.double().cpu())
        out[l] = (sums / counts).numpy()
    return out


def _lens_logprobs_model_dtype(states: EntityStates, norm, head, param) -> np.ndarray:
    """The reference's loop: per layer and item, norm + head on the item's rows, log-softmax,
    gather, mean, all in the parameter dtype (rows of one item are contiguous)."""
    counts = torch.bincount(states.item_of_row, minlength=states.n_items).tolist()
    bounds = np.cumsum([0] + counts)
    out = np.zeros((len(states.layers), states.n_items))
    for l, h in enumerate(states.layers):
        for i in range(states.n_items):
            a, b = int(bounds[i]), int(bounds[i + 1])
            if a == b:
                out[l, i] = np.nan
                continue
            x = h[a:b].to(device=param.device, dtype=param.dtype)
            logits = head(norm(x[None]))
            tok_lp = token_logprobs(logits, states.targets[None, a:b].to(logits.device))
            out[l, i] = tok_lp.mean().item()
    return out


def _entity_losses(logits: torch.Tensor, items: Sequence[PreparedItem],
                   model_dtype: bool = False) -> list[torch.Tensor]:
    """Per item -mean_t log p(y_t) over its entity tokens: fp32 log-softmax, or (`model_dtype`,
    the reference's) log-softmax and mean in the logits' dtype."""
    losses = []
    for r, it in enumerate(items):
        pos = torch.tensor(list(it.eval_positions), device=logits.device)
        tgt = torch.tensor(it.target_ids, device=logits.device)
        rows = logits[r, pos] if model_dtype else logits[r, pos].float()
        losses.append(-token_logprobs(rows, tgt).mean())
    return losses


def fisher_diagonal(model: torch.nn.Module, items: Sequence[PreparedItem], opts: PassOptions, *,
                    model_dtype: bool = False, fast: bool = True) -> list[torch.Tensor]:
    """Mean over items of the squared per-item gradient of every decoder block's parameters.

    Items share a forward of `opts.batch_size` (length masks only: `opts.mask_id` is not read);
    each item gets its own backward (a per-item g², not the square of a summed gradient). Returns
    one flattened CPU tensor per block, parameters in registration order, accumulated in the
    parameter dtype as the reference does. `model_dtype`:
    the per-item loss too is computed in the model dtype (the reference's), not in fp32. `fast`:
    the LM head runs (forward and backward) at the entity positions only, where the loss reads it.
    """
    keep_kw = keyword_of(type(model).forward, LOGITS_KWARGS) if fast and transformers_major() >= 5 else None
    with block_gradients(model) as params:
        acc = [[torch.zeros_like(p) for p in ps] for ps in params]
        bar = track(batches(len(items), opts.batch_size), desc=opts.desc, unit="batch", enabled=opts.progress)
        for idx in bar:
            chunk = [items[i] for i in idx]
            losses = _chunk_losses(model, chunk, opts.pad_id, opts.device, model_dtype, keep_kw)
            for k, loss in enumerate(losses):
                grads = torch.autograd.grad(loss, [p for ps in params for p in ps],
                                            retain_graph=k < len(losses) - 1)
                for a, g in zip((a for accs in acc for a in accs), grads):
                    a.add_(g.square())
    return per_block_mean(acc, len(items))


ADAPTER_PARAMETER = re.compile(r"(^|\.)lora_")   # peft's low-rank matrices (lora_A, lora_B, lora_embedding_*, ...)


def checkpoint_parameters(block: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The block's parameters as its checkpoint holds them, in registration order: the low-rank
    matrices of an unmerged LoRA adapter are left out. The gradient of the loss with respect to a
    base weight W under an unmerged adapter is its gradient with respect to the merged weight
    W + s·BA (the layer's output depends on both only through their sum), so the Fisher over
    these is the merged model's."""
    return [p for name, p in block.named_parameters() if not ADAPTER_PARAMETER.search(name)]


@contextmanager
def block_gradients(model: torch.nn.Module) -> Iterator[list[list[torch.nn.Parameter]]]:
    """Gradients on, for the decoder blocks' parameters only (where Fisher reads them); yields
    those parameters per block in registration order and restores every parameter's
    `requires_grad` flag on exit."""
    params = [checkpoint_parameters(b) for b in decoder_layers(model)]
    saved = {p: p.requires_grad for p in model.parameters()}
    for p in model.parameters():
        p.requires_grad_(False)
    for p in (p for ps in params for p in ps):
        p.requires_grad_(True)
    try:
        with torch.enable_grad():
            yield params
    finally:
        for p, flag in saved.items():
            p.requires_grad_(flag)


def per_block_mean(acc: Sequence[Sequence[torch.Tensor]], n_items: int) -> list[torch.Tensor]:
    """Per block, its accumulated squared gradients flattened in registration order and divided
    by the number of items: one CPU tensor per block."""
    return [torch.cat([a.flatten() for a in accs]).div_(n_items).cpu() for accs in acc]


def _chunk_losses(model: torch.nn.Module, chunk: Sequence[PreparedItem], pad_id: int, device, model_dtype: bool,
                  keep_kw: str | None) -> list[torch.Tensor]:
    """Each item's entity loss from one padded forward of the chunk; with `keep_kw` (the forward's
    logits selector) the logits of the entity positions only."""
    inputs = _batch_inputs(chunk, pad_id, device)
    if keep_kw is None:
        return _entity_losses(model(**inputs, use_cache=False).logits, chunk, model_dtype)
    keep = torch.zeros(inputs["input_ids"].shape, dtype=torch.bool)
    for r, it in enumerate(chunk):
        keep[r, list(it.eval_positions)] = True
    rows = model(**inputs, use_cache=False, **{keep_kw: keep.to(device)}).logits   # (n_entity, V), row-major
    losses, start = [], 0
    for it in chunk:
        n = len(it.eval_positions)
        tgt = torch.tensor(it.target_ids, device=rows.device)
        part = rows[start:start + n]
        losses.append(-token_logprobs(part if model_dtype else part.float(), tgt).mean())
        start += n
    return losses
