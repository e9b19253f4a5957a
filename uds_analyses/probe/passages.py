"""Long-passage probe corpus: each author's text cut into ordered passages of a few
sentences, probed from the sentence boundaries inside each passage.

Which text: the synthetic world's `forget_bios` never reach a model's training data (they feed the
tokenizer and some methods' knowledge-present pool only), so recalling them verbatim is not a
question the `full` model can answer. The text `full` did train on is each author's QA answers, one
sentence each; an author's text here is those answers joined by spaces in the world's item order.
Training draws its examples in a seeded random order every epoch, so two answers were never
adjacent in training: a continuation that crosses a sentence boundary asks for the next fact
without having seen the order (docs/probe.md says what that means for the rates).

Each sentence keeps its QA item (the semantic side of the passage it belongs to).

A second source, `bios`, is for a model that did train on passages: the `pos_bio` pool model
fine-tunes on the forget biographies in whole-sentence chunks of at most 64 tokens
(`checkpoints.methods.pools.sentence_chunks`), so those chunks, in order, are its passages; each
sentence gets the QA item whose entity it states. `full` never saw them: its verbatim rate there is
the chance level, its semantic accuracy its knowledge of the same facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from checkpoints.world.tofu import author_name
from uds_core.errors import UdsInputError

SENTENCES_PER_PASSAGE = 3
SOURCES = ("answers", "bios")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")   # the split `sentence_chunks` trains on


@dataclass(frozen=True)
class LongPassage:
    doc_id: str                    # the author (one document per author)
    position: int                  # 0-based order of the passage within its document
    sentences: tuple[str, ...]
    qa: tuple[dict | None, ...]    # the QA item of each sentence (None: no fact), same order and length
    target: bool = True
    group: str = "forget"

    @property
    def text(self) -> str:
        return " ".join(self.sentences)


@dataclass(frozen=True)
class Cut:
    """A prefix-level probe: the passage up to a sentence boundary, and the rest to recall."""

    start: int      # index in the passage of the continuation's first sentence (>= 1)
    prefix: str     # text[:offset]: the sentences before `start`
    rest: str       # text[offset + 1:]: the sentences from `start` on


def chunks(n: int, size: int) -> list[tuple[int, int]]:
    """[start, end) sentence ranges of consecutive passages of `size` sentences. A one-sentence
    remainder joins the previous passage: a passage needs an inner boundary to be probed."""
    if size < 2:
        raise UdsInputError(f"a passage needs at least 2 sentences (got {size})")
    spans = [(a, min(a + size, n)) for a in range(0, n, size)]
    if len(spans) > 1 and spans[-1][1] - spans[-1][0] < 2:
        spans[-2:] = [(spans[-2][0], n)]
    return spans


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph, split after . ! or ? followed by whitespace."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def passages_of(doc_id: str, sentences: Sequence[str], qa: Sequence[dict | None], spans: Sequence[tuple[int, int]],
                target: bool = True, group: str = "forget") -> list[LongPassage]:
    """The passages of one document: sentence ranges `spans`, in order, positions 0, 1, ..."""
    return [LongPassage(doc_id, k, tuple(sentences[a:b]), tuple(qa[a:b]), target, group)
            for k, (a, b) in enumerate(spans)]


def document_passages(doc_id: str, items: Sequence[dict], size: int = SENTENCES_PER_PASSAGE,
                      target: bool = True, group: str = "forget") -> list[LongPassage]:
    """One author's QA items (in order) as passages: each answer is a sentence."""
    sentences = [it["answer"].strip() for it in items]
    return passages_of(doc_id, sentences, items, chunks(len(sentences), size), target, group)


def attach_facts(sentences: Sequence[str], items: Sequence[dict]) -> list[dict | None]:
    """Per sentence, the first not yet attached item whose entity the sentence contains (None if
    none): each fact goes to one sentence even when two facts share a value."""
    free, out = list(items), []
    for s in sentences:
        it = next((x for x in free if x.get("entity") and x["entity"] in s), None)
        if it is not None:
            free.remove(it)
        out.append(it)
    return out


def spans_of(groups: Sequence[str]) -> list[tuple[int, int]]:
    """Sentence ranges of consecutive chunks of text (each a run of whole sentences)."""
    spans, a = [], 0
    for g in groups:
        n = len(split_sentences(g))
        spans.append((a, a + n))
        a += n
    return spans


def cuts(p: LongPassage) -> list[Cut]:
    """Every inner sentence boundary of the passage, first to last."""
    out = []
    for j in range(1, len(p.sentences)):
        offset = len(" ".join(p.sentences[:j]))
        out.append(Cut(j, p.text[:offset], p.text[offset + 1:]))
    return out


def by_author(items: Sequence[dict]) -> dict[str, list[dict]]:
    """QA items grouped by author, authors and items in their original order, each under the
    name the chat levels ask about (a TOFU world's placeholder ids are replaced by the name its
    questions use: `checkpoints.world.tofu.author_name`)."""
    out: dict[str, list[dict]] = {}
    for it in items:
        out.setdefault(it.get("author") or "unknown", []).append(it)
    named: dict[str, list[dict]] = {}
    for a, its in out.items():
        name = author_name(a, its)
        named[name if name not in named else a] = its   # two authors never share a document
    return named


def world_passages(world, size: int = SENTENCES_PER_PASSAGE, distractors: int | None = None) -> list[LongPassage]:
    """Forget authors' passages (targets) then holdout authors' (never trained on: the chance
    level), the first `distractors` holdout authors when given."""
    hold = list(by_author(world.holdout).items())[:distractors]
    out = [p for a, its in by_author(world.forget).items() for p in document_passages(a, its, size)]
    out += [p for a, its in hold for p in document_passages(a, its, size, target=False, group="holdout")]
    if not out:
        raise UdsInputError(f"tiny:{world.kind} has no forget QA to build passages from")
    return out


def bio_passages(world, chunker, distractors: int | None = None) -> list[LongPassage]:
    """Forget biographies cut as `chunker(text) -> [chunk]` cuts them for training (targets, with
    their facts' QA), then the first `distractors` other-entity biographies (trained on by no
    model probed here, no QA; named by their first two words, the entity's name)."""
    authors = by_author(world.forget)
    if len(authors) != len(world.forget_bios):
        raise UdsInputError(f"{len(world.forget_bios)} forget biographies for {len(authors)} forget authors")
    out = []
    for (name, items), bio in zip(authors.items(), world.forget_bios):
        sentences = split_sentences(bio)
        out += passages_of(name, sentences, attach_facts(sentences, items), spans_of(chunker(bio)))
    for bio in list(world.other_bios)[:distractors]:
        sentences = split_sentences(bio)
        out += passages_of(" ".join(bio.split()[:2]), sentences, [None] * len(sentences), spans_of(chunker(bio)),
                           target=False, group="other")
    return out
