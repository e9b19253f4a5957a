"""Scoring rules and the FULL / DEL-ON / DEL-OFF protocol on a scripted model (no training)."""

from __future__ import annotations

import pytest

from checkpoints.lmlm.db import FactDB
from checkpoints.lmlm.prompts import PromptRow
from uds_analyses.audit.protocol import AuditSettings, audit_rows
from uds_analyses.audit.rates import attribution, cross_state, variant_summary
from uds_analyses.audit.scoring import token_text, score_answer
from tests.audit_fixtures import ScriptedLM, random_llama


def test_normalisation_and_scores():
    assert token_text("Washington, D.C.!") == "washington d c"
    assert token_text("It's 3.14 - well-known") == "it's 3.14 well-known"
    s = score_answer("New York", ["New York City"])
    assert (s.exact, s.contains, s.unknown) == (0.0, 1.0, 0.0)
    assert (s.precision, s.recall, s.f1) == pytest.approx((1.0, 2 / 3, 0.8))   # 2 of 2 / 2 of 3 tokens
    assert score_answer("usd", ["US Dollar", "USD"]).exact == 1.0             # an alias counts
    assert score_answer("I don't know", ["Paris"]).unknown == 1.0
    assert score_answer("", ["Paris"]).unknown == 1.0 and score_answer("", ["Paris"]).contains == 0.0
    assert score_answer("Paris Paris", ["Paris"]).precision == 0.5            # multiset overlap


@pytest.fixture(scope="module")
def tok():
    from checkpoints.world.store import ensure_tokenizer
    return ensure_tokenizer("test", 0)


# difflib ratios: (tasseldorn, tasseldorn republic) = 20/29, (capital, currency) = 2/15, subjects
# pairwise <= 0.32, so with threshold 0.8 only the decoy of Tasseldorn passes after a deletion
TRIPLES = [("Norvik", "Capital", "Ostmere"), ("Norvik", "Currency", "Gold Crown"),
           ("Tasseldorn", "Capital", "Varnhold"), ("Tasseldorn Republic", "Capital", "Varnhold"),
           ("Quellmark", "Capital", "Pellvik")]
ROWS = [PromptRow("direct", i, s, r, o, f"What is the {r.lower()} of {s}?")
        for i, (s, r, o) in enumerate(TRIPLES) if i in (0, 2, 4)]


def _run(tok, parametric: bool, ignore_value: bool = False):
    db = FactDB.from_records(TRIPLES)
    model = ScriptedLM(tok, {r.text: (r.subject, r.relation, r.gold) for r in ROWS}, parametric=parametric,
                       ignore_value=ignore_value)
    traces: list[dict] = []
    res = audit_rows(model, tok, db, ROWS, "noise", AuditSettings(threshold=0.8, batch_size=2, progress=False),
                     traces=traces)
    return res, traces


def test_perfect_lmlm(tok):
    """An exact-lookup model: FULL all right, no leakage; DEL-ON right only where a retained
    near-miss entry (Tasseldorn Republic) still maps the key to the gold object."""
    res, traces = _run(tok, parametric=False)
    by = {f.subject: f for f in res}
    assert all(f.scores["FULL"].exact == 1.0 for f in res)
    assert all(f.answers["DEL-OFF"] == "unknown" and f.leak == 0 for f in res)
    # Tasseldorn: its triple deleted, the decoy scores (20/29 + 1) / 2 = 0.845 >= 0.8
    t = by["Tasseldorn"]
    assert (t.answers["DEL-ON"] == "Varnhold"
            and (t.retrieval, t.artefact, t.artefact_mediated, t.evidence) == (1, 1, 1, 1))
    # Norvik: the nearest retained key is (Norvik, Currency), (1 + 2/15) / 2 = 0.567 < 0.8 -> unknown
    assert by["Norvik"].answers["DEL-ON"] == "unknown" and (by["Norvik"].retrieval, by["Norvik"].artefact) == (0, 0)
    cs = cross_state(res)
    assert cs["parametric_leakage"] == 0.0 and cs["retrieval_mediated_correctness"] == pytest.approx(1 / 3)
    # only Tasseldorn is DEL-ON correct, and it is wrong under DEL-OFF: both artefact readings give 1 of 3
    assert cs["retrieval_artifact_rate"] == cs["mediated_artifact_rate"] == pytest.approx(1 / 3)
    # traces: every FULL and DEL-ON call, none for DEL-OFF; DEL-ON never shows a deleted id
    assert sorted({t["state"] for t in traces}) == ["DEL-ON", "FULL"] and len(traces) == 2 * len(ROWS)
    for t in traces:
        if t["state"] == "DEL-ON":
            assert not {c["id"] for c in t["candidates"]} & set(t["deleted_ids"])
    parts = attribution(res)["noise"]
    assert sum(parts.values()) == pytest.approx(variant_summary(res)["noise"]["del_on_em"])


def test_parametric_model_leaks(tok):
    """A model that answers from its weights and never looks up: correct in every state, all of it
    leakage. Its DEL-ON trace is empty, so no retained candidate is gold-equivalent and, by
    spec-probes §3.3 (which does not look at DEL-OFF), every correct DEL-ON answer is an artefact;
    the narrower mediated artefact (also DEL-OFF wrong) is 0."""
    res, traces = _run(tok, parametric=True)
    assert traces == []
    assert all((f.leak, f.retrieval, f.artefact, f.artefact_mediated) == (1, 0, 1, 0) for f in res)
    summ = variant_summary(res)["noise"]
    assert summ["leakage"] == summ["full_em"] == summ["del_on_em"] == summ["artifact_rate"] == 1.0
    assert summ["mediated_artifact_rate"] == 0.0
    assert attribution(res)["noise"]["parametric"] == 1.0


def test_artefact_ignores_del_off(tok):
    """Where the two definitions differ: the model writes its lookup, then answers the gold from its
    weights whatever was spliced in. DEL-ON and DEL-OFF are both correct for all three facts; the
    DEL-ON trace holds only retained, non-equivalent candidates (the targets' triples are deleted),
    so artefact = 1 for each fact (3.3) while the mediated artefact, which also needs DEL-OFF
    wrong, is 0 for each, as is R."""
    res, traces = _run(tok, parametric=False, ignore_value=True)
    on_calls = [t for t in traces if t["state"] == "DEL-ON"]
    assert len(on_calls) == len(ROWS) and all(t["candidates"] for t in on_calls)
    for f in res:
        assert f.answers["DEL-ON"] == f.answers["DEL-OFF"] == f.gold
        assert (f.leak, f.retrieval, f.artefact, f.artefact_mediated, f.evidence) == (1, 0, 1, 0, 0)
    cs = cross_state(res)
    assert (cs["parametric_leakage"], cs["retrieval_mediated_correctness"],
            cs["retrieval_artifact_rate"], cs["mediated_artifact_rate"]) == (1.0, 0.0, 1.0, 0.0)


def test_artefact_flag_truth_table():
    """3.3 as a table: DEL-ON correct and no gold-equivalent retained candidate, nothing else."""
    from uds_analyses.audit.protocol import artefact_flag

    assert [artefact_flag(on, eq) for on, eq in ((True, False), (True, True), (False, False), (False, True))] \
        == [1, 0, 0, 0]


def test_splice_loop_without_calls_is_plain_greedy(tok):
    """With no lookup written, the cached lockstep loop gives what `greedy_generate` gives."""
    from checkpoints.lmlm.generate import splice_generate
    from uds_core.gen_options import GenOptions
    from uds_core.generation import greedy_generate

    model = random_llama(tok, seed=1)
    prompts = [tok.encode(t, add_special_tokens=True)
               for t in ("Where was Ada born?", "Hi", "Name a river in Ostmere.")]
    opts = GenOptions(batch_size=2, max_new_tokens=12, progress=False)
    ours = splice_generate(model, tok, prompts, lambda *a: "never", opts)
    ref = greedy_generate(model, tok, prompts, opts)
    assert all(not o.calls for o in ours)
    assert [o.text for o in ours] == [g.text for g in ref]


def test_limit_spreads_rows_over_the_file():
    from uds_analyses.audit.run import spaced

    assert spaced(list(range(10)), 3) == [0, 3, 6] and spaced(list(range(4)), None) == [0, 1, 2, 3]
    assert spaced(list(range(4)), 9) == [0, 1, 2, 3]
