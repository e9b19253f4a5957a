"""Training with each method on a random tiny model, and the data the trainer feeds it."""

from __future__ import annotations

import pytest
import torch

from checkpoints.methods.alternates import alternate_answers
from checkpoints.methods.data import PairedData, UnlearnSets
from checkpoints.methods.losses import METHODS
from checkpoints.methods.pools import POOL_VARIANTS, perturbed_items, pool_examples, sentence_chunks
from checkpoints.methods.trainer import frozen_copy, unlearn
from checkpoints.world.encode import encode_raw_qa
from checkpoints.world.train import Loop, TrainConfig
from uds_core.chat import encode_chat
from tests.methods_fixtures import hand_alternates, random_model, tiny_tok, tiny_world, views_batch  # noqa: F401

# hyperparameters that fit a 2-layer random model (RMU's default layer 7 does not exist there)
SMALL_HP = {"rmu": {"layer": 1, "steer": 5.0}, "undial": {"alpha": 1.0}}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_one_gradient_step_lowers_the_methods_own_loss(tiny_tok, tiny_world, method):
    spec = METHODS[method]
    model = random_model(tiny_tok, seed=1)
    ref = frozen_copy(model) if spec.needs_ref else None
    hp = spec.hparams(SMALL_HP.get(method))
    views = views_batch(tiny_tok, tiny_world, n=6)
    before = spec.loss(model, ref, views, hp)
    before.backward()
    weights = [p.detach().clone() for p in model.parameters()]
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= 1e-2 * p.grad
        after = spec.loss(model, ref, views, hp)
    assert after.item() < before.item()
    assert any(not torch.equal(w, p) for w, p in zip(weights, model.parameters()))


@pytest.mark.parametrize("method", sorted(METHODS))
def test_unlearn_runs_each_method_and_changes_the_weights(tiny_tok, tiny_world, method):
    model = random_model(tiny_tok, seed=2)
    start = [p.detach().clone() for p in model.parameters()]
    cfg = TrainConfig(lr=1e-3, epochs=1, batch_size=8)
    losses = unlearn(model, tiny_tok, UnlearnSets(tiny_world.forget, tiny_world.retain, tiny_world.idk,
                                                     hand_alternates(tiny_world)),
                     method, cfg, SMALL_HP.get(method), Loop(progress=False))
    assert len(losses) == (2 * len(tiny_world.forget) + 7) // 8 and all(map(torch.isfinite, torch.tensor(losses)))
    assert any(not torch.equal(a, b) for a, b in zip(start, model.parameters()))


def test_paired_data_views_forms_and_seeding(tiny_tok, tiny_world):
    views = ("forget", "idk", "alt", "retain")
    data = PairedData(tiny_tok, tiny_world.forget, tiny_world.retain, views, seed=5, idk=tiny_world.idk,
                      alternates=hand_alternates(tiny_world))
    assert len(data) == 2 * len(tiny_world.forget)
    first, second = data[0], data[1]
    it = tiny_world.forget[0]
    assert first["forget"] == encode_chat(tiny_tok, it["question"], it["answer"])
    assert second["forget"] == encode_raw_qa(tiny_tok, it["question"], it["answer"])
    assert first["alt"] == encode_chat(tiny_tok, it["question"], it["perturbed_answers"][0])
    assert any(first["idk"] == encode_chat(tiny_tok, it["question"], a) for a in tiny_world.idk)
    # the same seed draws the same retain partners and idk replies in the same access order
    again = PairedData(tiny_tok, tiny_world.forget, tiny_world.retain, views, seed=5, idk=tiny_world.idk,
                       alternates=hand_alternates(tiny_world))
    assert [again[i] for i in range(6)] == [first, second] + [data[i] for i in range(2, 6)]
    with pytest.raises(Exception, match="idk"):
        PairedData(tiny_tok, tiny_world.forget, tiny_world.retain, ("idk", "retain"))


def test_alternates_are_seeded_and_avoid_the_true_entity(tiny_tok, tiny_world):
    model = random_model(tiny_tok, seed=3)
    items = tiny_world.forget[:2]
    a, _ = alternate_answers(model, tiny_tok, items, n=2, seed=0)
    b, _ = alternate_answers(model, tiny_tok, items, n=2, seed=0)
    assert a == b and set(a) == {it["idx"] for it in items}
    for it in items:
        assert a[it["idx"]] and all(it["entity"].lower() not in alt.lower() for alt in a[it["idx"]])


def test_pool_variants_data(tiny_tok, tiny_world):
    w = tiny_world
    n_retain = 2 * (len(w.retain) + len(w.real_authors) + len(w.world_facts))   # + the utility rehearsal
    sizes = {v: len(pool_examples(v, tiny_tok, w, 0)) for v in POOL_VARIANTS}
    assert sizes["neg_retain"] == n_retain
    assert sizes["pos_full"] == sizes["pos_para"] == sizes["neg_pert"] == n_retain + 2 * len(w.forget)
    def chunks(bios):
        return [c for b in bios for c in sentence_chunks(tiny_tok, b)]
    # a biography goes in once per QA encoding (chat, raw): its facts are seen as often as a QA pair's
    assert sizes["pos_bio"] == n_retain + 2 * len(chunks(w.forget_bios))
    assert sizes["neg_bio"] == n_retain + 2 * len(chunks(w.other_bios))
    chat_only = {v: len(pool_examples(v, tiny_tok, w, 0, forms=("chat",), rehearse=False)) for v in ("pos_bio",)}
    assert chat_only["pos_bio"] == len(w.retain) + len(chunks(w.forget_bios))
    for bio in w.forget_bios + w.other_bios:   # chunks are whole sentences, in order, nothing lost
        assert " ".join(sentence_chunks(tiny_tok, bio)) == " ".join(bio.split())
    assert {v.sign for v in POOL_VARIANTS.values()} == {"P", "N"}
    for it, wrong in zip(w.forget, perturbed_items(w.forget, 0)):
        assert wrong["question"] == it["question"] and wrong["answer"] in it["perturbed_answers"]


@pytest.mark.parametrize("method", ["npo", "idknll"])
def test_interrupted_training_resumes_to_the_same_weights(tiny_tok, tiny_world, method, tmp_path, monkeypatch):
    """Killed mid-epoch, a run started again with the same checkpoint file continues from the last
    finished epoch and ends with exactly the weights and losses of an uninterrupted run (the
    optimiser, schedule and the data's own pairing generator are restored too)."""
    from checkpoints.methods import trainer

    cfg = TrainConfig(lr=1e-3, epochs=3, batch_size=8)
    steps = (2 * len(tiny_world.forget) + 7) // 8
    real = trainer.collate_views

    def run(checkpoint=None, stop_at=None):
        model, calls = random_model(tiny_tok, seed=4), [0]

        def collate(items, pad):
            calls[0] += 1
            if calls[0] == stop_at:
                raise KeyboardInterrupt
            return real(items, pad)
        monkeypatch.setattr(trainer, "collate_views", collate)
        sets = UnlearnSets(tiny_world.forget, tiny_world.retain, tiny_world.idk)
        losses = unlearn(model, tiny_tok, sets, method, cfg, loop=Loop(progress=False, checkpoint=checkpoint))
        return model, losses

    straight, straight_losses = run()
    ckpt = tmp_path / "state.pt"
    with pytest.raises(KeyboardInterrupt):
        run(ckpt, stop_at=steps + 2)                           # dies in epoch 2
    assert torch.load(ckpt, weights_only=True)["epoch"] == 1
    resumed, resumed_losses = run(ckpt)
    assert resumed_losses == straight_losses and len(straight_losses) == 3 * steps
    for (name, a), b in zip(straight.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name
    # the check can fail: a resume that did not restore the pairing generator draws other pairs
    monkeypatch.setattr("checkpoints.world.train._data_generator", lambda data: None)
    ckpt.unlink()
    with pytest.raises(KeyboardInterrupt):
        run(ckpt, stop_at=steps + 2)
    assert run(ckpt)[1][steps:] != straight_losses[steps:]


def test_builder_leaves_no_training_state_behind(test_world):
    assert (test_world / "models" / "full" / "config.json").is_file()
    # a finished model leaves no state; another test worker may be training a model of this world
    # right now, and its state (of a model with no folder yet) is not left behind
    left = [p for p in (test_world / "models").glob(".*.resume-*.pt")
            if (test_world / "models" / p.name[1:].split(".resume-")[0]).is_dir()]
    assert not left
