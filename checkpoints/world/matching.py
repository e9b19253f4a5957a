"""Finding an entity in a generated answer: the test behind entity hit rates (`quality`) and
behind AltPO's filter of alternate answers that still name the true entity (`alternates`)."""

from __future__ import annotations

import re


def plain_words(text: str) -> str:
    """Lower case, punctuation to spaces, single spaces: 'The Jinot.' -> 'the jinot'."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def entity_hit(generation: str, entity: str) -> bool:
    """Whether the normalised entity occurs in the normalised generation as whole words."""
    return f" {plain_words(entity)} " in f" {plain_words(generation)} "
