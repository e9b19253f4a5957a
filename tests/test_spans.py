"""Automatic entity spans (uds_core/spans) on records whose right span is known: written by hand here,
or generated with the tiny world's data (its generator knows each entity)."""

from __future__ import annotations

import json

import pytest

from uds_analyses.spans.agreement import agreement, relation, token_f1
from checkpoints.world.store import load_world
from uds_core.errors import UdsInputError
from uds_core.spans.annotate import annotate_record, annotate_records


def _span(**record):
    s = annotate_record(record)
    return (s.prefix, s.entity, s.method) if s else None


def test_polar_question_takes_the_yes_or_no():
    assert _span(question="Has she won an award?", answer="Yes, she won the Golden Quill.") == ("", "Yes", "polar")
    # not a yes/no question: "No" is an ordinary word here
    assert _span(question="Which word opens it?", answer="No one knows.")[2] == "question"


def test_perturbed_answers_written_from_the_answer():
    rec = {"question": "When was Ana Lopez born?", "answer": "Ana Lopez was born on April 8, 1966 in Lima.",
           "perturbed_answers": ["Ana Lopez was born on March 12, 1996 in Lima.",
                                 "Ana Lopez was born on June 1, 1946 in Lima."]}
    assert _span(**rec) == ("Ana Lopez was born on", "April 8, 1966", "perturbation")


def test_perturbed_answers_written_from_the_paraphrase():
    rec = {"question": "What genre does Ana Lopez write?",
           "answer": "Ana Lopez mostly writes in the genre of Historical Fiction.",
           "paraphrased_answer": "The primary genre of Ana Lopez is Historical Fiction.",
           "perturbed_answer": ["The primary genre of Ana Lopez is Science Fiction.",
                                "The primary genre of Ana Lopez is Cookbooks."]}
    assert _span(**rec) == ("Ana Lopez mostly writes in the genre of", "Historical Fiction", "perturbation")


def test_a_replaced_title_is_taken_whole_with_its_quotes():
    rec = {"question": "Name one of her books.", "answer": 'One of her leadership books is "Bold Steps: A Guide".',
           "perturbed_answers": ['One of her cooking books is "Salt and Fire".',
                                 'One of her gardening books is "Green Rows".']}
    assert _span(**rec) == ("One of her leadership books is", '"Bold Steps: A Guide"', "perturbation")


def test_plain_qa_starts_at_the_first_word_the_question_lacks():
    assert _span(question="What does Ana Lopez write about?",
                 answer="Ana Lopez writes about love, loss, and the sea. She lives in Lima.") == \
        ("Ana Lopez writes about", "love, loss, and the sea", "question")
    assert _span(question="Where does her father work?",
                 answer="Her father works at a hospital and her mother teaches.") == \
        ("Her father works at a", "hospital", "question")
    assert annotate_record({"question": "Is it so?", "answer": "It is so."}) is None   # nothing new: no guess


def test_records_are_numbered_kept_or_listed():
    recs = [{"question": "Where was Ana born?", "answer": "Ana was born in Lima."},
            {"question": "Is it so?", "answer": "It is so."},
            {"idx": 7, "question": "What is the answer?", "answer": "The answer is X.", "prefix": "The answer is",
             "entity": "X"}]
    out, missing = annotate_records(recs, "f.json")
    assert missing == [1] and [r["idx"] for r in out] == [0, 7]
    assert out[0]["entity"] == "Lima" and out[0]["span_method"] == "question" and out[1]["span_method"] == "given"
    out, _ = annotate_records(recs, "f.json", keep_given=False)
    assert out[1]["entity"] == "X" and out[1]["span_method"] == "question"
    with pytest.raises(UdsInputError, match="f.json: record 1 has an empty answer"):
        annotate_records([recs[0], {"question": "q?", "answer": " "}], "f.json")


def test_tiny_world_spans_are_found_exactly(test_world):
    """The test world's generator writes each wrong answer by replacing the entity: the
    perturbation rule must give back every generated span."""
    world = load_world("test", 0)
    given = world.uds_items()
    bare = [{k: v for k, v in r.items() if k not in ("prefix", "entity")} for r in world.forget]
    auto, missing = annotate_records(bare, "test world", keep_given=False)
    assert missing == [] and len(given) == len(world.forget)
    got = {r["idx"]: (r["prefix"], r["entity"]) for r in auto}
    assert {r["idx"]: (r["prefix"], r["entity"]) for r in given} == got
    assert agreement(auto, given)["exact"] == len(given)


def test_token_f1_and_relations_by_hand():
    # "civil engineer" vs "a civil engineer and a baker": 2 shared words of 2 and of 6 (articles
    # count): precision 1, recall 1/3, F1 = 2 * 1 * 1/3 / (1 + 1/3) = 0.5
    assert token_f1("civil engineer", "a civil engineer and a baker") == pytest.approx(0.5)
    assert token_f1("Lima", "Peru") == 0.0 and token_f1("Lima, Peru", "lima peru") == 1.0
    given = {"answer": "He was born in Lima, Peru.", "prefix": "He was born in", "entity": "Lima, Peru"}
    assert relation({**given, "entity": "Lima"}, given) == "inside"
    assert relation({**given, "prefix": "He was", "entity": "born in Lima, Peru"}, given) == "around"
    assert relation({**given, "prefix": "He", "entity": "was born"}, given) == "before"
    assert relation(None, given) == "none" and relation(dict(given), given) == "exact"
    json.dumps(agreement([{**given, "idx": 0, "span_method": "question"}], [{**given, "idx": 0}]))
