"""The registry's `uds` entry: the engine with the evaluated model as the S2 source, S1 from the
shared cache; identities full -> 0 and retain -> 1, and equality with the engine called directly."""

from __future__ import annotations

import pytest

from metrics.context import EvalContext, EvalSettings, ModelPool
from metrics.registry import REGISTRY, evaluate, sweep_plan
from tests.metrics_fixtures import tiny_splits, tiny_tokenizer, zoo
from uds_core.engine import EngineSettings, UdsModels, compute_uds
from uds_core.prompts import prepare_examples

ROLES = {"model": "tiny:t/unl", "full": "tiny:t/full", "retain": "tiny:t/retain", "base": "tiny:t/base"}


def _ctx(models: dict, model_role: str) -> EvalContext:
    splits = tiny_splits()
    return EvalContext(splits=splits, uds_records=splits["forget"], tokenizer=tiny_tokenizer(),
                       models=ModelPool({**ROLES, "model": model_role}, models.__getitem__),
                       settings=EvalSettings(batch_size=3, progress=False), plan=sweep_plan(["uds"]))


def test_uds_entry_matches_engine_and_identities(tmp_path, monkeypatch):
    monkeypatch.setenv("UDS_HOME", str(tmp_path))          # a fresh S1 cache
    models = zoo()
    spec = REGISTRY["uds"]
    assert spec.orientation == "erasure" and spec.references == ("full", "retain")
    result = evaluate(_ctx(models, ROLES["model"]), ["uds"])["uds"]
    examples = prepare_examples(tiny_splits()["forget"], tiny_tokenizer())
    direct = compute_uds(UdsModels(models[ROLES["full"]], models[ROLES["retain"]], models[ROLES["model"]]), examples,
                         EngineSettings(batch_size=3))
    assert result.value == pytest.approx(direct.mean, abs=1e-9)
    assert result.per_example == pytest.approx(direct.uds, abs=1e-9)
    assert list((tmp_path / "s1_cache").glob("s1_*.json"))   # S1 written once, shared with `uds score`
    assert evaluate(_ctx(models, ROLES["full"]), ["uds"])["uds"].value == pytest.approx(0.0, abs=1e-9)
    assert evaluate(_ctx(models, ROLES["retain"]), ["uds"])["uds"].value == pytest.approx(1.0, abs=1e-9)


def test_reference_parity_uses_the_last_layer_quirk(tmp_path, monkeypatch):
    """--parity reference: the registry's uds is the engine with reference_last_layer (as `uds score
    --parity reference`); S1 of the two variants never share a cache entry."""
    from dataclasses import replace

    monkeypatch.setenv("UDS_HOME", str(tmp_path))
    models = zoo()
    examples = prepare_examples(tiny_splits()["forget"], tiny_tokenizer())
    ctx = _ctx(models, ROLES["model"])
    ctx.settings = replace(ctx.settings, parity="reference")
    result = evaluate(ctx, ["uds"])["uds"]
    direct = compute_uds(UdsModels(models[ROLES["full"]], models[ROLES["retain"]], models[ROLES["model"]]), examples,
                         EngineSettings(batch_size=3, reference_last_layer=True))
    plain = evaluate(_ctx(models, ROLES["model"]), ["uds"])["uds"]
    assert result.value == pytest.approx(direct.mean, abs=1e-9) and result.value != plain.value
    assert len(list((tmp_path / "s1_cache").glob("s1_*.json"))) == 2
    full = _ctx(models, ROLES["full"])
    full.settings = replace(full.settings, parity="reference")
    assert evaluate(full, ["uds"])["uds"].value > 0            # the quirk's residue: UDS(full) != 0
