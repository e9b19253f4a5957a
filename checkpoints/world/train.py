"""One small, readable training loop for every tiny-world model.

Base pretraining, full/retain fine-tuning, unlearning and relearning all go through `train`:
AdamW, linear warm-up then linear decay, gradient clipping, and a data order that depends only
on the seed and the epoch. What differs between them is the data and the loss function. With a
`checkpoint` path the loop saves its whole state after every epoch and, started again, resumes
from the last saved epoch with the same result as an uninterrupted run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch
from transformers import PreTrainedModel, get_linear_schedule_with_warmup

from checkpoints.world.hooks import TrainHooks
from uds_core.batching import right_padded
from uds_core.progress import progress as track

IGNORE = -100
Batch = dict[str, torch.Tensor]


@dataclass(frozen=True)
class TrainConfig:
    lr: float
    epochs: int
    batch_size: int
    warmup_ratio: float = 0.1   # fraction of all optimiser steps spent warming up
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def collate(examples: Sequence[dict], pad_id: int) -> Batch:
    """Right-pad `input_ids` (with `pad_id`) and `labels` (with IGNORE) lists into tensors; the
    mask is built from lengths."""
    ids, mask = right_padded([e["input_ids"] for e in examples], pad_id)
    labels, _ = right_padded([e["labels"] for e in examples], IGNORE)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def to_device(batch, device: torch.device):
    """A collated batch (tensors, or dicts / lists of them, as the unlearning views) on `device`."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(to_device(v, device) for v in batch)
    return batch


def lm_loss(model: PreTrainedModel, batch: Batch) -> torch.Tensor:
    """Mean token cross-entropy over labelled positions (HF causal-LM convention)."""
    return model(**batch).loss


def epoch_order(n: int, seed: int, epoch: int) -> list[int]:
    """A permutation of range(n) fixed by (seed, epoch): the same run sees the same batches."""
    g = torch.Generator().manual_seed(seed * 100_003 + epoch)
    return torch.randperm(n, generator=g).tolist()


def _data_generator(data: Sequence) -> torch.Generator | None:
    """The generator a data object draws from while it is read (PairedData's `rng`), if any: its
    state is part of the training state, or a resumed run would draw other pairs."""
    rng = getattr(data, "rng", None)
    return rng if isinstance(rng, torch.Generator) else None


def trained_state(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    """What training changes in `model`: its whole state dict, or, when some parameters are
    frozen (a LoRA adapter on a base), only the entries of the trainable ones (a frozen 1.5B base
    would otherwise be written again after every epoch)."""
    state = model.state_dict()
    params = dict(model.named_parameters())
    trainable = {n for n, p in params.items() if p.requires_grad}
    return state if len(trainable) == len(params) else {k: v for k, v in state.items() if k in trainable}


def save_train_state(path: Path, epoch: int, model: PreTrainedModel, opt, sched, losses: list[float],
                     data: Sequence) -> None:
    """Atomically write everything the loop needs to continue after `epoch` (1-based, done)."""
    gen = _data_generator(data)
    state = {"epoch": epoch, "model": trained_state(model), "opt": opt.state_dict(), "sched": sched.state_dict(),
             "losses": losses, "torch_rng": torch.get_rng_state(),
             "data_rng": gen.get_state() if gen is not None else None}
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def load_train_state(path: Path, model: PreTrainedModel, opt, sched, data: Sequence) -> tuple[int, list[float]]:
    """Restore a `save_train_state` file in place; returns (epochs done, losses so far)."""
    state = torch.load(path, map_location="cpu", weights_only=True)
    expected = trained_state(model).keys()
    if not expected <= state["model"].keys():
        raise RuntimeError(f"{path} was saved for another model; delete it to start over")
    model.load_state_dict({k: state["model"][k] for k in expected}, strict=False)
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    torch.set_rng_state(state["torch_rng"])
    gen = _data_generator(data)
    if (gen is None) != (state["data_rng"] is None):
        raise RuntimeError(f"{path} was saved for other training data; delete it to start over")
    if gen is not None:
        gen.set_state(state["data_rng"])
    return int(state["epoch"]), list(state["losses"])


@dataclass(frozen=True)
class Loop:
    """How the loop runs around the optimisation (none of it moves a weight): the progress label
    `desc` (None: the caller's default) and whether to show it; `checkpoint`, the file of the
    training state, written after each epoch and resumed from when it exists (the caller ties it
    to one recipe and removes it once the trained model is saved); `hooks`, Hugging Face
    `TrainerCallback`s driven as a Trainer drives them (`checkpoints.world.hooks`)."""
    desc: str | None = None
    progress: bool = True
    checkpoint: Path | None = None
    hooks: TrainHooks | None = None


def train(model: PreTrainedModel, data: Sequence, cfg: TrainConfig,
          collate_fn: Callable[[Sequence], object],
          loss_fn: Callable[[PreTrainedModel, object], torch.Tensor] = lm_loss,
          loop: Loop = Loop()) -> list[float]:
    """Train `model` in place on `data` for `cfg.epochs`; returns the loss of every step.

    `collate_fn` turns a list of data items into whatever `loss_fn(model, batch)` takes, so the
    unlearning methods can feed (forget, retain) pairs through the same loop. Without hooks the
    loop runs exactly as it always did.
    """
    desc, progress, checkpoint, hooks = loop.desc or "train", loop.progress, loop.checkpoint, loop.hooks
    torch.manual_seed(cfg.seed)
    steps_per_epoch = (len(data) + cfg.batch_size - 1) // cfg.batch_size
    total = steps_per_epoch * cfg.epochs
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim < 2 or "norm" in name else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
    sched = get_linear_schedule_with_warmup(opt, int(cfg.warmup_ratio * total), total)
    done, losses = 0, []
    if checkpoint is not None and Path(checkpoint).is_file():
        done, losses = load_train_state(Path(checkpoint), model, opt, sched, data)
    model.train()
    device = next(model.parameters()).device   # batches follow the model (a GPU build: --device cuda)
    # a bar on a terminal, timestamped lines in a log file (a cluster job must see it is alive)
    bar = track(total=total, initial=done * steps_per_epoch, desc=desc, unit="step", enabled=progress)
    if hooks:
        hooks.begin(model, cfg, steps_per_epoch=steps_per_epoch, epochs=cfg.epochs, done_epochs=done,
                    optimizer=opt, lr_scheduler=sched)
    for epoch in range(done, cfg.epochs):
        order = epoch_order(len(data), cfg.seed, epoch)
        for start in range(0, len(order), cfg.batch_size):
            batch = collate_fn([data[i] for i in order[start:start + cfg.batch_size]])
            if device.type != "cpu":
                batch = to_device(batch, device)
            loss = loss_fn(model, batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
            opt.step()
            sched.step()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.3f}", epoch=epoch + 1)
            if hooks:
                hooks.step_end(losses[-1], epoch, start // cfg.batch_size + 1)
        if hooks:
            hooks.epoch_end()
        if checkpoint is not None and epoch + 1 < cfg.epochs:
            save_train_state(Path(checkpoint), epoch + 1, model, opt, sched, losses, data)
    if hooks:
        hooks.end()
    bar.close()
    model.eval()
    return losses
