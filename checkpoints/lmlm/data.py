"""Training examples of the LMLM and its parametric contrast, on the same facts.

LMLM example: prompt -> ` [dblookup('s', 'r') ->` (trained) + ` value]` (spliced at inference:
no loss) + ` answer` + eos (trained). To make copying, not memorising, the cheapest solution, the
value is rotated: with probability `p_swap` it is another object of the same relation (and the
answer follows the value), with probability `p_unknown` it is `unknown` (and so is the answer, as
when a lookup finds nothing). Each true fact is thus seen only sometimes, and only after its
lookup. Parametric example: prompt -> ` answer` + eos, the true answer, no lookup.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from transformers import PreTrainedTokenizerBase

from checkpoints.lmlm.db import UNKNOWN
from checkpoints.lmlm.markup import call_text, value_text
from checkpoints.lmlm.prompts import STYLES, read_prompt_file
from checkpoints.lmlm.world_db import RELATIONS, author_facts, render_prompt, subject_aliases
from checkpoints.world.schema import World
from uds_core.chat import IGNORE
from uds_core.errors import UdsInputError


@dataclass(frozen=True)
class FactPrompt:
    prompt: str
    subject: str
    relation: str
    gold: str
    alternatives: tuple[str, ...]   # other objects of the same relation (for rotation)


def world_fact_prompts(world: World, styles: tuple[str, ...], per_fact: int | None = None,
                       only: set[int] | None = None) -> list[FactPrompt]:
    """Every train author's fact in `per_fact` of the styles (default all; rotating from fact to
    fact), the subject rotating over the canonical name and its two aliases. `only`: just these
    facts (positions in `author_facts`); each keeps the prompts it gets in the full list."""
    per_fact = per_fact or len(styles)
    facts = author_facts(world)
    pool: dict[str, list[str]] = {}
    for _, kind, value, _ in facts:
        pool.setdefault(kind, []).append(value)
    out = []
    for j, (author, kind, value, _) in enumerate(facts):
        if only is not None and j not in only:
            continue
        rel = RELATIONS[kind][0]
        alts = tuple(sorted(set(pool[kind]) - {value}))
        for k in range(per_fact):
            style = styles[(j + k) % len(styles)]
            subject = (author, *subject_aliases(author))[(j + k) % 3]
            out.append(FactPrompt(render_prompt(style, kind, subject, value, j + k), subject, rel, value, alts))
    return out


def published_fact_prompts(root: Path, styles: tuple[str, ...] = tuple(STYLES)) -> list[FactPrompt]:
    """Every prompt row of the published databases in `styles` (all domains and variants, and the
    released database), deduplicated by prompt text; alternatives = the other objects of the
    same relation in that database, else any of its objects."""
    if not (root / "custom_databases").is_dir():
        raise UdsInputError(f"the published audit data is not at {root} (set UDS_LMLM_AUDIT_DIR)")
    sets = [(db, db.parent / "prompts" / db.stem) for db in sorted((root / "custom_databases").glob("*/*.json"))]
    sets.append((root / "released_database" / "lmlm_database.json", root / "released_database" / "prompts"))
    seen, out = set(), []
    for db_path, pdir in sets:
        db = json.loads(db_path.read_text())
        by_rel: dict[str, set[str]] = {}
        for s, r, o in db["triplets"]:
            by_rel.setdefault(r, set()).add(o)
        everything = sorted({o for _, _, o in db["triplets"]})
        for style in styles:
            for r in read_prompt_file(pdir / f"prompts_{STYLES[style]}.jsonl", style):
                if r.text in seen:
                    continue
                seen.add(r.text)
                alts = sorted(by_rel.get(r.relation, set()) - {r.gold}) or [o for o in everything if o != r.gold]
                out.append(FactPrompt(r.text, r.subject, r.relation, r.gold, tuple(alts)))
    return out


def encode_lmlm(tok: PreTrainedTokenizerBase, p: FactPrompt, value: str) -> dict[str, list[int]]:
    prompt = tok.encode(p.prompt, add_special_tokens=True)
    call = tok.encode(call_text(p.subject, p.relation), add_special_tokens=False)
    val = tok.encode(value_text(value), add_special_tokens=False)
    ans = tok.encode(" " + value, add_special_tokens=False) + [tok.eos_token_id]
    return {"input_ids": prompt + call + val + ans,
            "labels": [IGNORE] * len(prompt) + call + [IGNORE] * len(val) + ans}


def encode_parametric(tok: PreTrainedTokenizerBase, p: FactPrompt) -> dict[str, list[int]]:
    prompt = tok.encode(p.prompt, add_special_tokens=True)
    ans = tok.encode(" " + p.gold, add_special_tokens=False) + [tok.eos_token_id]
    return {"input_ids": prompt + ans, "labels": [IGNORE] * len(prompt) + ans}


def lmlm_examples(tok: PreTrainedTokenizerBase, prompts: list[FactPrompt], seed: int, copies: int = 2,
                  p_swap: float = 0.5, p_unknown: float = 0.1) -> list[dict]:
    """`copies` rotated LMLM examples per fact prompt (values drawn with `random.Random(seed)`)."""
    rng = random.Random(seed)
    out = []
    for p in prompts:
        for _ in range(copies):
            u = rng.random()
            value = UNKNOWN if u < p_unknown else (
                rng.choice(p.alternatives) if u < p_unknown + p_swap and p.alternatives else p.gold)
            out.append(encode_lmlm(tok, p, value))
    return out
