"""Character-level matching of a model output against passages (spec-probes §2.4).

Pure functions on strings. Both sides are normalised (Unicode NFKC, so full-width letters become
ASCII; curly quotes and dashes unified; whitespace collapsed; optional lower case). A verbatim hit
is a longest common *substring* (characters) of at least `min_lcs`; a hit counts for the target
passage only if no passage of another document matches longer (distractor attribution).

The longest common substring comes from the standard library's
`difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match()`: with no junk
function and autojunk off it returns the longest matching block exactly (the classic
dynamic programme gives the same length; tests/test_probe_matching.py checks both).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Sequence

# Typographic variants NFKC leaves alone -> ASCII (why: a model trained on straight quotes must
# not lose a hit because the passage was typeset with curly ones, and vice versa).
_QUOTES = {c: "'" for c in "\u2018\u2019\u201a\u201b\u2032\u2035\u0060\u00b4"}
_QUOTES.update({c: '"' for c in "\u201c\u201d\u201e\u201f\u2033\u2036\u00ab\u00bb"})
_DASHES = {c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u2e3a\u2e3b\ufe58\ufe63\uff0d"}
_TABLE = str.maketrans({**_QUOTES, **_DASHES})
_SPACE = re.compile(r"\s+")

NGRAM = 10          # word n-gram size of the overlap score
MIN_LCS = 50        # characters: default verbatim bar


def canonical_text(text: str, lower: bool = False) -> str:
    """NFKC, quotes/dashes unified, whitespace collapsed to single spaces, stripped."""
    out = _SPACE.sub(" ", unicodedata.normalize("NFKC", text).translate(_TABLE)).strip()
    return out.lower() if lower else out


def lcs_length(a: str, b: str) -> int:
    """Length in characters of the longest common substring of `a` and `b` (already normalised)."""
    if not a or not b:
        return 0
    return SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b)).size


def ngram_overlap(output: str, passage: str, n: int = NGRAM) -> float | None:
    """Share of the output's word n-grams (with repeats) that occur in the passage; None when the
    output has fewer than `n` words. Both normalised."""
    words = output.split()
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    if not grams:
        return None
    pw = passage.split()
    have = {tuple(pw[i:i + n]) for i in range(len(pw) - n + 1)}
    return sum(g in have for g in grams) / len(grams)


def hit_bar(min_lcs: int, expected: str) -> int:
    """The LCS a hit needs: `min_lcs`, or the whole expected text when that is shorter (a passage
    of 40 characters is recalled verbatim only when all 40 come back)."""
    return max(1, min(min_lcs, len(expected)))


@dataclass(frozen=True)
class Match:
    lcs: int                       # LCS with the target passage
    overlap: float | None          # word 10-gram overlap with the target passage
    best_lcs: int                  # LCS with the best-matching passage of the corpus
    best_index: int                # index of that passage (the target on ties)
    verbatim: bool                 # hit that belongs to the target's document
    matched_doc: str | None        # document of the best match when it reaches the bar, else None

    @property
    def misattributed(self) -> bool:
        """A hit on some other document than the target's (a distractor)."""
        return self.matched_doc is not None and not self.verbatim


class PassageIndex:
    """Normalised passages with their documents, and a character q-gram index that limits the
    exact LCS to passages that can reach the bar (a common substring of length >= q shares
    every q-gram it contains, so a passage sharing none has LCS < q)."""

    def __init__(self, texts: Sequence[str], docs: Sequence[str], lower: bool = False, q: int = 16):
        self.texts = [canonical_text(t, lower) for t in texts]
        self.docs = list(docs)
        self.lower, self.q = lower, q
        self._grams: dict[str, set[int]] = {}
        for i, t in enumerate(self.texts):
            for g in self._qgrams(t):
                self._grams.setdefault(g, set()).add(i)

    def _qgrams(self, text: str) -> set[str]:
        return {text[i:i + self.q] for i in range(len(text) - self.q + 1)}

    def candidates(self, output: str, bar: int) -> set[int]:
        """Passages whose LCS with `output` may reach `bar` (all when bar < q)."""
        if bar < self.q:
            return set(range(len(self.texts)))
        return set().union(*(self._grams.get(g, ()) for g in self._qgrams(output))) if output else set()

    def match(self, output: str, target: int, bar: int) -> Match:
        """Score one raw output against passage `target` and attribute its best match."""
        output = canonical_text(output, self.lower)
        lcs = lcs_length(output, self.texts[target])
        own = self.docs[target]
        # rank: longer LCS first; on a tie the target, then the target's document, wins
        best_key, best_i = (lcs, 2), target
        for i in sorted(self.candidates(output, bar) - {target}):
            key = (lcs_length(output, self.texts[i]), int(self.docs[i] == own))
            if key > best_key:
                best_key, best_i = key, i
        best = best_key[0]
        matched = self.docs[best_i] if best >= bar else None
        verbatim = matched is not None and matched == self.docs[target]
        return Match(lcs, ngram_overlap(output, self.texts[target]), best, best_i, verbatim, matched)
