"""Input construction and entity-span alignment (spec §2.1-2.3)."""

import pytest

from tests.engine_fixtures import RECORDS, make_tokenizer
from uds_core import prompts as P


@pytest.fixture(scope="module")
def tok():
    return make_tokenizer()


def _rec(**kw):
    base = {"idx": 9, "question": "Where was the author born?", "answer": "He was born in Paris, France.",
            "prefix": "He was born in", "entity": "Paris"}
    return {**base, **kw}


def test_prompt_and_reference_normalisation():
    assert P.build_prompt("Q?", "") == "Question: Q?\nAnswer: "
    assert P.normalise_reference("Answer: He was", "born") == " born"
    assert P.normalise_reference("Answer: ", "Yes.") == "Yes."            # prompt ends in a space
    assert P.normalise_reference("Answer: x", " born") == " born"         # already spaced
    assert P.normalise_reference("Answer: \"", "Fiction\"") == " Fiction\""  # quote items gain a space
    assert P.normalise_reference("Answer: x", "") == ""
    assert P.continuation("abc def", "abc") == " def" and P.continuation("xyz", "abc") == "xyz"


def test_ids_are_concatenated_never_retokenized(tok):
    item = P.prepare_item(_rec(), tok)
    assert item.prompt_ids == tuple(tok.encode(item.prompt, add_special_tokens=True))
    assert item.prompt_ids[0] == tok.bos_token_id
    assert item.ref_ids == tuple(tok.encode(" Paris, France.", add_special_tokens=False))
    assert item.input_ids == item.prompt_ids + item.ref_ids
    assert tok.bos_token_id not in item.ref_ids and tok.eos_token_id not in item.input_ids


def test_eval_positions_predict_the_entity_tokens(tok):
    for item in P.prepare_items(RECORDS, tok)[0]:
        ids = item.input_ids
        assert [ids[p + 1] for p in item.eval_positions] == list(item.target_ids)
        assert item.eval_positions.start == len(item.prompt_ids) - 1 + item.span[0]
        assert P.entity_of(RECORDS[item.idx]).strip() in tok.decode(list(item.target_ids))


def test_quote_prefix_item(tok):
    item = P.prepare_item(RECORDS[1], tok)
    assert item.prompt.endswith('writes "') and item.reference == ' Historical Fiction" novels.'
    assert item.span[0] == 0 and tok.decode(list(item.target_ids)).strip() == "Historical Fiction"


def test_empty_prefix_item(tok):
    item = P.prepare_item(RECORDS[2], tok)
    assert item.prompt.endswith("Answer: ") and item.reference.startswith("Yes,")
    assert item.span == (0, 1) and tok.decode(list(item.target_ids)) == "Yes"


def test_skip_reasons(tok):
    prepared, skipped = P.prepare_items(RECORDS, tok)
    assert [s.idx for s in skipped] == [5] and skipped[0].reason == P.SPAN_NOT_FOUND
    assert [it.idx for it in prepared] == [0, 1, 2, 3, 4]
    empty = P.prepare_item(_rec(answer="He was born in", entity="Paris"), tok)
    assert empty.reason == P.INVALID_CONTEXT


def test_entity_search_fallbacks():
    assert P.entity_char_range(" Paris, France.", "Paris") == (1, 6)
    assert P.entity_char_range(" Paris, France.", "Paris ") == (1, 6)        # stripped
    assert P.entity_char_range("a Paris", "x") is None
    assert P.entity_char_range("abc", "") is None


def test_partial_overlap_tokens_are_included():
    # tokens " Chil" [0,5) and "e." [5,7): the entity "Chile" ends inside the second one
    assert P.span_from_offsets([(0, 5), (5, 7)], 1, 6) == (0, 2)
    assert P.span_from_offsets([(0, 1), (1, 6), (6, 7)], 1, 6) == (1, 2)  # touching edges excluded
    assert P.span_from_offsets([(0, 1)], 3, 4) is None


def test_gt_entity_overrides_entity(tok):
    item = P.prepare_item(_rec(entity="nowhere", gt_entity="France"), tok)
    assert tok.decode(list(item.target_ids)).strip() == "France"


class SlowTok:
    """A non-fast tokenizer: one id per character, BOS = 0."""
    is_fast = False

    def encode(self, text, add_special_tokens=True):
        return ([0] if add_special_tokens else []) + [ord(c) for c in text]


def test_slow_tokenizer_fallback():
    slow = SlowTok()
    item = P.prepare_item(_rec(), slow)
    assert item.span == (1, 6) and "".join(map(chr, item.target_ids)) == "Paris"
    assert P.span_by_subsequence(slow, slow.encode("xParis", False), "Paris") == (1, 6)
    assert P.prepare_item(_rec(entity="Rome"), slow).reason == P.SPAN_NOT_FOUND
