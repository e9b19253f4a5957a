"""Where an entity that starts at a given unit ends: the end of its phrase."""

from __future__ import annotations

from uds_core.spans.words import ARTICLES, Unit, norm

STOPS = frozenset(".,;:!?–—")
CLAUSE_WORDS = frozenset("that which who whom whose while where because since although though whereas".split())
PRONOUNS = frozenset("he she they it his her their its him them i we this these those there".split())
PREPOSITIONS = frozenset("in for to with by on at from into as through within during among about".split())
MAX_LIST_ITEM = 6   # units in one item of a comma-separated list taken whole


def _phrase_end(us: list[Unit], s: int) -> int:
    """Exclusive end of the phrase opened by unit `s`: before punctuation, a clause word, or
    "and"/"or"/a preposition followed by a pronoun (a new clause: "... and her mother ...")."""
    i = s + 1
    while i < len(us):
        w, nxt = norm(us[i].text), norm(us[i + 1].text) if i + 1 < len(us) else ""
        if us[i].text in STOPS or w in CLAUSE_WORDS:
            break
        if (w in ("and", "or") or w in PREPOSITIONS) and nxt in PRONOUNS:
            break
        i += 1
    return i


def _list_end(us: list[Unit], e: int) -> int:
    """`e`, or the end of a comma-separated list that starts at `e` and closes with "and/or X"
    ("love, betrayal, and the struggle for power"), items of at most MAX_LIST_ITEM units."""
    j = e
    while j < len(us) and us[j].text == ",":
        k = j + 1
        while k < len(us) and us[k].text not in STOPS and norm(us[k].text) not in ("that", "which", "who"):
            k += 1
        item = us[j + 1:k]
        if not item or len(item) > MAX_LIST_ITEM:
            return e
        if any(norm(u.text) in ("and", "or") for u in item):
            return k
        j = k
    return e


def extent(us: list[Unit], s: int, changed: list[int] | None = None) -> tuple[int, int]:
    """[first, last + 1) units of the entity that starts at unit `s`. A capitalised article just
    before joins a name or title ("The Weeping Well"); with `changed` (perturbation salience per
    unit), a replaced number after a comma joins a replaced run ("April 8, 1966")."""
    e = _list_end(us, _phrase_end(us, s))
    if s > 1 and us[s - 1].text in ARTICLES and us[s - 2].text not in ".!?" and us[s].text[:1].isupper():
        s -= 1
    while changed and e + 1 < len(us) and us[e].text == "," and changed[e - 1] and changed[e + 1] \
            and us[e + 1].text[:1].isdigit():
        e += 2
    return s, e
