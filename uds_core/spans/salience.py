"""Which answer units carry the fact: replaced by the perturbed answers, or new to the question."""

from __future__ import annotations

import difflib
from typing import Sequence

from uds_core.spans.words import LEAD_IN, Unit, is_content, norm, stem, units, words


def _normed(text: str) -> list[str]:
    return [norm(w.text) for w in words(text)]


def _similarity(a: str, b: str) -> float:
    """difflib's ratio of the two word sequences (1 = same words in the same order)."""
    return difflib.SequenceMatcher(None, _normed(a), _normed(b), autojunk=False).ratio()


def replaced_votes(base: str, perturbed: Sequence[str]) -> list[int]:
    """Per word of `base`: how many perturbed answers do not keep it (difflib alignment)."""
    seq = _normed(base)
    votes = [0] * len(seq)
    for text in perturbed:
        kept = set()
        for block in difflib.SequenceMatcher(None, seq, _normed(text), autojunk=False).get_matching_blocks():
            kept.update(range(block.a, block.a + block.size))
        for i in range(len(seq)):
            votes[i] += i not in kept
    return votes


def perturbation_salience(answer: str, paraphrase: str | None, perturbed: Sequence[str]) -> list[int]:
    """Per unit of `answer` (`words.units`): how many perturbed answers replace it, 0 for function
    words. The perturbed answers were written from the answer (the tiny worlds) or from its
    paraphrase (TOFU); the closer of the two is the base. From the paraphrase, a word of the
    answer counts as replaced when the paraphrase's same word is."""
    bases = [answer] + ([paraphrase] if paraphrase else [])
    base = max(bases, key=lambda b: sum(_similarity(b, p) for p in perturbed))
    base_words, votes = words(base), replaced_votes(base, perturbed)
    ws = words(answer)
    if base is answer:
        by_word = {(w.start, w.end): v for w, v in zip(ws, votes)}
    else:
        vocab: dict[str, int] = {}
        for i, (w, v) in enumerate(zip(base_words, votes)):
            if v and is_content(base_words, i):
                vocab[norm(w.text)] = max(v, vocab.get(norm(w.text), 0))
        by_word = {(w.start, w.end): vocab.get(norm(w.text), 0) for w in ws}
    us = units(answer)
    return [max((v for (a, b), v in by_word.items() if u.start <= a and b <= u.end), default=0)
            if is_content(us, i) else 0 for i, u in enumerate(us)]


def novelty(answer_units: list[Unit], question: str) -> list[bool]:
    """Per unit: a content unit the question does not already say (a quotation: its text is not
    in the question; a word: its stem is not a question word's) and no evaluative lead-in word."""
    asked = {stem(w.text) for w in words(question)}
    q_lower = question.lower()
    out = []
    for i, u in enumerate(answer_units):
        if u.quoted:
            out.append(u.text.strip("\"“”'‘’").lower() not in q_lower)
        else:
            out.append(is_content(answer_units, i) and stem(u.text) not in asked and norm(u.text) not in LEAD_IN)
    return out
