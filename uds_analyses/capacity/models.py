"""Tiny Llama models trained on uniform random sequences: the capacity experiment's model side
(spec-probes §1.2). Data, model, a step-budgeted training loop with a stated plateau rule, and
per-sequence code lengths; the bit accounting is `metrics.mem_bits`, the fits `uds_analyses.capacity.fit`.

Every sequence is prefixed with a BOS id `V` that is never a target, so all `S` tokens of a
sequence are predicted and the uniform reference is exactly `S * log2 V` bits.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field
from typing import Callable, Collection

import torch
from transformers import LlamaConfig, LlamaForCausalLM, get_cosine_schedule_with_warmup
from uds_core.logprobs import token_logprobs

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
    (c) `max_steps`.

    `cooldown` > 0 (constant schedule): at each step budget the caller names, a branch copied
    from the run (weights and optimizer state) decays the LR linearly to 0 over `cooldown` x that
    many steps and is scored, then dropped; the run goes on as if it had not been made. A
    constant LR leaves the stored bits noisy (below what a decayed run keeps), so the branch is the
    finished run of that budget, as in warm-up-stable-decay schedules."""
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
    cooldown: float = 0.0

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
    branches: list[tuple[int, float]] = field(default_factory=list)   # (budget, memorised bits after its cooldown)
    # per-sequence NLL (nats) of the final weights: training always ends on an evaluation
    nll: torch.Tensor | None = None


def _train_step(model: LlamaForCausalLM, opt: torch.optim.Optimizer, x_dev: torch.Tensor, batch: int,
                g: torch.Generator, bos: int, bf16: bool) -> None:
    """One optimizer step on `batch` rows of `x_dev` drawn with `g` (on the CPU)."""
    dev = x_dev.device
    rows = torch.randint(0, x_dev.shape[0], (batch,), generator=g)
    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=bf16):
        loss = _token_nll(model, x_dev[rows.to(dev)], bos).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()


def cooldown_length(step: int, fraction: float) -> int:
    """Steps of the cooldown branched at `step`: `fraction` of it, at least one."""
    return max(1, round(fraction * step))


def cooled_bits(model: LlamaForCausalLM, opt: torch.optim.Optimizer, x: torch.Tensor, budget: TrainBudget,
                step: int, seed: int, mem_of: Callable[[torch.Tensor], float]) -> float:
    """Memorised bits of a branch of the run at `step`: copies of the weights and of the AdamW
    state, the LR from its present value linearly to 0 over `cooldown_length` steps (step k at
    lr * (1 - k / c)), batches from their own generator. `model` and `opt` are left untouched."""
    branch = copy.deepcopy(model)
    b_opt = torch.optim.AdamW(branch.parameters())
    b_opt.load_state_dict(copy.deepcopy(opt.state_dict()))
    base = opt.param_groups[0]["lr"]
    c = cooldown_length(step, budget.cooldown)
    g = torch.Generator().manual_seed(seed * 1_000_003 + step)
    x_dev = x.to(_device(model))
    branch.train()
    for k in range(c):
        for group in b_opt.param_groups:
            group["lr"] = base * (1 - k / c)
        _train_step(branch, b_opt, x_dev, min(budget.batch_size, x.shape[0]), g, model.config.bos_token_id, budget.bf16)
    return mem_of(sequence_nll_nats(branch, x, model.config.bos_token_id, bf16=budget.bf16))


def train_to_plateau(model: LlamaForCausalLM, x: torch.Tensor, budget: TrainBudget, seed: int,
                     mem_of: Callable[[torch.Tensor], float], branch_at: Collection[int] = ()) -> TrainLog:
    """Train in place on `x` (N, S); `mem_of(per-sequence NLL nats)` -> memorised bits of the set
    (the caller's accounting) drives the plateau rule. With `budget.cooldown`, a cooldown branch
    (`cooled_bits`) at each step of `branch_at`, and at an earlier stop when a later budget
    remains. Returns the log; the model ends in eval mode."""
    bos = model.config.bos_token_id
    dev = _device(model)
    opt = torch.optim.AdamW(model.parameters(), lr=budget.lr, weight_decay=budget.weight_decay)
    sched = make_scheduler(opt, budget)
    g = torch.Generator().manual_seed(seed)   # batches drawn on the CPU: the same rows on any device
    x_dev = x.to(dev)
    batch = min(budget.batch_size, x.shape[0])
    def branch(s):
        if budget.cooldown > 0:
            log.branches.append((s, cooled_bits(model, opt, x, budget, s, seed, mem_of)))
    log = TrainLog()
    model.train()
    for step in range(1, budget.max_steps + 1):
        log.lrs.append(opt.param_groups[0]["lr"])
        _train_step(model, opt, x_dev, batch, g, bos, budget.bf16)
        sched.step()
        log.steps = step
        if step in branch_at:
            branch(step)   # works on copies: the run's weights, optimizer and mode are untouched
        if step % budget.eval_every == 0 or step == budget.max_steps:
            nll = sequence_nll_nats(model, x, bos, bf16=budget.bf16)
            log.curve.append((step, mem_of(nll)))
            log.nll = nll
            if float(nll.mean()) / LN2 < budget.solved_bits:
                log.stop = "solved"
            elif _plateaued(log.curve, budget):
                log.stop = "plateau"
            if log.stop != "max_steps":
                if step not in branch_at and any(s > step for s in branch_at):
                    branch(step)   # the later budgets' finished run is this one's
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
