"""`relearn`: relearning on disjoint facts (Deeb & Roger's retraining on T, scored on V).

A fresh copy of the model is fine-tuned on one half of the forget QA (the training loop and
encodings of the campaign's relearning setting, `meta_eval.perturb.relearn`: no warm-up, no weight
decay, linear decay, clip 1.0, the settings' seed) and answers the other half's questions, then
the same from a fresh copy with the halves swapped. What it recovers on the half it never saw is
knowledge that was still there (or, on the retain model, what the other facts let it guess).
"""

from __future__ import annotations

from meta_eval.attacks.base import Answered, AttackData, AttackSettings, Target, by_halves, greedy, plain_prompts
from meta_eval.perturb import RelearnRecipe, relearn
from checkpoints.world.encode import forms_words
from checkpoints.world.train import TrainConfig

name = "relearn"
summary = "fine-tune on one half of the forget QA, answer the other half (both ways)"


def train_config(s: AttackSettings) -> TrainConfig:
    return TrainConfig(lr=s.relearn_lr, epochs=s.relearn_epochs, batch_size=s.relearn_batch, warmup_ratio=0.0,
                       weight_decay=0.0, max_grad_norm=1.0, seed=s.seed)


def recipe(s: AttackSettings) -> dict:
    return {"data": f"one seeded half of the forget QA ({forms_words(tuple(s.forms))}), the other half scored, "
                    "then the halves swapped", "train": train_config(s).to_dict()}


def answers(target: Target, data: AttackData, s: AttackSettings) -> Answered:
    plan = RelearnRecipe(train_config(s), forms=tuple(s.forms))

    def answer_half(fit: tuple[int, ...], held: tuple[int, ...]) -> Answered:
        model = target.load(target.spec)
        losses = relearn(model, data.tok, [data.items[i] for i in fit], plan) if s.relearn_epochs > 0 and fit else []
        texts = greedy(model, data.tok, plain_prompts(data.tok, [data.items[i] for i in held]), s)
        return Answered(texts, {"trained_on": len(fit), "steps": len(losses),
                                "loss_first_last": [losses[0], losses[-1]] if losses else None})
    return by_halves(data, answer_half)
