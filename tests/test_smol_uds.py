"""UDS on a real pretrained model (CI-sized): SmolLM2-135M-Instruct from its GGUF, entity
spans re-derived for its tokenizer, and the two invariants of the score on its 30 layers (full as
the unlearned model: 0; retain as the unlearned model: 1)."""

from __future__ import annotations

import json
import time

import pytest

from tests.checks import assert_minimal_entity_windows
from tests.gguf_fixtures import ALIAS


@pytest.fixture(autouse=True)
def _in_gguf_home(gguf_home):
    """Every test here resolves GGUF specs in the session's GGUF home (where the conversion is)."""


def test_every_annotated_entity_aligns_to_a_minimal_smollm2_span(smol_converted, tofu_dir):
    """The annotated spans are Llama-3 token indices; for SmolLM2 they are re-derived from the
    entity text. Every span's tokens must cover the entity, and dropping its first or last token
    must uncover it (the span is the smallest cover, partial tokens at the edges included)."""
    from checkpoints.specs import load_tokenizer
    from uds_core.data import load_annotated
    from uds_core.prompts import prepare_items

    records = load_annotated(tofu_dir / "forget10_annotated.json")
    tok = load_tokenizer(ALIAS)
    prepared, skipped = prepare_items(records, tok)
    assert len(prepared) + len(skipped) == len(records) == 367
    assert skipped == []
    assert_minimal_entity_windows(prepared, records, tok)


@pytest.mark.slow
def test_uds_invariants_on_the_fine_tuned_30_layer_model(smol_converted, tofu_dir, tmp_path, uds):
    from checkpoints.smol_ci import SmolCiConfig, build_full

    t0 = time.perf_counter()
    built = build_full(tmp_path, SmolCiConfig(), str(tofu_dir))
    t_train = time.perf_counter() - t0
    assert built["losses"][-1] < 0.5 * built["losses"][0]
    common = ["--full", str(built["full"]), "--retain", ALIAS, "--data", str(built["data"])]
    runs = {}
    for role, unlearned in (("full", str(built["full"])), ("retain", ALIAS)):
        t0 = time.perf_counter()
        proc = uds("score", "--unlearned", unlearned, *common, "--out", str(tmp_path / role))
        assert proc.returncode == 0, proc.stderr
        summary = json.loads((tmp_path / role / "summary.json").read_text())
        rows = [json.loads(l) for l in (tmp_path / role / "examples.jsonl").read_text().splitlines()]
        runs[role] = (summary, [r for r in rows if r["skipped_reason"] is None], time.perf_counter() - t0)
    print(f"smol-ci: train {t_train:.0f} s, score full {runs['full'][2]:.0f} s, score retain {runs['retain'][2]:.0f} s")

    for role, (summary, scored, _) in runs.items():
        assert summary["layers"] == 30
        assert summary["n_scored"] + summary["n_skipped"] == 8
        assert summary["n_scored"] >= 6, summary   # S1 finds KE layers for most examples
        assert len(scored) == summary["n_scored"]
    # Patching the full model with itself changes nothing: every S2 drop is exactly 0, so UDS 0.
    full_summary, full_rows, _ = runs["full"]
    assert all(d == 0.0 for r in full_rows for d in r["s2_delta"])
    assert full_summary["uds"] == 0.0
    # The retain model as the unlearned one: S2 is S1, so every clipped ratio and UDS are 1.
    retain_summary, retain_rows, _ = runs["retain"]
    assert all(r["s2_delta"] == r["s1_delta"] for r in retain_rows)
    assert retain_summary["uds"] == 1.0
    # KE layers are where the fine-tune put the answer: the last layer is one for every scored example.
    assert all(29 in r["ke_layers"] for r in retain_rows)
