"""Long-passage probe: corpus builder, continuation scoring and position aggregation,
each against values worked out by hand on a small input; the CLI run on the `test` world."""

from __future__ import annotations

import json

import pytest

from uds_analyses.probe.matching import PassageIndex
from uds_analyses.probe.passage_run import score
from uds_analyses.probe.passage_summary import passages_summary, rate_by, split_2x2
from uds_analyses.probe.passages import (attach_facts, bio_passages, chunks, cuts, document_passages, spans_of,
                                     split_sentences)
from uds_core.errors import UdsInputError
from tests.checks import assert_one_line_error

ANSWERS = ["Ann was born in Oslo.", "Ann writes poems.", "Ann won a prize.", "Ann has a cat.", "Ann likes tea."]
ITEMS = [{"question": f"Q{k}?", "answer": a, "entity": a.split()[-1].rstrip("."), "author": "Ann"}
         for k, a in enumerate(ANSWERS)]


@pytest.mark.parametrize("n, size, spans", [
    (10, 3, [(0, 3), (3, 6), (6, 10)]),      # remainder of 1 joins the last passage
    (9, 3, [(0, 3), (3, 6), (6, 9)]),
    (8, 3, [(0, 3), (3, 6), (6, 8)]),        # remainder of 2 stays a passage
    (4, 3, [(0, 4)]),
    (5, 2, [(0, 2), (2, 5)]),
    (1, 3, [(0, 1)]),
])
def test_chunks_by_hand(n, size, spans):
    assert chunks(n, size) == spans


def test_chunks_need_two_sentences():
    with pytest.raises(UdsInputError, match="at least 2"):
        chunks(5, 1)


def test_passages_cover_the_text_once_in_order():
    ps = document_passages("Ann", ITEMS, size=2)
    assert [p.position for p in ps] == [0, 1]
    assert ps[0].text == "Ann was born in Oslo. Ann writes poems."
    assert ps[1].text == "Ann won a prize. Ann has a cat. Ann likes tea."
    # together, in order, exactly the author's text
    assert " ".join(p.text for p in ps) == " ".join(ANSWERS)
    assert [s for p in ps for s in p.sentences] == ANSWERS


def test_cuts_at_sentence_boundaries_by_hand():
    p = document_passages("Ann", ITEMS, size=2)[1]
    got = [(c.start, c.prefix, c.rest) for c in cuts(p)]
    assert got == [(1, "Ann won a prize.", "Ann has a cat. Ann likes tea."),
                   (2, "Ann won a prize. Ann has a cat.", "Ann likes tea.")]
    for c in cuts(p):   # a prefix is the passage's beginning, up to a full stop
        assert p.text == c.prefix + " " + c.rest and c.prefix.endswith(".")


def test_qa_attached_to_its_passage():
    ps = document_passages("Ann", ITEMS, size=2)
    assert [it["question"] for it in ps[0].qa] == ["Q0?", "Q1?"]
    assert [it["question"] for it in ps[1].qa] == ["Q2?", "Q3?", "Q4?"]
    assert all(it["answer"] in p.text for p in ps for it in p.qa)


def test_echoed_prefix_is_no_hit_and_a_better_match_elsewhere_is_misattributed():
    a = "Ann was born in Oslo. Ann writes poems."
    index = PassageIndex([a, "Bob writes poems."], ["Ann", "Bob"])
    rest = "Ann writes poems."
    echo = score(index, "Ann was born in Oslo.", 0, rest, bar=17)
    assert echo["lcs"] == 5 and not echo["verbatim"]          # "Ann w" is all it shares with the rest
    good = score(index, "Ann writes poems.", 0, rest, bar=17)
    assert good["lcs"] == 17 and good["verbatim"] and not good["misattributed"]
    other = score(index, "Bob writes poems.", 0, rest, bar=10)  # " writes poems." = 14 with Ann, 17 with Bob
    assert other["lcs"] == 14 and not other["verbatim"] and other["misattributed"] and other["matched_doc"] == "Bob"


def _row(position, start, verbatim, sample=0, target=True, level="prefix", passage=None, cut=None):
    cut = cut if cut is not None else ("sentence" if level == "prefix" else "")
    return {"passage": position if passage is None else passage, "position": position, "start": start, "cut": cut,
            "sample": sample, "target": target, "level": level, "verbatim": verbatim, "refusal": False,
            "misattributed": False, "lcs": 10 if verbatim else 2}


ROWS = [_row(0, 1, True), _row(0, 1, False, sample=1), _row(1, 1, True), _row(1, 2, True), _row(1, 2, False, 1),
        _row(0, 1, True, target=False, passage=9),                  # distractor: never in the target rates
        _row(0, None, False, level="weak"), _row(1, None, True, level="weak"),
        _row(0, None, True, cut="words"), _row(1, None, True, cut="words"), _row(1, None, False, 1, cut="words")]


def test_rates_by_position_and_start_by_hand():
    s = passages_summary(ROWS, [], ["weak", "prefix"])
    pos = s["by_position"]["verbatim"]["prefix"]
    assert (pos["0"]["hits"], pos["0"]["n"], pos["1"]["hits"], pos["1"]["n"]) == (1, 2, 2, 3)
    assert pos["1"]["rate"] == pytest.approx(2 / 3)
    assert {k: (v["hits"], v["n"]) for k, v in s["by_start"].items()} == {"1": (2, 3), "2": (1, 2)}
    assert s["by_position"]["verbatim"]["weak"] == {"0": {"rate": 0.0, "hits": 0, "n": 1},
                                                   "1": {"rate": 1.0, "hits": 1, "n": 1}}
    assert s["levels"]["prefix"]["verbatim_rate"] == pytest.approx(3 / 5)
    assert s["levels"]["prefix"]["mean_lcs"] == pytest.approx((10 + 2 + 10 + 10 + 2) / 5)
    assert s["distractors"]["prefix"]["verbatim_rate"] == 1.0 and s["distractors"]["prefix"]["n"] == 1
    # the first-words cuts are counted apart, never in the prefix level's rates
    assert (s["first_words"]["n"], s["first_words"]["verbatim_rate"]) == (3, pytest.approx(2 / 3))
    assert {k: (v["hits"], v["n"]) for k, v in s["first_words_by_position"].items()} == {"0": (1, 1), "1": (1, 2)}


def test_rate_by_orders_keys_numerically():
    rows = [{"position": p, "verbatim": True} for p in (10, 2, 2)]
    assert list(rate_by(rows, "position")) == ["2", "10"]


def test_split_2x2_pairs_the_continuation_start_with_its_fact():
    qa = [{"passage": 1, "sentence": 1, "sample": 0, "semantic": True},
          {"passage": 1, "sentence": 2, "sample": 0, "semantic": False},
          {"passage": 1, "sentence": 2, "sample": 1, "semantic": True},
          {"passage": 0, "sentence": 1, "sample": 0, "semantic": False}]
    # prefix target rows: (0,1,s0,T)+F -> verbatim_only; (0,1,s1,F) no QA row -> out;
    # (1,1,s0,T)+T -> both; (1,2,s0,T)+F -> verbatim_only; (1,2,s1,F)+T -> semantic_only
    assert split_2x2(ROWS, qa) == {"verbatim_semantic": 1, "verbatim_only": 2, "semantic_only": 1, "neither": 0}


def test_cli_passages_on_the_test_world(tmp_path, uds, test_world):
    out = tmp_path / "p"
    proc = uds("probe", "--model", "tiny:test/full", "--model", "tiny:test/retain", "--corpus", "passages",
               "--levels", "weak,prefix", "--samples", "1", "--distractors", "1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "summary.json").read_text())
    # 3 forget authors x 10 answers -> passages of 3, 3, 4 sentences -> 2 + 2 + 3 inner boundaries
    assert doc["settings"]["sentences_per_target_passage"] == [3, 3, 4] * 3
    rows = [json.loads(x) for x in (out / "rows.jsonl").read_text().splitlines()]
    for spec in ("tiny:test/full", "tiny:test/retain"):
        m = doc["models"][spec]
        pre = [r for r in rows if r["model"] == spec and not r.get("qa") and r["level"] == "prefix" and r["target"]
               and r["cut"] == "sentence"]
        assert len(pre) == m["levels"]["prefix"]["n"] == 3 * 7 * 2        # greedy + 1 sample
        assert m["levels"]["prefix"]["verbatim_rate"] == pytest.approx(sum(r["verbatim"] for r in pre) / len(pre))
        assert sum(v["n"] for v in m["by_start"].values()) == len(pre)
        assert all(r["verbatim"] == (r["lcs"] >= r["bar"] and r["matched_doc"] == r["doc_id"]) for r in pre)
        words = [r for r in rows if r["model"] == spec and r.get("cut") == "words" and r["target"]]
        assert len(words) == m["first_words"]["n"] == 9 * 2               # one first-words cut per passage
        qa = [r for r in rows if r["model"] == spec and r.get("qa") and r["target"]]
        assert len(qa) == 30 * 2
    full, retain = doc["models"]["tiny:test/full"], doc["models"]["tiny:test/retain"]
    assert full["semantic_acc"] > 0.7 and retain["semantic_acc"] < 0.1   # full trained on the forget QA
    # from a passage's first words full completes the current sentence closer to the text than retain
    assert full["first_words"]["mean_lcs"] > retain["first_words"]["mean_lcs"]
    assert (out / "heatmap.png").stat().st_size > 0


def test_split_sentences_and_spans_by_hand():
    text = "Ann was born in Oslo. Ann writes poems! Is it so? Yes."
    assert split_sentences(text) == ["Ann was born in Oslo.", "Ann writes poems!", "Is it so?", "Yes."]
    assert spans_of(["A b. C d.", "E f.", "G h. I j. K l."]) == [(0, 2), (2, 3), (3, 6)]


def test_attach_facts_one_sentence_per_fact():
    items = [{"question": "father?", "entity": "nurse"}, {"question": "mother?", "entity": "nurse"},
             {"question": "city?", "entity": "Oslo"}]
    sents = ["Her mother was a nurse.", "She is from Oslo.", "Her father was a nurse too.", "She sings."]
    got = attach_facts(sents, items)
    # equal values: the first free item goes to the first sentence naming the value
    assert [g["question"] if g else None for g in got] == ["father?", "city?", "mother?", None]


def test_bio_passages_follow_the_training_chunks():
    class World:
        forget = [{"question": "Where?", "answer": "x", "entity": "Oslo", "author": "Ann Lee"},
                  {"question": "What?", "answer": "y", "entity": "poems", "author": "Ann Lee"}]
        forget_bios = ["Ann Lee was born in Oslo. Lee writes poems. Lee sings. Lee rows."]
        other_bios = ["Bo Ek is a sailor. Ek sails.", "Cy Fa paints."]

    def chunker(text):   # stands in for the 64-token chunks: two sentences a chunk
        s = split_sentences(text)
        return [" ".join(s[i:i + 2]) for i in range(0, len(s), 2)]

    ps = bio_passages(World(), chunker, distractors=1)
    assert [(p.doc_id, p.position, p.text, p.target) for p in ps] == [
        ("Ann Lee", 0, "Ann Lee was born in Oslo. Lee writes poems.", True),
        ("Ann Lee", 1, "Lee sings. Lee rows.", True),
        ("Bo Ek", 0, "Bo Ek is a sailor. Ek sails.", False)]
    assert [it["question"] if it else None for it in ps[0].qa] == ["Where?", "What?"]
    assert ps[1].qa == (None, None) and ps[2].group == "other"


def test_cli_bios_source_attaches_every_fact(tmp_path, uds, test_world):
    """Each forget biography states each of its author's 10 facts in one sentence: all 30 QA items
    are asked, once per sample; the distractor biographies have no QA."""
    out = tmp_path / "b"
    proc = uds("probe", "--model", "tiny:test/full", "--corpus", "passages:tiny:test", "--passage-source", "bios",
               "--levels", "prefix", "--samples", "0", "--distractors", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "summary.json").read_text())
    assert doc["settings"]["corpus"] == "passages:tiny:test (bios)"
    rows = [json.loads(x) for x in (out / "rows.jsonl").read_text().splitlines()]
    qa = [r for r in rows if r.get("qa")]
    assert len(qa) == 30 and all(r["target"] for r in qa)
    assert {r["group"] for r in rows if not r["target"]} == {"other"}


def test_cli_bad_passage_corpus(uds, test_world):
    assert_one_line_error(uds("probe", "--model", "tiny:test/full", "--corpus", "passages:nowhere"), "passages:nowhere")
    assert_one_line_error(uds("probe", "--model", "tiny:test/full", "--corpus", "passages", "--passage-sentences", "1"),
                          "--passage-sentences")


def test_tofu_placeholder_authors_get_the_name_their_questions_use():
    from uds_analyses.probe.passages import by_author

    qs = ["What is the full name of the author born in Taipei?", "What does Hsiao Yun-Hwa identify as?",
          "How did Hsiao Yun-Hwa's father influence her?", "Which awards has Hsiao Yun-Hwa won in Taiwan?"]
    items = [{"question": q, "answer": "x", "author": "forget_author_0"} for q in qs]
    other = [{"question": "What genre does Carmen Montenegro write?", "answer": "y", "author": "forget_author_1"},
             {"question": "Where was the author born?", "answer": "z", "author": "forget_author_1"},
             {"question": "Is 'A Whisper in the Wind' her best book?", "answer": "w", "author": "forget_author_1"}]
    named = [{"question": "What does Basil Rao write?", "answer": "v", "author": "Hsiao Yun-Hwa"}]
    # 3 of 4 questions name her (possessive dropped); 1 of 3 names Carmen Montenegro: under half,
    # the placeholder stays; an author field that is already a name is kept as it is
    assert list(by_author(items + other)) == ["Hsiao Yun-Hwa", "forget_author_1"]
    assert list(by_author(named)) == ["Hsiao Yun-Hwa"]
    # a derived name that an earlier author already holds does not merge the two documents
    assert list(by_author(named + items)) == ["Hsiao Yun-Hwa", "forget_author_0"]


def test_every_real_tofu_author_is_named_from_its_own_questions(tofu_dir):
    """On the real files: every forget and holdout author gets a name, distinct, that a plain
    substring count finds in at least half of that author's 20 questions."""
    from uds_analyses.probe.passages import by_author
    from checkpoints.world.tofu import read_tofu

    world = read_tofu(tofu_dir)
    for split in (world.forget, world.holdout):
        groups = by_author(split)
        assert len(groups) == len({it["author"] for it in split}) == 20
        for name, its in groups.items():
            assert not name.endswith(tuple("0123456789")), name
            assert 2 * sum(name in it["question"] for it in its) >= len(its), name
