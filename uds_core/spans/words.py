"""Words of an answer for span finding: units with character offsets, normalised forms."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

WORD = re.compile(r"\w+(?:[-'’./]\w+)*\+*|[^\w\s]")
# a quoted title or name ("...", “...”, '...', ‘...’), kept whole as one unit
QUOTED = re.compile(r'"[^"]{2,150}"|“[^”]{2,150}”|(?<!\w)\'[^\']{2,150}\'(?!\w)|‘[^’]{2,150}’')
FUNCTION_WORDS = frozenset("""
a an the of in on at to for and or nor but with by from as into onto about over under than then so such
is are was were be been being am has have had do does did can could would should will shall may might must
he she it they we i you him her them us me his hers its their our your my this that these those there here
who whom whose which what when where why how not no yes also very more most some any all both each other
often which while whereas because since although though if whether upon within through during among
""".split())
# evaluative words that open a lead-in ("the prestigious", "a respected") rather than the fact
LEAD_IN = frozenset("""prestigious respected esteemed renowned acclaimed notable distinguished well-known famous
celebrated honored honoured illustrious coveted significantly primarily predominantly mainly typically usually
frequently generally""".split())
ARTICLES = ("The", "A", "An")


@dataclass(frozen=True)
class Unit:
    """A word, a punctuation mark or a whole quotation; [start, end) are character offsets."""
    text: str
    start: int
    end: int
    quoted: bool = False


def words(text: str) -> list[Unit]:
    """Words and punctuation marks of `text`, in order."""
    return [Unit(m.group(), m.start(), m.end()) for m in WORD.finditer(text)]


def units(text: str) -> list[Unit]:
    """`words`, with every quotation merged into one unit."""
    quotes = [(m.start(), m.end()) for m in QUOTED.finditer(text)]
    out: list[Unit] = []
    for w in words(text):
        inside = next(((a, b) for a, b in quotes if a <= w.start and w.end <= b), None)
        if inside is None:
            out.append(w)
        elif not out or (out[-1].start, out[-1].end) != inside:
            out.append(Unit(text[inside[0]:inside[1]], *inside, quoted=True))
    return out


def norm(word: str) -> str:
    """Lower case, typographic apostrophe folded, possessive 's dropped."""
    return re.sub(r"'s$", "", word.lower().replace("’", "'"))


@lru_cache(maxsize=1)
def _porter():
    from nltk.stem.porter import PorterStemmer   # rule-based: needs no downloaded data

    return PorterStemmer()


def stem(word: str) -> str:
    """Porter stem of `norm(word)` (writes/write, awarded/award), for matching answer and question words."""
    return _porter().stem(norm(word))


def is_content(units_: list[Unit], i: int) -> bool:
    """A word that can carry a fact: not punctuation, not a function word (a capitalised word
    inside a sentence is a name, "May" or "Will", unless it is an article)."""
    u = units_[i]
    if u.quoted:
        return True
    if not u.text[0].isalnum():
        return False
    opens_sentence = i == 0 or units_[i - 1].text in ".!?"
    named = u.text[0].isupper() and not opens_sentence and u.text not in ARTICLES
    return named or norm(u.text) not in FUNCTION_WORDS
