"""UdsCallback on Hugging Face's `Trainer` (Open-Unlearning's trainers subclass it) and the Hydra
callback that attaches it to Open-Unlearning's trainer registry."""

from __future__ import annotations

import json
import sys
import types

import pytest
from transformers import Trainer, TrainingArguments

from checkpoints.world.store import ensure_tokenizer, load_world, model_dir
from checkpoints.world.train import collate
from uds_core.chat import encode_chat
from uds_core.curves import read_curve
from tests.curve_fixtures import FULL, RETAIN, full_model, weights_equal
from uds.callbacks import UdsCallback
from uds.ou.training import UdsCurve


def hf_trainer(out, callbacks=(), steps: int = 4) -> Trainer:
    """Plain fine-tuning of the test world's full model on a few forget QA (any loss will do: the
    callback must not care), `steps` optimiser steps of 4 items."""
    tok, world = ensure_tokenizer("test", 0), load_world("test")
    data = [encode_chat(tok, it["question"], it["answer"]) for it in world.forget[:16]]
    args = TrainingArguments(output_dir=str(out), max_steps=steps, per_device_train_batch_size=4, learning_rate=2e-3,
                             logging_steps=1, save_strategy="no", report_to=[], use_cpu=True, seed=5,
                             remove_unused_columns=False, disable_tqdm=True)
    return Trainer(model=full_model(), args=args, train_dataset=data, processing_class=tok,
                   data_collator=lambda b: collate(b, tok.pad_token_id), callbacks=list(callbacks))


def losses(trainer: Trainer) -> list[float]:
    return [e["loss"] for e in trainer.state.log_history if "loss" in e]


def test_hf_trainer_losses_unchanged_and_last_point_is_uds_score(test_world, tmp_path, uds):
    plain = hf_trainer(tmp_path / "plain")
    plain.train()
    watched = hf_trainer(tmp_path / "run", [UdsCallback(FULL, RETAIN, every=3, metrics=("prob",))])
    watched.train()
    assert losses(watched) == losses(plain) and len(losses(plain)) == 4
    assert weights_equal(watched.model, plain.model)
    curve = read_curve(tmp_path / "run" / "uds_curve.jsonl")      # the default place: the Trainer's output_dir
    assert [r["step"] for r in curve.records] == [0, 3, 4] and curve.name == "run"
    assert curve.records[-2]["train_loss"] == losses(plain)[1]   # logged after on_step_end: the step before's
    watched.save_model(str(tmp_path / "final"))
    data = model_dir("test", 0, "full").parent.parent / "data" / "uds_data.json"
    r = uds("--quiet", "score", "--unlearned", str(tmp_path / "final"), "--full", FULL, "--retain", RETAIN,
            "--data", str(data), "--out", str(tmp_path / "score"))
    assert r.returncode == 0, r.stderr
    assert abs(json.loads((tmp_path / "score" / "summary.json").read_text())["uds"] - curve.records[-1]["uds"]) <= 1e-6


@pytest.fixture
def ou_registry(monkeypatch):
    """A stand-in for Open-Unlearning's `trainer` package: its TRAINER_REGISTRY with one trainer."""
    registry = {"Trainer": Trainer}
    monkeypatch.setitem(sys.modules, "trainer", types.SimpleNamespace(TRAINER_REGISTRY=registry))
    return registry


def test_hydra_callback_gives_every_ou_trainer_a_uds_callback(test_world, tmp_path, ou_registry):
    hook = UdsCurve(full_model=FULL, retain_model=RETAIN, every=2, metrics=["prob"], curve=str(tmp_path / "c.jsonl"))
    hook.on_job_start(config=None)
    hook.on_job_start(config=None)        # a second job start wraps the original again, not the wrapper
    build = ou_registry["Trainer"]
    assert build.uds_wraps is Trainer and build.__name__ == "Trainer"
    args = TrainingArguments(output_dir=str(tmp_path / "o"), report_to=[], use_cpu=True)
    trainer = build(model=full_model(), args=args)
    attached = [cb for cb in trainer.callback_handler.callbacks if isinstance(cb, UdsCallback)]
    assert len(attached) == 1 and attached[0].every == 2 and attached[0].curve == tmp_path / "c.jsonl"


def test_hydra_callback_bad_input_is_one_line_and_exit_2(test_world, tmp_path, ou_registry, capsys):
    from transformers import LlamaConfig, LlamaForCausalLM

    for keys, text in (({"every": 0}, "integer N >= 1, got 0"), ({"evry": 3}, "unknown key 'evry'"),
                       ({"metrics": ["prob", "bogus"]}, "unknown key 'bogus'")):
        with pytest.raises(SystemExit) as e:
            UdsCurve(full_model=FULL, retain_model=RETAIN, **keys)
        err = capsys.readouterr().err
        assert e.value.code == 2 and text in err and len(err.strip().splitlines()) == 1, err
    UdsCurve(full_model=FULL, retain_model=RETAIN).on_job_start(config=None)
    small = LlamaForCausalLM(LlamaConfig(**{**full_model().config.to_dict(), "num_hidden_layers": 2}))
    with pytest.raises(SystemExit) as e:     # OU's model does not fit the anchors: stopped before train()
        ou_registry["Trainer"](model=small, args=TrainingArguments(output_dir=str(tmp_path), report_to=[],
                                                                   use_cpu=True))
    err = capsys.readouterr().err
    assert e.value.code == 2 and "number of decoder layers differs" in err and len(err.strip().splitlines()) == 1


def test_hydra_callback_without_ou_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "trainer", None)
    hook = UdsCurve(full_model=FULL, retain_model=RETAIN)
    with pytest.raises(SystemExit):
        hook.on_job_start(config=None)
    assert "trainer registry is not importable" in capsys.readouterr().err
