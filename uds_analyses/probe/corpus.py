"""Probe corpora (spec-probes §2.1): JSONL passages, and the tiny world's documents.

One JSON object per line: `doc_id`, `title`, `position` (ordinal within the document), `text`;
optional `question`, `answer` (QA for the semantic side), `entity` (the gold span of the answer;
default the answer), `topic` (for the `medium` prompt), `prefix` (the text given at the `prefix`
level instead of the first words; `text` must start with it), `target` (false for distractor
documents; default true) and `group` (a label the summary reports separately, e.g. "holdout";
default "target" / "distractor").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from uds_analyses.probe.passages import by_author
from uds_core.data import jsonl_values
from uds_core.errors import UdsInputError
from uds_core.prompts import raw_prompt, raw_qa

PREFIX_WORDS = 10    # default prefix length in words (spec-probes §2.2)
REQUIRED = ("doc_id", "title", "position", "text")


@dataclass(frozen=True)
class Passage:
    doc_id: str
    title: str
    position: int
    text: str
    target: bool = True
    question: str | None = None
    answer: str | None = None
    entity: str | None = None
    topic: str | None = None
    prefix: str | None = None
    group: str | None = None

    @property
    def label(self) -> str:
        """The summary group: `group`, else "target" / "distractor"."""
        return self.group or ("target" if self.target else "distractor")

    @property
    def gold(self) -> str | None:
        """The string a semantic hit looks for: the entity, else the answer."""
        return self.entity or self.answer


def passage_from_row(row: object, where: str) -> Passage:
    """One validated passage; `where` names the row in error messages."""
    if not isinstance(row, dict):
        raise UdsInputError(f"{where}: expected a JSON object")
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise UdsInputError(f"{where}: missing field(s) {', '.join(missing)}")
    if not isinstance(row["text"], str) or not row["text"].strip():
        raise UdsInputError(f"{where}: 'text' must be a non-empty string")
    if not isinstance(row["position"], int) or isinstance(row["position"], bool):
        raise UdsInputError(f"{where}: 'position' must be an integer")
    prefix = row.get("prefix")
    if prefix is not None and not row["text"].startswith(prefix):
        raise UdsInputError(f"{where}: 'text' does not start with its 'prefix'")
    opt = {k: (None if row.get(k) is None else str(row[k]))
           for k in ("question", "answer", "entity", "topic", "group")}
    return Passage(str(row["doc_id"]), str(row["title"]), row["position"], row["text"],
                   bool(row.get("target", True)), prefix=prefix, **opt)


def read_corpus(path: str | Path) -> list[Passage]:
    """Passages of a JSONL file, in file order; a bad line raises UdsInputError naming it."""
    p = Path(path)
    if not p.is_file():
        raise UdsInputError(f"no corpus file at {str(path)!r}")
    out = [passage_from_row(row, f"{p}: line {n}") for n, row in jsonl_values(p.read_text(encoding="utf-8"), p)]
    return check_corpus(out, str(p))


def check_corpus(passages: Sequence[Passage], name: str) -> list[Passage]:
    """Non-empty, at least one target passage, unique (doc_id, position)."""
    if not passages:
        raise UdsInputError(f"corpus {name} has no passage")
    if not any(p.target for p in passages):
        raise UdsInputError(f"corpus {name} has no target passage (every row has target: false)")
    seen: set[tuple[str, int]] = set()
    for p in passages:
        if (p.doc_id, p.position) in seen:
            raise UdsInputError(f"corpus {name}: passage ({p.doc_id!r}, {p.position}) appears twice")
        seen.add((p.doc_id, p.position))
    return list(passages)


def qa_documents(items: Sequence[dict], target: bool, raw: bool, group: str | None = None) -> list[Passage]:
    """QA items grouped by author (in order), one passage per item. `raw`: the passage is the
    raw QA document `Question: q\\nAnswer: a` (what the tiny models were fine-tuned on; the
    `prefix` level gives the question and checks the answer), else the answer alone (TOFU)."""
    out, count = [], {}
    names = {a: name for name, its in by_author(items).items() for a in {it.get("author") or "unknown" for it in its}}
    for it in items:
        author = names[it.get("author") or "unknown"]   # the name the chat levels ask about
        pos = count[author] = count.get(author, -1) + 1
        text = raw_qa(it["question"], it["answer"]) if raw else it["answer"]
        out.append(Passage(author, author, pos, text, target, it["question"], it["answer"],
                           it.get("entity") or None, it["question"].rstrip("?").strip(),
                           raw_prompt(it["question"]) if raw else None, group))
    return out


def short_answers(items: Sequence[dict], prefix_words: int = PREFIX_WORDS) -> bool:
    """Whether the median answer is too short for a `prefix_words` prefix plus a passage to
    recall (fewer than twice as many words): then passages are raw QA documents."""
    lengths = sorted(len(it["answer"].split()) for it in items)
    return bool(lengths) and lengths[len(lengths) // 2] < 2 * prefix_words


def qa_corpus(targets: Sequence[dict], distractors: dict[str, Sequence[dict]], name: str) -> list[Passage]:
    """Target QA documents (by author, group "forget") + distractor ones (group -> items); raw QA
    passages when answers are short (the synthetic world's one-sentence answers), else answers
    (TOFU's)."""
    raw = short_answers(targets)
    others = [p for group, items in distractors.items() for p in qa_documents(items, False, raw, group)]
    return check_corpus(qa_documents(targets, True, raw, "forget") + others, name)


def world_corpus(world, distractors: int | None = None) -> list[Passage]:
    """A tiny world's corpus: forget authors' QA documents (targets) and, as distractors,
    holdout authors' (never trained on) then `retain_eval` authors' (trained on by full and
    retain); `distractors` caps the number of distractor authors."""
    groups = {"holdout": list(world.holdout), "retain": list(world.retain_eval)}
    if distractors is not None:
        authors = [it.get("author") or "unknown" for items in groups.values() for it in items]
        keep = set(list(dict.fromkeys(authors))[:distractors])
        groups = {g: [it for it in items if (it.get("author") or "unknown") in keep] for g, items in groups.items()}
    return qa_corpus(list(world.forget), groups, f"tiny:{world.kind}")
