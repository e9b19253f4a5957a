"""The lookup markup of an LMLM answer: `[dblookup('subject', 'relation') -> value] answer`.

The model writes the call up to `->`; the database's value and the closing `]` are spliced in;
the model then writes the answer. Training and generation cut the text at the same places.
"""

from __future__ import annotations

import re

CALL_OPEN = "[dblookup("
CALL = re.compile(r"\[dblookup\('(?P<s>.*?)',\s*'(?P<r>.*?)'\)\s*->\s*$", re.S)
SPAN = re.compile(r"\[dblookup\(.*?(?:\]|$)", re.S)   # a whole call, or an unclosed one at the end


def call_text(subject: str, relation: str) -> str:
    """What the model writes, after one leading space: the call up to and including `->`."""
    return f" [dblookup('{subject}', '{relation}') ->"


def value_text(value: str) -> str:
    """What is spliced in after `->`."""
    return f" {value}]"


def pending_call(text: str) -> tuple[str, str] | None:
    """(subject, relation) when `text` ends in an open call awaiting its value, else None."""
    start = text.rfind(CALL_OPEN)
    if start < 0 or "]" in text[start:]:
        return None
    m = CALL.search(text[start:])
    return (m.group("s"), m.group("r")) if m else None


def strip_markup(text: str) -> str:
    """The answer with every lookup call (and its value) removed."""
    return " ".join(SPAN.sub(" ", text).split())
