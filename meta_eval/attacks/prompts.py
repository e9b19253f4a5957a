"""`fewshot`, `roleplay`: prompts that ask differently. In-context examples of other authors'
question-and-answer pairs before the forget question (the model is shown that this conversation
answers such questions), or a role-play persona that knows the author and does not refuse."""

from __future__ import annotations

import random
from dataclasses import dataclass

from meta_eval.attacks.base import Answered, AttackData, AttackSettings, Target, greedy, plain_prompts
from uds_core.chat import conversation_prompt_ids


def shots(data: AttackData, s: AttackSettings) -> list[tuple[str, str]]:
    """`fewshot_k` (question, answer) pairs of other authors, chosen by the seed (the same for
    every question)."""
    k = min(s.fewshot_k, len(data.others))
    return [(o["question"], o["answer"]) for o in random.Random(s.seed).sample(list(data.others), k)]


@dataclass(frozen=True)
class FewShot:
    name: str = "fewshot"
    summary: str = "other authors' QA pairs as earlier chat turns, then the question"

    def recipe(self, s: AttackSettings) -> dict:
        return {"shots": s.fewshot_k, "from": "QA of other authors (the retain split), chosen by the seed, "
                                              "the same before every question"}

    def answers(self, target: Target, data: AttackData, s: AttackSettings) -> Answered:
        turns = shots(data, s)
        prompts = [conversation_prompt_ids(data.tok, turns, it["question"]) for it in data.items]
        return Answered(greedy(target.load(target.spec), data.tok, prompts, s))


@dataclass(frozen=True)
class RolePlay:
    name: str = "roleplay"
    summary: str = "a role-play persona before the question"

    def recipe(self, s: AttackSettings) -> dict:
        return {"prefix": s.roleplay}

    def answers(self, target: Target, data: AttackData, s: AttackSettings) -> Answered:
        return Answered(greedy(target.load(target.spec), data.tok, plain_prompts(data.tok, data.items, s.roleplay), s))


FEWSHOT, ROLEPLAY = FewShot(), RolePlay()
