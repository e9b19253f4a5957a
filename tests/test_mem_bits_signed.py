"""mem_bits without clipping bias and chance levels: the unclipped mean of a model
that learned nothing about the samples is 0 within its CI while the clipped mean is > 0 (the
bias, derived in closed form); a memorising model is told apart; the chance F1 of the
loss-threshold MIA by hand, by scikit-learn, and as the floor of best-threshold F1."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import f1_score

from uds_analyses.capacity.fit import best_threshold_f1
from uds_analyses.capacity.grid import summarise
from uds_core.errors import UdsInputError
from metrics import mem_bits as mb
from metrics.chance import AUC_CHANCE, f1_chance, f1_chance_counts, positive_share
from metrics.families import mem_bits as family
from metrics.ranking import roc_auc
from metrics.registry import REGISTRY, evaluate
from metrics.result import MetricResult
from types import SimpleNamespace

from metrics.spec import MODEL, REFERENCE
from tests.metrics_fixtures import tiny_splits
from tests.mem_bits_fixtures import same_tokenizer, zoo  # noqa: F401 (fixtures)
from tests.mem_bits_fixtures import answer_bits_token_by_token, mem_bits_ctx

N_ITEMS, SIGMA = 400, 4.0


def _planted(shift: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(reference bits, model bits) of N_ITEMS items: the model codes each item like the reference
    up to N(0, SIGMA^2) noise, `shift` bits better on average (0 = learned nothing of the samples)."""
    rng = np.random.default_rng(seed)
    ref = rng.uniform(20.0, 80.0, N_ITEMS)
    return ref, ref - shift - rng.normal(0.0, SIGMA, N_ITEMS)


def _through_the_metrics(monkeypatch, ref: np.ndarray, model: np.ndarray) -> dict[str, MetricResult]:
    """Run the registered mem_bits and mem_bits_signed computations on planted code lengths (the
    sweep that would produce them replaced: it is tested in tests/test_mem_bits.py)."""
    lengths = np.full(len(ref), 10.0)
    planted = {REFERENCE: (ref, lengths), MODEL: (model, lengths)}
    monkeypatch.setattr(family, "_answer_bits", lambda ctx, role: planted[role])
    ctx = SimpleNamespace(models=SimpleNamespace(spec=lambda role: f"{role}-spec"))
    return {k: REGISTRY[k].compute(ctx) for k in ("mem_bits", "mem_bits_signed")}


def test_a_model_that_learned_nothing_scores_zero_unclipped_but_positive_clipped(monkeypatch):
    ref, model = _planted(shift=0.0)
    out = _through_the_metrics(monkeypatch, ref, model)
    signed, clipped = out["mem_bits_signed"], out["mem_bits"]
    lo, hi = signed.info["ci95"]
    assert lo < 0.0 < hi and signed.value == pytest.approx(np.mean(ref - model), abs=1e-12)
    # E[max(0, e)] for e ~ N(0, s^2) is s / sqrt(2 pi): the bias of the clipped mean, in closed form
    bias = SIGMA / math.sqrt(2 * math.pi)
    se = math.sqrt(SIGMA ** 2 / 2 - bias ** 2) / math.sqrt(N_ITEMS)   # sd of max(0, e) / sqrt(n)
    assert clipped.value == pytest.approx(bias, abs=4 * se) and clipped.value > hi
    assert signed.info["clipped_mean"] == pytest.approx(clipped.value, abs=1e-12)


def test_antithetic_noise_gives_clipped_mean_half_the_mean_absolute_noise(monkeypatch):
    """Noise in +/- pairs: the unclipped mean is exactly 0 and max(0, e) + max(0, -e) = |e|, so the
    clipped mean is mean(|e|) / 2."""
    rng = np.random.default_rng(1)
    e = rng.normal(0.0, SIGMA, N_ITEMS // 2)
    ref = rng.uniform(20.0, 80.0, N_ITEMS)
    out = _through_the_metrics(monkeypatch, ref, ref - np.r_[e, -e])
    assert out["mem_bits_signed"].value == pytest.approx(0.0, abs=1e-9)
    assert out["mem_bits"].value == pytest.approx(np.abs(e).mean() / 2, rel=1e-12)


def test_a_memorising_model_is_told_apart(monkeypatch):
    ref, model = _planted(shift=1.0)
    signed = _through_the_metrics(monkeypatch, ref, model)["mem_bits_signed"]
    lo, hi = signed.info["ci95"]
    assert 0.0 < lo < 1.0 < hi


def test_signed_metric_is_registered_beside_the_clipped_one():
    spec = REGISTRY["mem_bits_signed"]
    assert spec.orientation == "knowledge" and spec.references == ("reference",) and spec.group == "probe"
    assert "retain" in REGISTRY["mem_bits"].description and "superset" in REGISTRY["mem_bits"].description
    assert mb.mem_u_signed([6.0, 2.0], [4.0, 5.0]).tolist() == [2.0, -3.0]


# --- chance levels -------------------------------------------------------------------------------

def test_f1_chance_by_hand():
    # balanced: precision 1/2, recall 1 -> F1 = 2 (1/2)(1) / (1/2 + 1) = 2/3
    assert f1_chance(0.5) == pytest.approx(2 / 3)
    # 1 member in 4: precision 1/4, recall 1 -> F1 = (1/2) / (5/4) = 2/5
    assert f1_chance_counts(1, 3) == pytest.approx(0.4)
    assert f1_chance(1.0) == 1.0 and f1_chance(0.0) == 0.0
    assert positive_share(29, 512) == pytest.approx(29 / 541)
    with pytest.raises(UdsInputError):
        f1_chance(1.5)
    with pytest.raises(UdsInputError):
        positive_share(0, 0)


@pytest.mark.parametrize("n_pos,n_neg", [(29, 512), (512, 512), (300, 100)])
def test_f1_chance_equals_scikit_learn_on_the_all_member_prediction(n_pos, n_neg):
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    assert f1_chance_counts(n_pos, n_neg) == pytest.approx(f1_score(y, np.ones_like(y)), abs=1e-12)


@pytest.mark.parametrize("n_pos", [29, 512])
def test_chance_is_the_floor_of_best_threshold_f1_and_near_it_without_signal(n_pos):
    """Member and fresh losses from the same distribution (nothing memorised): the best threshold
    can do no worse than calling all members (one of its thresholds), and barely better."""
    rng = np.random.default_rng(n_pos)
    member, fresh = rng.normal(100, 5, n_pos), rng.normal(100, 5, 512)
    f1, _ = best_threshold_f1(member, fresh)
    chance = f1_chance_counts(n_pos, 512)
    assert chance <= f1 + 1e-12 and f1 - chance < 0.05


def test_auc_chance_of_an_uninformative_score():
    rng = np.random.default_rng(3)
    pos, neg = rng.normal(size=2000), rng.normal(size=500)
    assert AUC_CHANCE == 0.5 and abs(roc_auc(pos, neg) - AUC_CHANCE) < 0.04


def test_capacity_summary_carries_each_runs_chance_level():
    rows = [{"size": "h16-l2", "hidden": 16, "layers": 2, "params": 100, "n": n, "mem_bits": m, "stop": "max_steps",
             "mia_f1": 0.9, "seconds": 1.0} for n, m in ((58, 50.0), (1000, 80.0))]
    mia = summarise(rows)["mia"]
    # N = 58: 58 members vs 512 fresh, p = 58/570 -> 2p/(1+p) = 116/628; N = 1000: 512 vs 512 -> 2/3
    assert [m["f1_chance"] for m in mia] == [pytest.approx(116 / 628), pytest.approx(2 / 3)]


# --- on trained tiny models (the in-process zoo of tests/test_mem_bits.py) -------------------------



def test_signed_on_the_zoo_matches_a_second_implementation(zoo, same_tokenizer):

    as_retain = evaluate(mem_bits_ctx(zoo, "retain"), ["mem_bits_signed"])["mem_bits_signed"]
    assert as_retain.value == 0.0 and as_retain.info["ci95"] == [0.0, 0.0]
    out = evaluate(mem_bits_ctx(zoo, "unl"), ["mem_bits", "mem_bits_signed"])
    diff = [answer_bits_token_by_token(zoo["tiny:t/retain"], it) - answer_bits_token_by_token(zoo["tiny:t/unl"], it)
            for it in tiny_splits()["forget"]]
    np.testing.assert_allclose(out["mem_bits_signed"].per_example, diff, rtol=1e-4, atol=1e-3)
    assert out["mem_bits_signed"].value == pytest.approx(np.mean(diff), rel=1e-4, abs=1e-3)
    assert out["mem_bits"].value == pytest.approx(np.mean(np.maximum(0, diff)), rel=1e-4, abs=1e-3)
    assert out["mem_bits"].value >= out["mem_bits_signed"].value


def test_cli_writes_the_signed_mean_and_its_ci(test_world, tmp_path, uds):
    proc = uds("metrics", "--model", "tiny:test/base", "--metrics", "mem_bits,mem_bits_signed", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "metrics.json").read_text())
    signed = np.array(doc["per_example"]["mem_bits_signed"], dtype=float)
    lo, hi = doc["info"]["mem_bits_signed"]["ci95"]
    assert doc["metrics"]["mem_bits_signed"] == pytest.approx(signed.mean(), rel=1e-9)
    assert lo <= signed.mean() <= hi
    # the clipped key is the same per-item difference clipped at 0 (its value unchanged by the new key)
    np.testing.assert_allclose(doc["per_example"]["mem_bits"], np.maximum(0.0, signed), atol=1e-9)
    assert doc["info"]["mem_bits_signed"]["clipped_mean"] == pytest.approx(doc["metrics"]["mem_bits"], rel=1e-9)
