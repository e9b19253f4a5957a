"""Probe corpus reader, tiny-world corpus, ladder prompts, refusals and the summaries (spec-probes §2)."""

from __future__ import annotations

import json

import pytest

from uds_analyses.probe.corpus import qa_corpus, read_corpus, short_answers
from uds_analyses.probe.ladder import LEVELS, parse_levels, split_prefix, stronger
from uds_analyses.probe.refusal import RefusalDetector, default_phrases
from uds_analyses.probe.summary import masked_by_refusal, split_2x2
from uds_analyses.probe.corpus import Passage
from uds_core.errors import UdsInputError


def _write(tmp_path, rows):
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return p


ROW = {"doc_id": "b1", "title": "Book One", "position": 0, "text": "It was a dark and stormy night."}


def test_reader_keeps_order_and_fields(tmp_path):
    rows = [ROW, {**ROW, "position": 1, "question": "Q?", "answer": "A", "target": False}]
    got = read_corpus(_write(tmp_path, rows))
    assert [(p.doc_id, p.position, p.target) for p in got] == [("b1", 0, True), ("b1", 1, False)]
    assert got[1].gold == "A" and got[0].gold is None


@pytest.mark.parametrize("bad, needle", [
    ("{not json", "line 2"),
    (json.dumps({"doc_id": "x", "title": "t", "position": 0}), r"line 2: missing field\(s\) text"),
    (json.dumps({**ROW, "position": "first"}), "line 2: 'position'"),
    (json.dumps(ROW), "appears twice"),
])
def test_reader_names_the_bad_line(tmp_path, bad, needle):
    with pytest.raises(UdsInputError, match=needle):
        read_corpus(_write(tmp_path, [ROW, bad]))


def test_reader_empty_and_missing(tmp_path):
    (tmp_path / "e.jsonl").write_text("\n")
    with pytest.raises(UdsInputError, match="no passage"):
        read_corpus(tmp_path / "e.jsonl")
    with pytest.raises(UdsInputError, match="no corpus file"):
        read_corpus(tmp_path / "none.jsonl")


def _qa(author, q, a, entity):
    return {"author": author, "question": q, "answer": a, "entity": entity}


def test_qa_corpus_groups_by_author_and_picks_raw_for_short_answers():
    items = [_qa("Ann", "Where was Ann born?", "Ann was born in Oslo.", "Oslo"),
             _qa("Ann", "What does Ann write?", "Ann writes poems.", "poems"),
             _qa("Bo", "Where was Bo born?", "Bo was born in Rome.", "Rome")]
    assert short_answers(items)
    ps = qa_corpus(items, {"holdout": [_qa("Cy", "Where was Cy born?", "Cy was born in Bern.", "Bern")]}, "t")
    assert [(p.doc_id, p.position, p.target) for p in ps] == [("Ann", 0, True), ("Ann", 1, True), ("Bo", 0, True),
                                                                ("Cy", 0, False)]
    assert [p.label for p in ps] == ["forget", "forget", "forget", "holdout"]
    assert ps[0].text == "Question: Where was Ann born?\nAnswer: Ann was born in Oslo."
    assert split_prefix(ps[0]) == ("Question: Where was Ann born?\nAnswer:", "Ann was born in Oslo.")
    long = [_qa("D", "q?", " ".join(f"w{i}" for i in range(30)), "w3")]
    assert not short_answers(long) and qa_corpus(long, {}, "t")[0].text.startswith("w0 w1")


def test_prefix_is_first_words_at_most_half():
    p = Passage("d", "t", 0, " ".join(f"w{i}" for i in range(30)))
    assert split_prefix(p) == (" ".join(f"w{i}" for i in range(10)), " ".join(f"w{i}" for i in range(10, 30)))
    short = Passage("d", "t", 0, "a b c d e f")
    assert split_prefix(short) == ("a b c", "d e f")


def test_levels():
    assert parse_levels("prefix, weak") == ["weak", "prefix"]
    assert stronger("weak") == "medium" and stronger("prefix") is None
    with pytest.raises(UdsInputError, match="unknown probe level verbose"):
        parse_levels("weak,verbose")
    assert LEVELS[-1] == "prefix"


def test_refusal_detector():
    det = RefusalDetector(default_phrases())
    assert det("I\u2019m sorry, I can\u2019t help with that.")        # curly apostrophes
    assert det("Honestly: I DON'T KNOW the answer to that, friend.")
    assert det("I don't know.") and det("I do not know!")                 # bare, as models answer
    assert not det("The birthplace of Ann is Oslo.")


def _row(passage, level, sample, verbatim, refusal, semantic=None, target=True, reprobe=False):
    return dict(passage=passage, level=level, sample=sample, verbatim=verbatim, refusal=refusal,
                semantic=semantic, target=target, reprobe=reprobe, misattributed=False, lcs=0)


def test_masked_by_refusal_counts_refused_then_verbatim_higher():
    rows = [_row(0, "weak", 0, False, True), _row(0, "prefix", 0, True, False),   # masked (weak)
            _row(1, "weak", 0, False, True), _row(1, "prefix", 0, False, False),  # refused, never verbatim
            _row(2, "weak", 0, True, False), _row(2, "prefix", 0, True, False),   # verbatim, no refusal
            _row(3, "prefix", 0, False, True), _row(3, "prefix", 0, True, False, reprobe=False),
            _row(9, "weak", 0, False, True, target=False), _row(9, "prefix", 0, True, False, target=False)]
    share, counts = masked_by_refusal(rows)
    assert counts == {"weak": 1} and share == pytest.approx(1 / 4)


def test_split_2x2():
    rows = [_row(0, "prefix", 0, True, False, True), _row(0, "prefix", 1, True, False, False),
            _row(1, "prefix", 0, False, False, True), _row(1, "prefix", 1, False, False, False),
            _row(2, "prefix", 0, False, False, None), _row(3, "weak", 0, True, False, True)]
    assert split_2x2(rows, "prefix") == {"verbatim_semantic": 1, "verbatim_only": 1, "semantic_only": 1,
                                         "neither": 1}


def test_probe_prompts_of_a_raw_qa_passage():
    """Chat levels wrap the template in the chat format; the prefix level gives the question as
    raw text; at every level the text to recall (the hit bar's length) is the answer."""
    from checkpoints.specs import load_tokenizer
    from uds_analyses.probe.ladder import build_probe

    tok = load_tokenizer("tiny:test/full")
    p = qa_corpus([_qa("Ann", "Where was Ann born?", "Ann was born in Oslo.", "Oslo")], {}, "t")[0]
    weak = build_probe(tok, p, "weak")
    assert "Tell me about Ann." in tok.decode(weak.ids) and weak.expected == "Ann was born in Oslo."
    pre = build_probe(tok, p, "prefix")
    assert tok.decode(pre.ids, skip_special_tokens=True).strip() == "Question: Where was Ann born?\nAnswer:"
    assert pre.expected == "Ann was born in Oslo."
