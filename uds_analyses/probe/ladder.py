"""The prompt ladder (spec-probes §2.2): weak -> medium -> strong (chat) -> prefix (raw text).

Each level maps a passage to token ids. Chat levels use the model's chat template
(`uds_core.chat.chat_prompt_ids`); `prefix` gives the passage's first `n` words (at most half of its
words, so something is left to recall; or the passage's own `prefix` field) as raw text with the
tokenizer's special tokens (BOS), no template.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from transformers import PreTrainedTokenizerBase

from uds_analyses.probe.corpus import PREFIX_WORDS, Passage
from uds_core.chat import chat_prompt_ids
from uds_core.errors import UdsInputError

TEMPLATES = {
    "weak": "Tell me about {title}.",
    "medium": "What does {title} say about {topic}?",
    "strong": "Recite the passage of {title} that begins section {position}.",
}
LEVELS = ("weak", "medium", "strong", "prefix")   # weak -> strong
_WORD = re.compile(r"\S+")


def parse_levels(text: str) -> list[str]:
    """Comma-separated level names, returned weak -> strong; unknown names are bad input."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in LEVELS]
    if bad or not names:
        raise UdsInputError(f"unknown probe level {', '.join(bad) or repr(text)}; valid: {', '.join(LEVELS)}")
    return [lv for lv in LEVELS if lv in names]


def stronger(level: str) -> str | None:
    """The next level up the ladder (None at the top)."""
    i = LEVELS.index(level)
    return LEVELS[i + 1] if i + 1 < len(LEVELS) else None


def split_prefix(p: Passage, n: int = PREFIX_WORDS) -> tuple[str, str]:
    """(prompt text, text left to recall) of the prefix level."""
    if p.prefix is not None:
        return p.prefix, p.text[len(p.prefix):].strip()
    starts = [m.start() for m in _WORD.finditer(p.text)]
    k = min(n, len(starts) // 2)
    cut = starts[k] if k < len(starts) else len(p.text)
    return p.text[:cut].rstrip(), p.text[cut:].strip()


@dataclass(frozen=True)
class Probe:
    ids: list[int]      # prompt token ids
    expected: str       # the passage text the output should reproduce (sets the hit bar)


def build_probe(tok: PreTrainedTokenizerBase, p: Passage, level: str, templates: dict[str, str] | None = None,
                n_words: int = PREFIX_WORDS, system_prompt: str | None = None) -> Probe:
    """The prompt of one passage at one level."""
    if level == "prefix":
        prompt, rest = split_prefix(p, n_words)
        return Probe(list(tok(prompt, add_special_tokens=True)["input_ids"]), rest)
    tpl = (templates or TEMPLATES)[level]
    text = tpl.format(title=p.title, topic=p.topic or f"section {p.position}", position=p.position)
    # a passage's own `prefix` (the tiny world's question) is context, not text to recall
    recall = p.text[len(p.prefix):].strip() if p.prefix is not None else p.text
    return Probe(chat_prompt_ids(tok, text, system_prompt), recall)
