"""Matching of spec-probes §2.4 on hand-made strings: normalisation, character LCS (checked against
an independent dynamic programme), word 10-gram overlap and distractor attribution."""

from __future__ import annotations

import random

import pytest

from uds_analyses.probe.matching import PassageIndex, hit_bar, lcs_length, ngram_overlap, canonical_text


def dp_lcs(a: str, b: str) -> int:
    """Classic O(len(a) * len(b)) longest-common-substring table, written independently."""
    best, prev = 0, [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                best = max(best, cur[j])
        prev = cur
    return best


def test_normalise_full_width_quotes_dashes_space():
    assert canonical_text("Ｔｈｅ　ｃａｔ １２３") == "The cat 123"            # full-width letters, digits, space
    assert canonical_text("\u201cHi,\u201d she said \u2014 \u2018ok\u2019") == "\"Hi,\" she said - 'ok'"
    assert canonical_text("  a \t\n b  ") == "a b"
    assert canonical_text("The Cat", lower=True) == "the cat"


def test_lcs_by_hand_and_against_dp():
    assert lcs_length("xxabcdyy", "zzabcdzz") == 4
    assert lcs_length("", "abc") == 0
    assert lcs_length("abc", "def") == 0
    # repeated characters defeat difflib's autojunk heuristic when it is on; it must be off
    a, b = "e" * 300 + "XYZ", "q" + "e" * 250 + "XY"
    assert lcs_length(a, b) == dp_lcs(a, b) == 252   # 250 e + "XY"
    rng = random.Random(0)
    for _ in range(200):
        a = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 60)))
        b = "".join(rng.choice("ab c") for _ in range(rng.randint(0, 60)))
        assert lcs_length(a, b) == dp_lcs(a, b)


def test_ngram_overlap_counts_output_ngrams():
    passage = " ".join(f"w{i}" for i in range(20))
    out = " ".join(f"w{i}" for i in range(5, 15)) + " x1 x2"    # 12 words -> 3 ten-grams, 1 in passage
    assert ngram_overlap(out, passage) == pytest.approx(1 / 3)
    assert ngram_overlap("too short", passage) is None
    assert ngram_overlap(passage, passage) == 1.0


def test_hit_bar_short_passage():
    assert hit_bar(50, "x" * 200) == 50
    assert hit_bar(50, "x" * 30) == 30


TARGET = "The lighthouse keeper counted ships every night from the northern cliffs of Marrowind."
OTHER = "Every spring the weaver sold bright blankets at the harbour market of Ostvale town."


def test_attribution_hit_on_target():
    idx = PassageIndex([TARGET, OTHER], ["doc_a", "doc_b"])
    m = idx.match("He said: the lighthouse keeper counted ships every night from the northern cliffs", 0, 50)
    assert m.lcs == len("he lighthouse keeper counted ships every night from the northern cliffs")
    assert m.verbatim and m.matched_doc == "doc_a" and not m.misattributed


def test_attribution_hit_belongs_to_distractor():
    """A planted cross-document hit: probing doc_a, the model recites doc_b's passage."""
    idx = PassageIndex([TARGET, OTHER], ["doc_a", "doc_b"])
    m = idx.match("Every spring the weaver sold bright blankets at the harbour market.", 0, 50)
    assert not m.verbatim and m.misattributed and m.matched_doc == "doc_b"
    assert m.best_index == 1 and m.best_lcs == len("Every spring the weaver sold bright blankets at the harbour market")
    assert m.lcs < 20


def test_attribution_below_bar_and_curly_quotes():
    idx = PassageIndex(["It\u2019s the \u201cgreat\u201d river \u2014 wide and slow, said the ferryman."],
                       ["doc_a"])
    out = "It's the \"great\" river - wide and slow, said the ferryman."
    assert idx.match(out, 0, 50).lcs == len(out)
    miss = idx.match("the great river", 0, 50)
    assert not miss.verbatim and miss.matched_doc is None


def test_same_document_other_passage_counts_for_target_document():
    idx = PassageIndex([TARGET, TARGET.replace("Marrowind", "Kaldmere") + " More text here.", OTHER],
                       ["doc_a", "doc_a", "doc_b"])
    m = idx.match(TARGET.replace("Marrowind", "Kaldmere") + " More text", 0, 50)
    assert m.verbatim and m.matched_doc == "doc_a"


def test_candidates_prefilter_is_exact():
    rng = random.Random(1)
    texts = ["".join(rng.choice("abcd ") for _ in range(120)) for _ in range(30)]
    idx = PassageIndex(texts, [f"d{i}" for i in range(30)], q=8)
    for _ in range(20):
        t = rng.randrange(30)
        src = texts[rng.randrange(30)]
        start = rng.randrange(60)
        out = canonical_text(src[start:start + 50])
        m = idx.match(out, t, 20)
        brute = max(range(30), key=lambda i: (dp_lcs(out, idx.texts[i]), i == t))
        assert m.best_lcs == dp_lcs(out, idx.texts[brute])
