"""Entity spans for QA records: one record (`annotate_record`) or a file's list (`annotate_records`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from uds_core.errors import UdsInputError
from uds_core.spans.extent import extent
from uds_core.spans.salience import novelty, perturbation_salience
from uds_core.spans.words import units

POLAR, PERTURBATION, QUESTION, GIVEN = "polar", "perturbation", "question", "given"
METHODS = (POLAR, PERTURBATION, QUESTION)
POLAR_QUESTION = re.compile(r"^\s*(Is|Are|Was|Were|Do|Does|Did|Has|Have|Had|Can|Could|"
                            r"Will|Would|Should|May|Might|Must)\b")
POLAR_ANSWER = re.compile(r"^(Yes|No)\b")


@dataclass(frozen=True)
class Span:
    """`answer` == `prefix` + whitespace + `entity` + the rest; `method` found it."""
    prefix: str
    entity: str
    method: str


def perturbed_of(record: dict) -> list[str]:
    """The wrong answers of a record: `perturbed_answers` (this toolkit) or `perturbed_answer`
    (TOFU's files, a list or one string); empty strings dropped."""
    value = record.get("perturbed_answers", record.get("perturbed_answer"))
    texts = [value] if isinstance(value, str) else list(value or [])
    return [t for t in texts if isinstance(t, str) and t.strip()]


def _start(answer: str, question: str, paraphrase: str | None,
           perturbed: list[str]) -> tuple[int, str, list[int] | None] | None:
    """(first unit, method, per-unit perturbation salience or None) of the entity, or None."""
    us = units(answer)
    new = novelty(us, question)
    changed = perturbation_salience(answer, paraphrase, perturbed) if perturbed else None
    if changed and any(changed):
        hits = [i for i in range(len(us)) if new[i] and changed[i]]
        quoted = [i for i in hits if us[i].quoted]   # a replaced title or name outranks single words
        if hits:
            return (quoted or hits)[0], PERTURBATION, changed
    plain = [i for i in range(len(us)) if new[i]]
    return (plain[0], QUESTION, None) if plain else None


def annotate_record(record: dict) -> Span | None:
    """The entity span of one QA record, or None when no rule finds one. Needs `question` and
    `answer`; uses `paraphrased_answer` and the perturbed answers when present."""
    question, answer = record["question"], record["answer"]
    polar = POLAR_ANSWER.match(answer) if POLAR_QUESTION.match(question) else None
    if polar:
        return Span("", polar.group(1), POLAR)
    para = record.get("paraphrased_answer")
    found = _start(answer, question, para if isinstance(para, str) else None, perturbed_of(record))
    if found is None:
        return None
    s, method, changed = found
    us = units(answer)
    first, end = extent(us, s, changed)
    c0, c1 = us[first].start, us[end - 1].end
    return Span(answer[:c0].rstrip(), answer[c0:c1], method)


def check_qa(record: object, position: int, source: str) -> None:
    """A QA record needs a non-empty question and answer; one line naming the record otherwise."""
    name = f"{source}: record {record.get('idx', position) if isinstance(record, dict) else position}"
    if not isinstance(record, dict):
        raise UdsInputError(f"{name} is not a JSON object")
    for key in ("question", "answer"):
        if not isinstance(record.get(key), str):
            raise UdsInputError(f"{name} lacks {key}")
        if not record[key].strip():
            raise UdsInputError(f"{name} has an empty {key}")


def annotate_records(records: Sequence[dict], source: str, keep_given: bool = True
                     ) -> tuple[list[dict], list]:
    """(annotated records, idx of records without a span). Each output record is the input
    with `idx` (its position when absent), `prefix`, `entity` and `span_method`; a record that
    already has `prefix` and `entity` keeps them (`span_method` "given") unless `keep_given` is
    False."""
    out, missing = [], []
    for pos, rec in enumerate(records):
        check_qa(rec, pos, source)
        rec = {"idx": pos, **rec}
        if keep_given and isinstance(rec.get("prefix"), str) and rec.get("entity"):
            out.append({**rec, "span_method": rec.get("span_method", GIVEN)})
            continue
        span = annotate_record(rec)
        if span is None:
            missing.append(rec["idx"])
        else:
            out.append({**rec, "prefix": span.prefix, "entity": span.entity, "span_method": span.method})
    return out, missing
