"""`plain`: no attack. Each forget question alone in the chat template, answered greedily: the
knowledge check itself, the level every other attack is read against."""

from __future__ import annotations

from meta_eval.attacks.base import Answered, AttackData, AttackSettings, Target, greedy, plain_prompts

name = "plain"
summary = "the knowledge check: each forget question alone, greedy answer"


def recipe(s: AttackSettings) -> dict:
    return {"prompt": "the question alone in the chat template", "max_new_tokens": s.max_new_tokens}


def answers(target: Target, data: AttackData, s: AttackSettings) -> Answered:
    model = target.load(target.spec)
    return Answered(greedy(model, data.tok, plain_prompts(data.tok, data.items), s))
