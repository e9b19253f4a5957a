"""Orientation of the metrics on the trained `test` world: the full model (trained on the forget
set) and the retain model (never saw it) must differ in the direction the registry documents.

The expectation comes from how the two models were made, not from the metric code: full knows the
forget answers, retain does not, both know the retain set and the utility facts."""

from __future__ import annotations

import json
import math

import pytest

from metrics.registry import REGISTRY
from uds.cli import main

# Knowledge metrics that must be higher for full than for retain. Truth ratio and the jailbreak
# ROUGE are left out: on a 4-layer model their full-vs-retain gap is within noise (the small
# preset's table in the README shows them).
KNOWLEDGE = ("es", "em", "prob", "paraprob", "rouge", "para_rouge",
             "mia_loss", "mia_zlib", "mia_min_k", "mia_min_kpp")
ERASURE = ("s_mia_loss", "s_mia_zlib", "s_mia_min_k", "s_mia_min_kpp")
KEYS = KNOWLEDGE + ERASURE + ("model_utility",)


@pytest.fixture(scope="module")
def values(test_world, tmp_path_factory) -> dict[str, dict[str, float]]:
    out = {}
    for name in ("full", "retain"):
        folder = tmp_path_factory.mktemp(name)
        assert main(["metrics", "--model", f"tiny:test/{name}", "--metrics", ",".join(KEYS),
                     "--out", str(folder), "--batch-size", "16", "--max-new-tokens", "48"]) == 0
        out[name] = json.loads((folder / "metrics.json").read_text())["metrics"]
    return out


def test_registry_orientation_matches_this_test():
    assert all(REGISTRY[k].orientation == "knowledge" for k in KNOWLEDGE)
    assert all(REGISTRY[k].orientation == "erasure" for k in ERASURE)


@pytest.mark.parametrize("key", KNOWLEDGE)
def test_knowledge_metric_is_higher_for_full(values, key):
    assert values["full"][key] > values["retain"][key] + 0.05


@pytest.mark.parametrize("key", ERASURE)
def test_retain_anchored_mia_is_higher_for_retain(values, key):
    assert values["retain"][key] > values["full"][key] + 0.05


def test_full_and_retain_keep_model_utility(values):
    """Both know the retain set and the rehearsed utility facts, so neither harmonic mean collapses."""
    for name in ("full", "retain"):
        mu = values[name]["model_utility"]
        assert math.isfinite(mu) and mu > 0.2, (name, mu)
