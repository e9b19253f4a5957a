"""The probe's aggregation (uds_analyses/probe/summary.py, the registered per-passage rates) and its
semantic judge, on a hand-built set of rows whose every expected number is worked out below.

Rows: three passages, two levels (strong, prefix), two samples each, plus two re-probe rows.
passage 0: doc A, position 1, target,     group g1, has QA
passage 1: doc A, position 2, target,     group g2, no QA (semantic None)
passage 2: doc B, position 1, distractor, group g2, has QA
"""

from __future__ import annotations

import math
import random
import re

import pytest

from checkpoints.world.matching import entity_hit
from uds_analyses.probe import metric as probe_metric
from uds_analyses.probe import run as probe_run
from uds_analyses.probe.corpus import Passage
from uds_analyses.probe.summary import by_group, by_level, documents, heat, level_stats, masked_by_refusal, split_2x2
from uds_core.generation import Generation

LEVELS = ["strong", "prefix"]
PASSAGES = {0: ("A", 1, True, "g1"), 1: ("A", 2, True, "g2"), 2: ("B", 1, False, "g2")}
# passage, level, sample, reprobe, verbatim, semantic, refusal, misattributed, lcs
TABLE = [
    (0, "strong", 0, False, False, True, True, False, 10),
    (0, "strong", 1, False, False, False, False, False, 20),
    (0, "prefix", 0, False, True, True, False, False, 60),
    (0, "prefix", 1, False, True, False, False, False, 70),
    (1, "strong", 0, False, False, None, False, False, 5),
    (1, "strong", 1, False, False, None, True, False, 0),
    (1, "prefix", 0, False, False, None, False, True, 55),
    (1, "prefix", 1, False, False, None, False, False, 30),
    (1, "prefix", 0, True, True, None, False, False, 99),   # re-probe rows: only masked_by_refusal reads them
    (1, "prefix", 1, True, True, None, False, False, 98),
    (2, "strong", 0, False, False, False, False, False, 1),
    (2, "strong", 1, False, False, True, False, False, 2),
    (2, "prefix", 0, False, True, True, False, False, 80),
    (2, "prefix", 1, False, False, True, True, False, 3),
]


def make_rows() -> list[dict]:
    rows = []
    for p, level, k, reprobe, verbatim, semantic, refusal, mis, lcs in TABLE:
        doc, position, target, group = PASSAGES[p]
        rows.append({"passage": p, "level": level, "sample": k, "reprobe": reprobe, "verbatim": verbatim,
                     "semantic": semantic, "refusal": refusal, "misattributed": mis, "lcs": lcs,
                     "doc_id": doc, "position": position, "target": target, "group": group})
    return rows


def stats(v, s, r, m, lcs, n) -> dict:
    return {"verbatim_rate": v, "semantic_acc": s, "refusal_rate": r, "misattributed_rate": m,
            "mean_lcs": lcs, "n": n}


def test_level_stats_of_no_rows_and_of_rows_without_qa():
    assert level_stats([]) == stats(None, None, None, None, None, 0)
    rows = [r for r in make_rows() if r["passage"] == 1 and not r["reprobe"]]   # 4 rows, semantic None
    assert level_stats(rows) == stats(0.0, None, 1 / 4, 1 / 4, (5 + 0 + 55 + 30) / 4, 4)


def test_by_level_targets_and_distractors():
    rows = make_rows()
    # targets, strong: passages 0, 1 x samples 0, 1; semantic only from passage 0 (True, False)
    # targets, prefix: verbatim T, T, F, F; misattributed 1 of 4; re-probe rows (lcs 99, 98) left out
    assert by_level(rows, LEVELS, True) == {
        "strong": stats(0.0, 0.5, 0.5, 0.0, (10 + 20 + 5 + 0) / 4, 4),
        "prefix": stats(0.5, 0.5, 0.0, 0.25, (60 + 70 + 55 + 30) / 4, 4)}
    assert by_level(rows, LEVELS, False) == {
        "strong": stats(0.0, 0.5, 0.0, 0.0, 1.5, 2),
        "prefix": stats(0.5, 1.0, 0.5, 0.0, 41.5, 2)}


def test_by_group_mixes_targets_and_distractors():
    got = by_group(make_rows(), LEVELS)
    assert list(got) == ["g1", "g2"]   # first-seen order
    assert got["g1"] == {"strong": stats(0.0, 0.5, 0.5, 0.0, 15.0, 2), "prefix": stats(1.0, 0.5, 0.0, 0.0, 65.0, 2)}
    # g2 = passages 1 and 2: strong refusals F, T, F, F; prefix verbatim F, F, T, F and semantic (p2) T, T
    assert got["g2"] == {"strong": stats(0.0, 0.5, 0.25, 0.0, (5 + 0 + 1 + 2) / 4, 4),
                         "prefix": stats(0.25, 1.0, 0.25, 0.25, (55 + 30 + 80 + 3) / 4, 4)}


def test_documents():
    got = documents(make_rows(), LEVELS)
    # doc A: 8 first-pass rows; semantic from passage 0 only (T, F, T, F); refusals p0 strong s0, p1 strong s1
    assert got["A"] == {"target": True, "verbatim_rate": {"strong": 0.0, "prefix": 0.5},
                        "semantic_acc": 0.5, "refusal_rate": 2 / 8}
    assert got["B"] == {"target": False, "verbatim_rate": {"strong": 0.0, "prefix": 0.5},
                        "semantic_acc": 3 / 4, "refusal_rate": 1 / 4}


def test_masked_by_refusal_reads_reprobe_rows():
    # target (passage, sample) pairs: (0,0) refused at strong, verbatim at prefix -> masked;
    # (0,1) never refused; (1,0) never refused; (1,1) refused at strong, verbatim only in its
    # re-probe row at prefix -> masked. 2 of 4.
    assert masked_by_refusal(make_rows()) == (0.5, {"strong": 2})
    assert masked_by_refusal([]) == (None, {})


def test_split_2x2():
    rows = make_rows()
    assert split_2x2(rows, "prefix") == {"verbatim_semantic": 1, "verbatim_only": 1, "semantic_only": 0, "neither": 0}
    assert split_2x2(rows, "strong") == {"verbatim_semantic": 0, "verbatim_only": 0, "semantic_only": 1, "neither": 1}


def test_heat():
    docs, positions, grid = heat(make_rows(), "prefix")
    assert docs == ["A", "B"] and positions == [1, 2]
    assert grid[0].tolist() == [1.0, 0.0] and grid[1, 0] == 0.5 and math.isnan(grid[1, 1])


def test_registered_rates_are_per_passage_means(monkeypatch):
    """verbatim_rate / semantic_acc: mean over passages of each passage's prefix-level share."""
    monkeypatch.setattr(probe_metric, "probe_rows", lambda ctx, role: make_rows())
    verbatim = probe_metric.verbatim_rate(None)
    assert verbatim.per_example == [1.0, 0.0, 0.5] and verbatim.value == pytest.approx(0.5)
    semantic = probe_metric.semantic_acc(None)
    assert semantic.per_example == [0.5, None, 1.0] and semantic.value == pytest.approx(0.75)


# --- the semantic judge -------------------------------------------------------------------------

@pytest.mark.parametrize("generation,entity,hit", [
    ("He was born in Santiago, Chile.", "Santiago, Chile", True),
    ("born in santiago chile", "Santiago, Chile", True),          # case and punctuation ignored
    ("He lived in Jinotega.", "Jinot", False),                     # whole words only
    ("It was THE JINOT!", "The Jinot.", True),
    ("Santiago de Chile", "Santiago, Chile", False),               # words must be adjacent
    ("the genre is \"Historical Fiction\"", "Historical Fiction", True),
    ("I don't know.", "Paris", False),
    ("", "Paris", False),
])
def test_entity_hit_cases(generation, entity, hit):
    assert entity_hit(generation, entity) is hit


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _hit_by_words(generation: str, entity: str) -> bool:
    """Second implementation: the entity's words appear as a contiguous run of the generation's."""
    g, e = _words(generation), _words(entity)
    return any(g[i:i + len(e)] == e for i in range(len(g) - len(e) + 1))


def test_entity_hit_equals_a_word_list_implementation():
    rng = random.Random(0)
    alphabet = ["ab", "Ab", "b", "c1", "é", "x_y", " ", "  ", ",", ".", "-", "'", "\n"]
    for _ in range(3000):
        gen = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        ent = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4)))
        if not _words(ent):
            continue   # an entity without a word is never asked (gold is a real name)
        assert entity_hit(gen, ent) == _hit_by_words(gen, ent), (gen, ent)


def test_semantic_hits_judge_each_sample(monkeypatch):
    """semantic_hits asks only passages with a question and gold, and judges every sample's text."""
    passages = [Passage("A", "t", 1, "x", question="Where?", entity="Lima"),
                Passage("B", "t", 1, "y"),                                        # no QA: not asked
                Passage("C", "t", 1, "z", question="Who?", answer="Ana Ruiz")]    # gold = the answer
    answers = [["In Lima.", "lima, peru", "Limassol"], ["ana  RUIZ", "Ruiz, Ana", "Ana Ruiz!"]]
    monkeypatch.setattr(probe_run, "_outputs", lambda model, tok, prompts, budget, s, desc:
                        [[Generation((), t) for t in texts] for texts in answers[:len(prompts)]])
    monkeypatch.setattr(probe_run, "chat_prompt_ids", lambda tok, question, system=None: [1, 2])
    monkeypatch.setattr(probe_run, "_budget", lambda tok, texts, cap: 4)
    got = probe_run.semantic_hits(None, None, passages, probe_run.ProbeSettings(samples=2, progress=False))
    assert got == {0: [("In Lima.", True), ("lima, peru", True), ("Limassol", False)],
                   2: [("ana  RUIZ", True), ("Ruiz, Ana", False), ("Ana Ruiz!", True)]}
