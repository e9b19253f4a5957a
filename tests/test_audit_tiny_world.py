"""`uds audit --db tiny:test` with the test preset's LMLM and its parametric contrast (slow:
builds both models in the test world on first run)."""

from __future__ import annotations

import json

import pytest

from uds.cli import main


@pytest.mark.slow
def test_audit_tiny_world_both_models(tmp_path):
    from checkpoints.world.build import ensure_model

    for name in ("lmlm", "lmlm_parametric"):
        ensure_model("test", 0, name, progress=False)
    summaries = {}
    for name in ("lmlm", "lmlm_parametric"):
        out = tmp_path / name
        assert main(["audit", "--model", f"tiny:test/{name}", "--db", "tiny:test", "--styles", "direct",
                     "--limit", "10", "--out", str(out)]) == 0
        summaries[name] = json.loads((out / "summary.json").read_text())
        facts = [json.loads(line) for line in (out / "facts.jsonl").read_text().splitlines()]
        assert len(facts) == 4 * 10
        if name == "lmlm_parametric":   # never looks up: the three states see the same input
            assert (out / "traces.jsonl").read_text() == ""
            assert all(f["answer_FULL"] == f["answer_DEL-ON"] == f["answer_DEL-OFF"] for f in facts)
        else:                           # looks up in FULL and DEL-ON, and DEL-OFF gets `unknown`
            assert (out / "traces.jsonl").read_text()
    assert set(summaries["lmlm"]["variants"]) == {"base", "alias", "noise", "collision"}
