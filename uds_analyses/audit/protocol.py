"""The three interventions on the same prompts and the per-fact quantities (spec-probes §3.2-3.3).

FULL: database intact, lookups on. DEL-ON: the target's alias closure deleted (verified inside a
rolled-back transaction), lookups on; the lookup then runs over the database minus exactly those
ids, which is what the database answers after the DELETE. DEL-OFF: the same deletion, retrieval
off: every lookup returns `unknown`. Per fact `f`: L(f) = 1[Y(DEL-OFF) = o], R(f) = 1[Y(DEL-ON) = o
and Y(DEL-OFF) != o]; artefact (spec-probes §3.3, the source's definition) = Y(DEL-ON) = o while
no retained candidate in the DEL-ON trace is alias-equivalent to the target. DEL-OFF plays no part
in it, so a fact the model also answers with retrieval off counts, and so does a DEL-ON-correct
answer with an empty trace (a model that never looks up: every correct DEL-ON answer is an
artefact). Because deletion is verified, no retained candidate is ever equivalent, and the
artefact rate equals DEL-ON EM. `artefact_mediated` keeps the earlier, narrower quantity
(artefact and also DEL-OFF wrong, i.e. artefact and R), which equals R under verified deletion.
`evidence` = the DEL-ON lookup returned a gold-equivalent object from a retained
(non-equivalent) entry, i.e. explicit near-miss database evidence. `chance` / `chance_uniform`:
the prompt's expected EM for a guesser that knows only the relation and the database without the
target (`uds_analyses.audit.chance`), the level EM, L and the artefact rate are read against.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from checkpoints.lmlm.db import UNKNOWN, FactDB
from checkpoints.lmlm.generate import splice_generate
from checkpoints.lmlm.prompts import PromptRow
from uds_analyses.audit.chance import prompt_chances
from uds_analyses.audit.scoring import AnswerScore, gold_set, score_answer
from uds_core.gen_options import GenOptions

STATES = ("FULL", "DEL-ON", "DEL-OFF")


@dataclass
class FactResult:
    variant: str
    style: str
    fact_id: int
    subject: str
    relation: str
    gold: str
    deleted_ids: list[int]
    answers: dict[str, str] = field(default_factory=dict)
    scores: dict[str, AnswerScore] = field(default_factory=dict)
    leak: int = 0
    retrieval: int = 0
    artefact: int = 0
    artefact_mediated: int = 0
    evidence: int = 0
    chance: float = 0.0             # expected EM of the subject-blind guesser (uds_analyses.audit.chance)
    chance_uniform: float = 0.0

    def row(self) -> dict:
        return {"variant": self.variant, "style": self.style, "fact_id": self.fact_id, "subject": self.subject,
                "relation": self.relation, "gold": self.gold, "deleted_ids": self.deleted_ids,
                **{f"answer_{s}": self.answers[s] for s in STATES}, **{f"em_{s}": self.scores[s].exact for s in STATES},
                **{f"contains_{s}": self.scores[s].contains for s in STATES},
                "L": self.leak, "R": self.retrieval, "artefact": self.artefact,
                "artefact_mediated": self.artefact_mediated, "evidence": self.evidence,
                "chance": self.chance, "chance_uniform": self.chance_uniform}


@dataclass(frozen=True)
class AuditSettings:
    threshold: float = 0.75
    batch_size: int = 32
    max_new_tokens: int = 64
    limit: int | None = None      # N evenly spaced prompt rows per file (None: all)
    progress: bool = True
    chat: bool = False            # prompts as a user turn of the model's chat template (chat-tuned models)
    system_prompt: str | None = None   # with `chat`


def prompt_encoder(tok, settings: AuditSettings) -> Callable[[str], list[int]]:
    """Prompt text -> token ids: a user turn of the model's chat template under `settings.chat`,
    else the raw text with the tokenizer's special tokens."""
    if settings.chat:
        from uds_core.chat import chat_prompt_ids

        return lambda text: chat_prompt_ids(tok, text, settings.system_prompt)
    return lambda text: tok.encode(text, add_special_tokens=True)


def audit_rows(model, tok, db: FactDB, rows: list[PromptRow], variant: str, settings: AuditSettings,
               traces: list[dict] | None = None) -> list[FactResult]:
    """Run FULL, DEL-ON and DEL-OFF on `rows` (one prompt style) and score every fact; each
    lookup's candidates go to `traces` when given."""
    deleted = [frozenset(db.delete_verified(r.subject, r.relation, r.gold)) for r in rows]
    encode = prompt_encoder(tok, settings)
    prompts = [encode(r.text) for r in rows]
    log: dict[tuple[str, int], list[dict]] = {}

    def lookup_for(state: str):
        def lookup(i: int, s: str, rel: str) -> str:
            if state == "DEL-OFF":
                return UNKNOWN
            res = db.lookup(s, rel, settings.threshold, exclude=deleted[i] if state == "DEL-ON" else frozenset())
            log.setdefault((state, i), []).append({"call": [s, rel], "value": res.value,
                                                   "candidates": [c.to_dict() for c in res.candidates]})
            return res.value
        return lookup

    device = getattr(model, "device", "cpu")   # generate where the caller put the model
    opts = GenOptions(settings.batch_size, settings.max_new_tokens, device, progress=settings.progress)
    outs = {st: splice_generate(model, tok, prompts, lookup_for(st),
                                replace(opts, desc=f"{variant}/{rows[0].style}/{st}")) for st in STATES}
    results = []
    for i, (r, (chance, chance_uniform)) in enumerate(zip(rows, prompt_chances(db, rows))):
        golds = gold_set(db, r)
        fr = FactResult(variant, r.style, r.fact_id, r.subject, r.relation, r.gold, sorted(deleted[i]),
                        chance=chance, chance_uniform=chance_uniform)
        for st in STATES:
            fr.answers[st] = outs[st][i].answer
            fr.scores[st] = score_answer(outs[st][i].answer, golds)
        on, off = fr.scores["DEL-ON"].exact == 1.0, fr.scores["DEL-OFF"].exact == 1.0
        calls = log.get(("DEL-ON", i), [])
        retained_equiv = any(db.equivalent(_triple(c), r.subject, r.relation, r.gold)
                             for call in calls for c in call["candidates"])
        value_gold = any(score_answer(call["value"], golds).exact == 1.0 for call in calls)
        fr.leak, fr.retrieval = int(off), int(on and not off)
        fr.artefact = artefact_flag(on, retained_equiv)
        fr.artefact_mediated = int(fr.artefact and not off)
        fr.evidence = int(on and not off and value_gold)
        results.append(fr)
        if traces is not None:
            for st in ("FULL", "DEL-ON"):
                for call in log.get((st, i), []):
                    traces.append({"variant": variant, "style": r.style, "state": st, "fact_id": r.fact_id,
                                   "target": [r.subject, r.relation, r.gold], "deleted_ids": fr.deleted_ids, **call})
    return results


def artefact_flag(del_on_correct: bool, retained_equivalent: bool) -> int:
    """spec-probes §3.3: correct under DEL-ON while no retained retrieved candidate is
    gold-equivalent to the deleted fact (an empty trace has none). DEL-OFF is not consulted."""
    return int(del_on_correct and not retained_equivalent)


def _triple(c: dict):
    from checkpoints.lmlm.db import Triple

    return Triple(c["id"], *c["triple"])
