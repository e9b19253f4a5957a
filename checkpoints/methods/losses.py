"""The eight unlearning losses of spec §8, registered by name in `METHODS`.

Every loss has the signature `loss(model, ref, views, hp) -> scalar tensor`:
  model  the model being unlearned (gradients on);
  ref    a frozen copy of the starting model, or None for methods that need none;
  views  one step's batches, each a collated {"input_ids", "attention_mask", "labels"} of shape
         (B, T): "forget" (forget question, true answer), "retain" (a random retain QA), "idk"
         (forget question, an "I don't know" reply), "alt" (forget question, alternate answer).
         Rows of "forget", "idk" and "alt" are the same questions in the same order;
  hp     the method's hyperparameters (`Method.defaults` overridden by the recipe).
Losses read labelled tokens only (answer + eos); NLL is HF's mean token cross-entropy, `ℓ(y|x)`
the summed NLL of one sequence, in nats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import Tensor
from transformers import PreTrainedModel

from checkpoints.world.train import IGNORE, Batch
from uds_core.arch import component_module
from uds_core.errors import UdsInputError
from uds_core.hooks import output_until
from uds_core import logprobs

Views = Mapping[str, Batch]
Hparams = Mapping[str, float]
LossFn = Callable[[PreTrainedModel, "PreTrainedModel | None", Views, Hparams], Tensor]


# --- per-token and per-sequence quantities -----------------------------------------------------

def token_logprobs(logits: Tensor, labels: Tensor) -> tuple[Tensor, Tensor]:
    """log p(label_t | tokens < t) where labelled: logits (B, T, V), labels (B, T) ->
    log-probs (B, T-1) (0 where unlabelled) and the labelled mask (B, T-1)."""
    targets = labels[:, 1:]
    mask = targets != IGNORE
    picked = logprobs.token_logprobs(logits[:, :-1].float(), targets.clamp_min(0))
    return picked * mask, mask


def sequence_nll(model: PreTrainedModel, batch: Batch) -> tuple[Tensor, Tensor]:
    """Summed NLL ℓ(y|x) of each row's labelled tokens (B,), in nats, and their count (B,)."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    logp, mask = token_logprobs(logits, batch["labels"])
    return -logp.sum(dim=1), mask.sum(dim=1)


def mean_nll(model: PreTrainedModel, batch: Batch) -> Tensor:
    """Mean token cross-entropy over the batch's labelled tokens (HF causal-LM loss)."""
    logp, mask = token_logprobs(
        model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits, batch["labels"])
    return -logp.sum() / mask.sum().clamp_min(1)


def frozen_nll(ref: PreTrainedModel, batch: Batch) -> Tensor:
    with torch.no_grad():
        return sequence_nll(ref, batch)[0]


# --- the formulas, on plain tensors (what the tests check by hand) -----------------------------

def npo_term(nll: Tensor, nll_ref: Tensor, beta: float) -> Tensor:
    """−(2/β)·mean log σ(β(ℓθ − ℓref)); nll, nll_ref (B,) summed nats. Equal models: (2/β)·log 2."""
    return -(2.0 / beta) * F.logsigmoid(beta * (nll - nll_ref)).mean()


def simnpo_term(nll: Tensor, n_tokens: Tensor, beta: float, delta: float) -> Tensor:
    """−(2/β)·mean log σ(β(ℓθ/|y| − δ)): NPO without reference, on the length-normalised NLL."""
    return -(2.0 / beta) * F.logsigmoid(beta * (nll / n_tokens - delta)).mean()


def dpo_term(nll_w: Tensor, nll_w_ref: Tensor, nll_l: Tensor, nll_l_ref: Tensor, beta: float) -> Tensor:
    """−(2/β)·mean log σ(β[(ℓref(y_w) − ℓθ(y_w)) − (ℓref(y_l) − ℓθ(y_l))]); all (B,) summed nats."""
    margin = (nll_w_ref - nll_w) - (nll_l_ref - nll_l)
    return -(2.0 / beta) * F.logsigmoid(beta * margin).mean()


def undial_targets(teacher_logits: Tensor, targets: Tensor, beta: float) -> Tensor:
    """softmax(z − β·onehot(y)): (N, V) teacher logits, (N,) token ids -> (N, V) distributions."""
    shifted = teacher_logits.float() - beta * F.one_hot(targets, teacher_logits.shape[-1]).float()
    return torch.softmax(shifted, dim=-1)


def act_loss(h: Tensor, g: Tensor, mask: Tensor) -> Tensor:
    """RMU's act(h, g) = mean_b [Σ_{t∈A_b} mean_d (h − g)²] / |A_b|; h, g (B, T, H), mask (B, T)."""
    per_token = ((h.float() - g.float()) ** 2).mean(dim=-1) * mask
    return (per_token.sum(dim=1) / mask.sum(dim=1).clamp_min(1)).mean()


def control_vector(hidden: int, steer: float, seed: int) -> Tensor:
    """c = s·u/‖u‖, u ~ U[0,1)^hidden from a generator seeded with `seed` (same c every step)."""
    u = torch.rand(hidden, generator=torch.Generator().manual_seed(seed))
    return steer * u / u.norm()


# --- model-level pieces ------------------------------------------------------------------------

def block_output(model: PreTrainedModel, layer: int, batch: Batch) -> Tensor:
    """Output of decoder block `layer` (B, T, H), the tensor UDS patches, with its graph."""
    return output_until(model, component_module(model, layer, "block"),
                        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])


def retain_nll(model: PreTrainedModel, views: Views, hp: Hparams) -> Tensor:
    """α·NLL(D_r); no forward pass when α = 0 (UNDIAL's default)."""
    if not hp["alpha"]:
        return views["retain"]["input_ids"].new_zeros((), dtype=torch.float32)
    return hp["alpha"] * mean_nll(model, views["retain"])


# --- the eight losses --------------------------------------------------------------------------

def graddiff_loss(model, ref, views: Views, hp: Hparams) -> Tensor:
    """−γ·NLL(D_f) + α·NLL(D_r)."""
    return -hp["gamma"] * mean_nll(model, views["forget"]) + retain_nll(model, views, hp)


def npo_loss(model, ref, views: Views, hp: Hparams) -> Tensor:
    """γ·npo_term(ℓθ, ℓref) on the forget answers + α·NLL(D_r)."""
    nll, _ = sequence_nll(model, views["forget"])
    return hp["gamma"] * npo_term(nll, frozen_nll(ref, views["forget"]), hp["beta"]) + retain_nll(model, views, hp)


def simnpo_loss(model, ref, views: Views, hp: Hparams) -> Tensor:
    """γ·simnpo_term (|y| = answer tokens + eos) + α·NLL(D_r)."""
    nll, n = sequence_nll(model, views["forget"])
    return hp["gamma"] * simnpo_term(nll, n, hp["beta"], hp["delta"]) + retain_nll(model, views, hp)


def preference_loss(winner: str) -> LossFn:
    """The 2/β-scaled DPO loss with y_w from view `winner`, y_l the true forget answer."""
    def loss(model, ref, views: Views, hp: Hparams) -> Tensor:
        w, l = views[winner], views["forget"]
        term = dpo_term(sequence_nll(model, w)[0], frozen_nll(ref, w),
                        sequence_nll(model, l)[0], frozen_nll(ref, l), hp["beta"])
        return hp["gamma"] * term + retain_nll(model, views, hp)
    loss.__name__ = f"preference_loss_{winner}"
    return loss


def idknll_loss(model, ref, views: Views, hp: Hparams) -> Tensor:
    """γ·NLL(y_idk | x_f) + α·NLL(D_r)."""
    return hp["gamma"] * mean_nll(model, views["idk"]) + retain_nll(model, views, hp)


def rmu_loss(model, ref, views: Views, hp: Hparams) -> Tensor:
    """γ·act(h^L_θ(forget), c) + α·act(h^L_θ(retain), h^L_ref(retain)) on answer tokens."""
    layer, f, r = int(hp["layer"]), views["forget"], views["retain"]
    h_f = block_output(model, layer, f)
    c = control_vector(h_f.shape[-1], hp["steer"], int(hp["control_seed"])).to(h_f.device)
    forget = act_loss(h_f, c.expand_as(h_f), f["labels"] != IGNORE)
    with torch.no_grad():
        h_ref = block_output(ref, layer, r)
    retain = act_loss(block_output(model, layer, r), h_ref, r["labels"] != IGNORE)
    return hp["gamma"] * forget + hp["alpha"] * retain


def undial_loss(model, ref, views: Views, hp: Hparams) -> Tensor:
    """γ·mean CE(student, softmax(z_ref − β·onehot(y))) over forget answer tokens + α·NLL(D_r).

    Only labelled positions: OU also applies it to prompt and padding positions (spec §8.8),
    which is a quirk of its batching, not part of the method."""
    f = views["forget"]
    targets = f["labels"][:, 1:]
    mask = targets != IGNORE
    student = model(input_ids=f["input_ids"], attention_mask=f["attention_mask"]).logits[:, :-1][mask]
    with torch.no_grad():
        teacher = ref(input_ids=f["input_ids"], attention_mask=f["attention_mask"]).logits[:, :-1][mask]
    q = undial_targets(teacher, targets[mask], hp["beta"])
    ce = -(q * torch.log_softmax(student.float(), dim=-1)).sum(dim=-1).mean()
    return hp["gamma"] * ce + retain_nll(model, views, hp)


# --- the registry ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Method:
    """A method is its loss plus its configuration."""
    name: str
    loss: LossFn
    defaults: dict[str, float]       # spec §8 (OU config values); recipes override them
    needs_ref: bool                  # a frozen copy of the starting model is passed as `ref`
    views: tuple[str, ...] = field(default=("forget", "retain"))  # batches the loss reads

    def hparams(self, overrides: Mapping[str, float] | None = None) -> dict[str, float]:
        """Defaults updated by `overrides`; an unknown name is an input error."""
        unknown = set(overrides or {}) - set(self.defaults)
        if unknown:
            raise UdsInputError(f"method {self.name!r} has no hyperparameter {sorted(unknown)} "
                                f"(known: {', '.join(self.defaults)})")
        return {**self.defaults, **(overrides or {})}


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("graddiff", graddiff_loss, {"gamma": 1.0, "alpha": 1.0}, needs_ref=False),
    Method("npo", npo_loss, {"beta": 0.1, "gamma": 1.0, "alpha": 1.0}, needs_ref=True),
    Method("simnpo", simnpo_loss, {"beta": 4.5, "gamma": 0.125, "delta": 0.0, "alpha": 1.0}, needs_ref=False),
    Method("rmu", rmu_loss, {"layer": 7, "steer": 2.0, "gamma": 1.0, "alpha": 1.0, "control_seed": 0},
           needs_ref=True),
    Method("idkdpo", preference_loss("idk"), {"beta": 0.1, "gamma": 1.0, "alpha": 1.0}, needs_ref=True,
           views=("forget", "idk", "retain")),
    Method("idknll", idknll_loss, {"gamma": 1.0, "alpha": 1.0}, needs_ref=False, views=("idk", "retain")),
    Method("altpo", preference_loss("alt"), {"beta": 0.1, "gamma": 1.0, "alpha": 1.0}, needs_ref=True,
           views=("forget", "alt", "retain")),
    Method("undial", undial_loss, {"beta": 10.0, "gamma": 1.0, "alpha": 0.0}, needs_ref=True),
)}


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise UdsInputError(f"unknown unlearning method {name!r} (choose {', '.join(METHODS)})")
    return METHODS[name]
