"""Tiny Llama models trained on uniform random sequences: the capacity experiment's model side
(SPEC-probes 1.2). Data, model, a step-budgeted training loop with a stated plateau rule, and
per-sequence code lengths; the bit accounting is `metrics.mem_bits`, the fits `analyses.capacity.fit`.

Every sequence is prefixed with a BOS id `V` that is never a target, so all `S` tokens of a
sequence are predicted and the uniform reference is exactly `S * log2 V` bits.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch
from transformers import LlamaConfig, LlamaForCausalLM, get_cosine_schedule_with_warmup
from core.logprobs import token_logprobs

LN2 = math.log(2.0)
SCHEDULES = ("cosine", "constant")


@dataclass(frozen=True)
class ModelSize:
    hidden: int
    layers: int
    heads: int = 4

    @property
    def name(self) -> str:
        return f"h{self.hidden}-l{self.layers}"


def uniform_sequences(n: int, seq_len: int, vocab: int, seed: int) -> torch.Tensor:
    """(n, seq_len) int64 tokens drawn i.i.d. uniformly from range(vocab), fixed by `seed`."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n, seq_len), generator=g)


def build_model(size: ModelSize, vocab: int, seq_len: int, seed: int) -> LlamaForCausalLM:
    """A Llama with tied embeddings over `vocab + 1` ids (the extra one is BOS), MLP width 2 * hidden."""
    cfg = LlamaConfig(vocab_size=vocab + 1, hidden_size=size.hidden, intermediate_size=2 * size.hidden,
                      num_hidden_layers=size.layers, num_attention_heads=size.heads,
                      num_key_value_heads=size.heads, max_position_embeddings=seq_len + 1,
                      tie_word_embeddings=True, bos_token_id=vocab, eos_token_id=vocab, pad_token_id=vocab)
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def n_params(model: torch.nn.Module) -> int:
    """Distinct parameters (tied embeddings counted once): all of them store data."""
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def with_bos(x: torch.Tensor, bos: int) -> torch.Tensor:
    """(n, S) -> (n, S + 1) with the BOS id in front."""
    return torch.cat([torch.full((x.shape[0], 1), bos, dtype=x.dtype, device=x.device), x], dim=1)


def _device(model: torch.nn.Module) -> torch.device:
    """Where the model's weights live: inputs go there, batches are still drawn on the CPU."""
    return next(model.parameters()).device


def _token_nll(model: torch.nn.Module, x: torch.Tensor, bos: int) -> torch.Tensor:
    """(n, S) negative log-likelihoods in nats of each token of `x` given its prefix."""
    ids = with_bos(x, bos)
    logits = model(input_ids=ids, use_cache=False).logits[:, :-1].float()
    return -token_logprobs(logits, ids[:, 1:])


@torch.no_grad()
def sequence_nll_nats(model: torch.nn.Module, x: torch.Tensor, bos: int, batch_size: int = 512,
                      bf16: bool = False) -> torch.Tensor:
    """(n,) summed negative log-likelihood in nats of each sequence of `x` (n, S), model in eval mode."""
    was = model.training
    model.eval()
    dev = _device(model)
    out = []
    for i in range(0, x.shape[0], batch_size):
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
            out.append(_token_nll(model, x[i:i + batch_size].to(dev), bos).sum(1).double().cpu())
    model.train(was)
    return torch.cat(out)


@dataclass(frozen=True)
class TrainBudget:
    """Training recipe and the plateau rule.

    `warmup` linear warm-up steps to `lr`, then (schedule "cosine") cosine decay to 0 at `max_steps`
    or (schedule "constant") `lr` to the end: with a constant tail the first s steps of a run are
    the run to budget s, so one run gives memorisation against the step budget. Every `eval_every`
    steps the code length of the whole training set is measured. Stop at the first of: (a) the
    set is memorised (mean NLL below `solved_bits` bits per sequence), (b) plateau: the
    memorised bits grew by less than `plateau_tol` (relative) over the last `plateau_window` steps,
    (c) `max_steps`."""
    max_steps: int = 3000
    lr: float = 1e-2
    warmup: int = 100
    batch_size: int = 128
    weight_decay: float = 0.0
    eval_every: int = 250
    plateau_window: int = 1000
    plateau_tol: float = 0.01
    solved_bits: float = 1.0
    bf16: bool = False
    schedule: str = "cosine"

    def to_dict(self) -> dict:
        return asdict(self)


def constant_lr_factor(k: int, warmup: int) -> float:
    """LR multiplier after `k` scheduler steps: k / warmup while warming up, then 1 (the same
    warm-up as the cosine schedule, whose first optimizer step also runs at 0)."""
    return min(1.0, k / warmup) if warmup > 0 else 1.0


def make_scheduler(opt: torch.optim.Optimizer, budget: TrainBudget) -> torch.optim.lr_scheduler.LRScheduler:
    """The budget's LR schedule on `opt`; cosine is the transformers one the committed runs used."""
    if budget.schedule == "cosine":
        return get_cosine_schedule_with_warmup(opt, budget.warmup, budget.max_steps)
    if budget.schedule == "constant":
        return torch.optim.lr_scheduler.LambdaLR(opt, lambda k: constant_lr_factor(k, budget.warmup))
    raise ValueError(f"unknown schedule {budget.schedule!r}; valid: {', '.join(SCHEDULES)}")


@dataclass
class TrainLog:
    steps: int = 0
    stop: str = "max_steps"                                   # solved | plateau | max_steps
    curve: list[tuple[int, float]] = field(default_factory=list)   # (step, memorised bits of the set)
    lrs: list[float] = field(default_factory=list)   # LR each optimizer step ran at
    nll: torch.Tensor | None = None   # per-sequence NLL (nats) of the final weights: training always ends on an evaluation


def train_to_plateau(model: LlamaForCausalLM, x: torch.Tensor, budget: TrainBudget, seed: int,
                     mem_of: Callable[[torch.Tensor], float]) -> TrainLog:
    """Train in place on `x` (N, S); `mem_of(per-sequence NLL nats)` -> memorised bits of the set
    (the caller's accounting) drives the plateau rule. Returns the log; the model ends in eval mode."""
    bos = model.config.bos_token_id
    dev = _device(model)
    opt = torch.optim.AdamW(model.parameters(), lr=budget.lr, weight_decay=budget.weight_decay)
    sched = make_scheduler(opt, budget)
    g = torch.Generator().manual_seed(seed)   # batches drawn on the CPU: the same rows on any device
    x_dev = x.to(dev)
    batch = min(budget.batch_size, x.shape[0])
    log = TrainLog()
    model.train()
    for step in range(1, budget.max_steps + 1):
        rows = torch.randint(0, x.shape[0], (batch,), generator=g)
        log.lrs.append(opt.param_groups[0]["lr"])
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=budget.bf16):
            loss = _token_nll(model, x_dev[rows.to(dev)], bos).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        log.steps = step
        if step % budget.eval_every == 0 or step == budget.max_steps:
            nll = sequence_nll_nats(model, x, bos, bf16=budget.bf16)
            log.curve.append((step, mem_of(nll)))
            log.nll = nll
            if float(nll.mean()) / LN2 < budget.solved_bits:
                log.stop = "solved"
                break
            if _plateaued(log.curve, budget):
                log.stop = "plateau"
                break
    model.eval()
    return log


def window_gain(curve: list[tuple[int, float]], window: int) -> float | None:
    """Relative growth of memorised bits over the last `window` steps of `curve`, (now - then) /
    max(now, 1 bit), `then` = the last point at least `window` steps back; None when there is none."""
    step, now = curve[-1]
    before = [m for s, m in curve if s <= step - window]
    return (now - before[-1]) / max(now, 1.0) if before else None


def still_rising(curve: list[tuple[int, float]], budget: TrainBudget) -> bool | None:
    """Whether the bits grew by at least `plateau_tol` over the last `plateau_window` steps (the
    plateau rule's test, read at the run's end); None when the run is shorter than the window."""
    gain = window_gain(curve, budget.plateau_window)
    return None if gain is None else gain >= budget.plateau_tol


def _plateaued(curve: list[tuple[int, float]], budget: TrainBudget) -> bool:
    """Whether memorised bits grew by less than `plateau_tol` over the last `plateau_window` steps."""
    return still_rising(curve, budget) is False
