"""The audit's link to UDS and mem_bits (spec-probes §3.7): the join's arithmetic by hand, and the
audit's chat mode on the test world's own full and retain models."""

from __future__ import annotations

import json

import pytest

from uds_analyses.audit.link import agreement, fact_rows, model_summary


def _rows():
    # model a holds facts 0, 1 (answers them; UDS low), model b answers none but still holds fact 0
    # in its hidden states (UDS 0.2: refuses but keeps it), model c erased everything
    a = fact_rows("a", ["x", "y", "z"], [1.0, 1.0, 0.0], [0.0, 0.1, 0.9], [30.0, 20.0, 0.0])
    b = fact_rows("b", ["x", "y", "z"], [0.0, 0.0, 0.0], [0.2, None, 1.0], [10.0, 5.0, 0.0])
    c = fact_rows("c", ["x", "y", "z"], [0.0, 0.5, 0.0], [1.0, 0.95, 1.0], [0.0, 1.0, 0.0])
    return a, b, c


def test_model_summary_by_hand():
    a, b, c = _rows()
    assert model_summary(a) == {"n_facts": 3, "n_uds_scored": 3, "del_off_correct": pytest.approx(2 / 3),
                                "uds": pytest.approx(1.0 / 3), "mem_bits": pytest.approx(50 / 3),
                                "hidden": 0, "answered_but_erased": 0}
    sb = model_summary(b)
    assert sb["n_uds_scored"] == 2 and sb["uds"] == pytest.approx(0.6) and sb["hidden"] == 1
    assert model_summary(c)["answered_but_erased"] == 1       # L = 0.5 counts as answered


def test_agreement_by_hand():
    a, b, c = _rows()
    out = agreement(a + b + c)
    # scored rows: 8; answered (L >= .5): a0, a1, c1. 1-UDS of answered: 1, .9, .05; of the rest
    # (a2 .1, b0 .8, b2 0, c0 0, c2 0): pairs won 5 + 5 + (0.05 > 0, 0, 0: 3 of 5) = 13 of 15
    assert out["n"] == 8 and out["answered"] == 3
    assert out["auc_one_minus_uds"] == pytest.approx(13 / 15)
    # mem_bits answered 30, 20, 1 vs 0, 10, 0, 0, 0: 5 + 5 + 4 = 14 of 15
    assert out["auc_mem_bits"] == pytest.approx(14 / 15)
    # model means: L a .667, b 0, c .167; 1-UDS a .667, b .4, c .017; mem a 16.7, b 5, c .33
    assert out["spearman_models_one_minus_uds"] == pytest.approx(0.5)
    assert out["spearman_models_mem_bits"] == pytest.approx(0.5)


def test_inputs_of_another_length_are_refused():
    with pytest.raises(ValueError, match="differ in length"):
        fact_rows("a", ["x"], [1.0, 0.0], [0.0], [1.0])


def test_chat_audit_reads_the_weights_of_the_world_models(test_world, uds, tmp_path):
    """`uds audit --chat` on the test world's own models: the full model answers its forget facts
    with retrieval off (DEL-OFF), the retain model, which never saw them, does not."""
    leak = {}
    for name in ("full", "retain"):
        out = tmp_path / name
        proc = uds("audit", "--model", f"tiny:test/{name}", "--db", "tiny:test", "--chat", "--variants", "base",
                   "--styles", "direct", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        facts = [json.loads(line) for line in (out / "facts.jsonl").read_text().splitlines()]
        assert len(facts) == 30 and (out / "traces.jsonl").read_text() == ""   # never looks up
        leak[name] = sum(f["contains_DEL-OFF"] for f in facts) / len(facts)
        assert json.loads((out / "summary.json").read_text())["settings"]["chat"] is True
    assert leak["full"] >= 0.5 and leak["retain"] <= 0.1


def test_system_prompt_needs_chat(uds, tmp_path):
    proc = uds("audit", "--db", "tiny:test", "--system-prompt", "x", "--out", str(tmp_path))
    assert proc.returncode == 2 and "--system-prompt needs --chat" in proc.stderr
