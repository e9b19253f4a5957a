"""UdsCallback on the project's own training loop: the training is undisturbed, the
curve's last point is `uds score` / `uds metrics` of the saved model, bad input stops before
training, a failing evaluation does not."""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import torch

from checkpoints.world.build import ensure_model
from uds_core.curves import read_curve
from uds_core.errors import UdsInputError
from tests.conftest import TEST_HOME
from tests.curve_fixtures import (FULL, NPO, RETAIN, full_model, recipe_unlearn, scratch_home, short_unlearn,
                                  weights_equal)
from uds.callbacks import UdsCallback
from uds.callbacks.isolation import evaluation_mode

METRICS = ("prob", "truth_ratio", "es", "retain_q_prob")


def callback(tmp_path, **kw) -> UdsCallback:
    return UdsCallback(FULL, RETAIN, curve=tmp_path / "curve.jsonl", **{"every": 1, "metrics": METRICS, **kw})


def test_existing_recipe_trains_to_the_built_model_with_and_without_the_callback(test_world, tmp_path):
    """The recipe's weights after training are those of the model the builder made (no callback
    there), bit for bit; with a callback attached the per-step losses and weights are the same."""
    built = type(full_model()).from_pretrained(ensure_model("test", 0, NPO, progress=False))
    plain, plain_losses = recipe_unlearn()
    watched, watched_losses = recipe_unlearn(callbacks=[callback(tmp_path, every=7, metrics=("prob",))])
    assert weights_equal(plain, built)
    assert watched_losses == plain_losses
    assert weights_equal(watched, plain)
    steps = [r["step"] for r in read_curve(tmp_path / "curve.jsonl").records]
    assert steps == [0, 7, 14, 21, 28, 35, len(plain_losses)]


def test_training_state_is_as_found_after_an_evaluation(test_world, tmp_path):
    cb = callback(tmp_path)
    model = full_model().train()
    model.model.layers[1].eval()                   # a mixed state must come back mixed
    model(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
    grads = [p.grad.clone() for p in model.parameters()]
    torch.manual_seed(11), random.seed(11), np.random.seed(11)
    states = (torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy())
    cb.evaluator.attach(model)                     # loads the anchors (when not loaded yet in this process)
    assert torch.equal(torch.get_rng_state(), states[0]) and random.getstate() == states[1]
    modes = [m.training for m in model.modules()]
    with evaluation_mode(model):
        assert not torch.is_grad_enabled() and not any(m.training for m in model.modules())
        values = cb.evaluator.evaluate(model)
        torch.rand(3), random.random(), np.random.rand()   # draws inside are undone on the way out
    assert set(values) >= {"uds", *METRICS}
    assert torch.is_grad_enabled()
    assert [m.training for m in model.modules()] == modes
    assert torch.equal(torch.get_rng_state(), states[0]) and random.getstate() == states[1]
    assert np.array_equal(np.random.get_state()[1], states[2])
    assert all(torch.equal(g, p.grad) for g, p in zip(grads, model.parameters()))
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())


def test_last_point_is_uds_score_and_uds_metrics_of_the_saved_model(test_world, tmp_path, monkeypatch, uds):
    """`uds world build --curve-every` in a scratch home: the curve's last point against the
    commands run afterwards on the model it saved."""
    home = scratch_home(tmp_path / "home", TEST_HOME)
    curves = tmp_path / "curves"
    env = {"UDS_HOME": str(home)}
    r = uds("--quiet", "world", "build", "--preset", "test", "--models", NPO, "--no-quality", "--curve-every", "8",
            "--curve-dir", str(curves), "--curve-metrics", ",".join(METRICS), env=env)
    assert r.returncode == 0, r.stderr
    curve = read_curve(curves / f"{NPO}.jsonl")
    last = curve.records[-1]
    assert [x["step"] for x in curve.records] == [0, 8, 16, 24, 32, 40] and last["step"] == curve.settings["max_steps"]
    r = uds("--quiet", "score", "--unlearned", f"tiny:test/{NPO}", "--out", str(tmp_path / "score"), env=env)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "score" / "summary.json").read_text())
    assert abs(last["uds"] - summary["uds"]) <= 1e-6 and last["n_scored"] == summary["n_scored"]
    r = uds("--quiet", "metrics", "--model", f"tiny:test/{NPO}", "--metrics", ",".join(METRICS),
            "--out", str(tmp_path / "metrics"), env=env)
    assert r.returncode == 0, r.stderr
    measured = json.loads((tmp_path / "metrics" / "metrics.json").read_text())["metrics"]
    for key in METRICS:
        assert abs(last[key] - measured[key]) <= 1e-6, key
    # the first point is the full model: UDS 0 by the identity of spec §2.5
    assert curve.records[0]["uds"] == 0.0


def test_a_failing_evaluation_is_recorded_and_training_goes_on(test_world, tmp_path, monkeypatch, capsys):
    cb = callback(tmp_path, metrics=())
    real, calls = cb.evaluator.evaluate, []

    def flaky(model):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("out of memory\nsecond line")
        return real(model)
    monkeypatch.setattr(cb.evaluator, "evaluate", flaky)
    _, plain = short_unlearn()
    model, losses = short_unlearn(callbacks=[cb])
    assert losses == plain
    records = read_curve(tmp_path / "curve.jsonl").records
    assert [r["step"] for r in records] == list(range(len(losses) + 1))
    assert records[1]["error"] == "RuntimeError: out of memory" and "uds" not in records[1]
    assert all("uds" in r for i, r in enumerate(records) if i != 1)
    assert "evaluation at step 1 failed (RuntimeError: out of memory); training goes on" in capsys.readouterr().err


def test_anchors_that_do_not_fit_fail_before_the_first_step(test_world, tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(**{**full_model().config.to_dict(), "num_hidden_layers": 2})
    model = LlamaForCausalLM(cfg)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(UdsInputError, match="number of decoder layers differs"):
        short_unlearn(callbacks=[callback(tmp_path)], model=model)
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    assert not (tmp_path / "curve.jsonl").exists()


@pytest.mark.parametrize("kw, message", [
    ({"every": 0}, "integer N >= 1, got 0"),
    ({"every": -3}, "integer N >= 1, got -3"),
    ({"metrics": ("prob", "nope")}, "unknown key 'nope'"),
    ({"best": "uds, prob>=x"}, "the floor must read"),
    ({"best": "rouge"}, "'rouge' is not recorded"),
])
def test_bad_settings_fail_when_the_callback_is_made(test_world, tmp_path, kw, message):
    with pytest.raises(UdsInputError, match=message):
        callback(tmp_path, **kw)


def test_unwritable_curve_fails_when_the_callback_is_made(test_world, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UdsInputError, match="its folder cannot be made"):
        UdsCallback(FULL, RETAIN, curve=tmp_path / "file" / "c.jsonl")
    with pytest.raises(UdsInputError, match="is a folder"):
        UdsCallback(FULL, RETAIN, curve=tmp_path)
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o500)
    try:
        if not os.access(tmp_path / "ro", os.W_OK):   # root may write anywhere: then this case says nothing
            with pytest.raises(UdsInputError, match="not writable"):
                UdsCallback(FULL, RETAIN, curve=tmp_path / "ro" / "c.jsonl")
    finally:
        (tmp_path / "ro").chmod(0o700)


def test_world_build_curve_flags_fail_in_one_line_before_building(test_world, tmp_path, uds):
    home = scratch_home(tmp_path / "home", TEST_HOME)
    (tmp_path / "file").write_text("x")
    for flags, text in ((["--curve-every", "0"], "--curve-every must be an integer >= 1, got 0"),
                        (["--curve-every", "2", "--curve-metrics", "prob,bogus"], "unknown key 'bogus'"),
                        (["--curve-every", "2", "--curve-dir", str(tmp_path / "file" / "sub")], "--curve-dir")):
        r = uds("world", "build", "--preset", "test", "--models", NPO, "--no-quality", *flags,
                env={"UDS_HOME": str(home)})
        assert r.returncode == 2 and text in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (home / "world" / "test-0" / "models" / NPO).exists()


def test_best_checkpoint_is_saved_and_is_the_chosen_step(test_world, tmp_path, uds):
    cb = callback(tmp_path, best="max:uds, retain_q_prob>=0.99x", best_dir=tmp_path / "best",
                  metrics=("retain_q_prob",))
    short_unlearn(callbacks=[cb])
    records = read_curve(tmp_path / "curve.jsonl").records
    floor = 0.99 * records[0]["retain_q_prob"]
    chosen = max((r for r in records if r["retain_q_prob"] >= floor), key=lambda r: (r["uds"], -r["step"]))
    assert records[-1]["best_step"] == chosen["step"]
    saved = json.loads((tmp_path / "best" / "uds_best.json").read_text())
    assert saved["step"] == chosen["step"] and saved["uds"] == chosen["uds"]
    data = TEST_HOME / "world" / "test-0" / "data" / "uds_data.json"
    r = uds("--quiet", "score", "--unlearned", str(tmp_path / "best"), "--full", FULL, "--retain", RETAIN,
            "--data", str(data), "--out", str(tmp_path / "score"))
    assert r.returncode == 0, r.stderr   # the saved folder is the model as it was at the chosen step
    assert abs(json.loads((tmp_path / "score" / "summary.json").read_text())["uds"] - chosen["uds"]) <= 1e-6
