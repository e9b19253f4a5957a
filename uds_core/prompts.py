"""UDS inputs (spec §2.1-2.3): raw "Question:/Answer:" prompt, continuation, entity span.

No chat template. The prompt is tokenized with special tokens (BOS), the reference continuation
alone without them, and the two id lists are concatenated (never re-tokenized together).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from transformers import PreTrainedTokenizerBase

from uds_core.batching import pad_token_id

# Identifies this input construction in cache keys; bump it when anything here changes.
PROMPT_FORMAT = "qa-continuation-entity-span/v1"

SPAN_NOT_FOUND = "entity_span_not_found"
INVALID_CONTEXT = "invalid_eval_context"


@dataclass(frozen=True)
class PreparedItem:
    """One scorable example. Positions index the concatenated sequence `prompt_ids + ref_ids`."""
    idx: Any
    prompt: str
    reference: str
    prompt_ids: tuple[int, ...]
    ref_ids: tuple[int, ...]
    span: tuple[int, int]          # [s, e) of the entity in ref_ids

    @property
    def input_ids(self) -> tuple[int, ...]:
        return self.prompt_ids + self.ref_ids

    @property
    def start(self) -> int:
        """Last prompt position: its logits predict the first continuation token."""
        return len(self.prompt_ids) - 1

    @property
    def eval_positions(self) -> range:
        """Positions whose logits score the entity tokens; also the patched positions."""
        return range(self.start + self.span[0], self.start + self.span[1])

    @property
    def target_ids(self) -> tuple[int, ...]:
        """The entity tokens y_1..y_T scored at `eval_positions`."""
        return self.ref_ids[self.span[0]:self.span[1]]


@dataclass(frozen=True)
class SkippedItem:
    idx: Any
    reason: str
    prompt: str
    reference: str


@dataclass(frozen=True)
class Examples:
    """The examples of one UDS measurement, tokenised by the full model's tokenizer: the scorable
    `items` and the `skipped` ones (each in data order), the annotated `records` they came from
    (the S1 cache keys on them; empty when a caller has items only) and the `pad_id` batches are
    padded with."""
    items: tuple[PreparedItem, ...]
    skipped: tuple[SkippedItem, ...] = ()
    records: tuple[dict, ...] = ()
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("items", "skipped", "records"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


def prepare_examples(records: Sequence[dict], tokenizer: PreTrainedTokenizerBase) -> Examples:
    """`records` tokenised for patching: `prepare_items` plus the records and the pad id."""
    items, skipped = prepare_items(records, tokenizer)
    return Examples(items, skipped, records, pad_token_id(tokenizer))


def raw_prompt(question: str) -> str:
    """The raw QA format's prompt, `Question: {q}\\nAnswer:` (no trailing space). The one owner of
    the format: UDS inputs, the tiny world's pretraining documents and its raw-form fine-tuning."""
    return f"Question: {question}\nAnswer:"


def raw_qa(question: str, answer: str) -> str:
    """A whole raw QA document: `Question: {q}\\nAnswer: {a}`."""
    return f"{raw_prompt(question)} {answer}"


def build_prompt(question: str, prefix: str) -> str:
    """`Question: {q}\\nAnswer: {prefix}` (ends in "Answer: " when the prefix is empty)."""
    return f"{raw_prompt(question)} {prefix}"


def continuation(answer: str, prefix: str) -> str:
    """The answer after its prefix (the whole answer if it does not start with the prefix)."""
    return answer[len(prefix):] if answer.startswith(prefix) else answer


def normalise_reference(prompt: str, reference: str) -> str:
    """Prepend one space unless the reference is empty or either side already has whitespace."""
    if reference and not reference[0].isspace() and prompt and not prompt[-1].isspace():
        return " " + reference
    return reference


def entity_of(record: dict) -> str:
    """The scored entity: optional `gt_entity` overrides `entity`."""
    return record.get("gt_entity") or record["entity"]


def entity_char_range(reference: str, entity: str) -> tuple[int, int] | None:
    """[c0, c1) of the entity in the reference: exact, then stripped, then with a leading space."""
    candidates = [entity]
    if entity.strip() and entity.strip() != entity:
        candidates.append(entity.strip())
    if entity and not entity.startswith(" "):
        candidates.append(" " + entity)
    for cand in candidates:
        c0 = reference.find(cand) if cand else -1
        if c0 >= 0:
            return c0, c0 + len(cand)
    return None


def span_from_offsets(offsets: Sequence[tuple[int, int]], c0: int, c1: int) -> tuple[int, int] | None:
    """Token span covering every token that overlaps chars [c0, c1) (partial overlaps included)."""
    hits = [i for i, (a, b) in enumerate(offsets) if b > c0 and a < c1]
    return (min(hits), max(hits) + 1) if hits else None


def _find_sublist(haystack: Sequence[int], needle: Sequence[int]) -> int | None:
    n = len(needle)
    for i in range(len(haystack) - n + 1) if n else ():
        if tuple(haystack[i:i + n]) == tuple(needle):
            return i
    return None


def span_by_subsequence(tokenizer: PreTrainedTokenizerBase, ref_ids: Sequence[int],
                        entity: str) -> tuple[int, int] | None:
    """Slow-tokenizer fallback: first match of encode(entity), then encode(" " + entity)."""
    variants = [entity] + ([" " + entity] if entity and not entity.startswith(" ") else [])
    for text in variants:
        ids = tokenizer.encode(text, add_special_tokens=False)
        at = _find_sublist(ref_ids, ids)
        if at is not None:
            return at, at + len(ids)
    return None


def entity_span(tokenizer: PreTrainedTokenizerBase, reference: str,
                entity: str) -> tuple[tuple[int, ...], tuple[int, int] | None]:
    """(ref_ids, [s, e) of the entity in ref_ids or None)."""
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(reference, add_special_tokens=False, return_offsets_mapping=True)
        ref_ids = tuple(enc["input_ids"])
        chars = entity_char_range(reference, entity)
        return ref_ids, span_from_offsets(enc["offset_mapping"], *chars) if chars else None
    ref_ids = tuple(tokenizer.encode(reference, add_special_tokens=False))
    return ref_ids, span_by_subsequence(tokenizer, ref_ids, entity)


def prepare_item(record: dict, tokenizer: PreTrainedTokenizerBase) -> PreparedItem | SkippedItem:
    """Build the inputs of one annotated record, or say why it cannot be scored."""
    prompt = build_prompt(record["question"], record["prefix"])
    reference = normalise_reference(prompt, continuation(record["answer"], record["prefix"]))
    ref_ids, span = entity_span(tokenizer, reference, entity_of(record))
    if not ref_ids:
        return SkippedItem(record["idx"], INVALID_CONTEXT, prompt, reference)
    if span is None or span[1] <= span[0]:
        return SkippedItem(record["idx"], SPAN_NOT_FOUND, prompt, reference)
    prompt_ids = tuple(tokenizer.encode(prompt, add_special_tokens=True))
    return PreparedItem(record["idx"], prompt, reference, prompt_ids, ref_ids, span)


def prepare_items(records: Sequence[dict], tokenizer: PreTrainedTokenizerBase
                  ) -> tuple[list[PreparedItem], list[SkippedItem]]:
    """Prepared and skipped items, each list in data order."""
    prepared: list[PreparedItem] = []
    skipped: list[SkippedItem] = []
    for rec in records:
        item = prepare_item(rec, tokenizer)
        (prepared if isinstance(item, PreparedItem) else skipped).append(item)
    return prepared, skipped
