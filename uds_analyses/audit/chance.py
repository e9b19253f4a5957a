"""Chance level of the audit's answer rates: the exact-match rate of a subject-blind guesser.

The guesser knows the database without the target fact and, of the question, only its relation. For
the prompt of a fact f = (s, r, o) its pool is the objects of every triple whose relation is
alias-equivalent to r, once f's deletion set (every triple alias-equivalent to f) is removed: the
relation's answers as the DEL-ON database holds them. Values are counted by the audit's normalised
text (`scoring.token_text`), and a guess scores the audit's exact match against the gold and its
aliases (`scoring.score_answer`, `scoring.gold_set`).

- `chance` (majority): the guesser answers the pool's most frequent value, a tie split evenly among the
  tied values; its expected EM over the prompts. The mode is the likeliest answer given what the
  guesser knows, so a rate above it needs knowledge of the fact itself.
- `chance_uniform`: a value drawn uniformly from the pool's distinct values; its expected EM. It
  ignores how often a value occurs, so it is the weaker guesser.

Both are fractions of prompts in [0, 1], higher = the answers are easier to guess. The target's own
object counts only where another retained triple of the relation carries it (a decoy, a shared value):
a fact alone in its relation has an empty pool and chance 0, whereas counting the target itself would
give 1 there. Objects stored under two alias spellings within one relation count as two values.

Reading (docs/audit.md): FULL / DEL-ON / DEL-OFF EM, L (= DEL-OFF EM) and the 3.3 artefact rate (= DEL-ON
EM under verified deletion) are read against `chance`; R is read against 0, since a guesser that
ignores retrieval answers DEL-ON and DEL-OFF alike. The MIA scores' chance levels are in
`metrics/chance.py`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from statistics import fmean

from checkpoints.lmlm.db import FactDB
from checkpoints.lmlm.prompts import STYLES, PromptRow
from uds_analyses.audit.scoring import gold_set, score_answer, token_text
from uds_analyses.audit.sources import AuditSet
from uds_core.errors import UdsInputError


def _values(pool: Sequence[str]) -> Counter:
    # an object that normalises to "" is no answer (the audit scores it as unknown)
    return Counter(v for v in map(token_text, pool) if v)


def _share_correct(values: Sequence[str], golds: Sequence[str]) -> float:
    """Fraction of `values` (normalised texts) the audit scores exact against `golds`; 0 if none."""
    return fmean(score_answer(v, golds).exact for v in values) if values else 0.0


def majority_hit(pool: Sequence[str], golds: Sequence[str]) -> float:
    """Expected EM in [0, 1] of answering the most frequent value of `pool` (ties split evenly)
    against `golds` (the gold first, then its aliases); 0 for an empty pool."""
    counts = _values(pool)
    top = max(counts.values(), default=0)
    return _share_correct([v for v, c in counts.items() if c == top], golds)


def uniform_hit(pool: Sequence[str], golds: Sequence[str]) -> float:
    """Expected EM in [0, 1] of a value drawn uniformly from the distinct values of `pool`."""
    return _share_correct(list(_values(pool)), golds)


def chance_rate(pools: Sequence[Sequence[str]], golds: Sequence[Sequence[str]],
                hit: Callable[[Sequence[str], Sequence[str]], float] = majority_hit) -> float:
    """Mean of `hit(pools[i], golds[i])` over prompts i: a fraction of prompts in [0, 1]."""
    if len(pools) != len(golds):
        raise UdsInputError(f"chance level: {len(pools)} answer pools for {len(golds)} gold sets")
    if not pools:
        raise UdsInputError("chance level needs at least one prompt (got none)")
    if any(not g for g in golds):
        raise UdsInputError("chance level: a prompt without a gold answer")
    return fmean(hit(p, g) for p, g in zip(pools, golds))


# -- from an audit's database and prompt rows ---------------------------------------------------

def relation_pools(db: FactDB, rows: Sequence[PromptRow]) -> list[list[str]]:
    """Per row, the objects of the triples of its relation (alias-canonical) that are not
    alias-equivalent to its target: what the relation holds after the target's deletion."""
    by_relation: dict[str, list] = defaultdict(list)
    for t in db.triples:
        by_relation[db.canonical("relation", t.relation)].append(t)
    return [[t.object for t in by_relation[db.canonical("relation", r.relation)]
             if not db.equivalent(t, r.subject, r.relation, r.gold)] for r in rows]


def prompt_chances(db: FactDB, rows: Sequence[PromptRow]) -> list[tuple[float, float]]:
    """Per row: (majority, uniform) expected EM of the subject-blind guesser."""
    return [(majority_hit(p, g), uniform_hit(p, g))
            for p, g in zip(relation_pools(db, rows), (gold_set(db, r) for r in rows))]


def chance_summary(db: FactDB, rows: Sequence[PromptRow]) -> dict:
    """{n_prompts, chance, chance_uniform} over `rows` (count-weighted)."""
    pools, golds = relation_pools(db, rows), [gold_set(db, r) for r in rows]
    return {"n_prompts": len(rows), "chance": chance_rate(pools, golds),
            "chance_uniform": chance_rate(pools, golds, uniform_hit)}


def set_chances(sets: Sequence[AuditSet]) -> list[dict]:
    """One row per (variant, style) of `sets`, every prompt row of its file, with the database
    opened as the audit opens it: {variant, style, prompt_file, n_prompts, chance, chance_uniform}."""
    out = []
    for s in sets:
        db = s.open_db()
        for style, rows in s.prompts.items():
            out.append({"variant": s.variant, "style": style,
                        "prompt_file": s.prompt_dir / f"prompts_{STYLES[style]}.jsonl", **chance_summary(db, rows)})
    return out
