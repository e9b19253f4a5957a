"""The eight unlearning losses against numbers derived by hand or by a second, deliberately
plain computation (python `math`, per-token loops)."""

from __future__ import annotations

import math

import pytest
import torch

from checkpoints.methods import losses as L
from checkpoints.methods.trainer import frozen_copy
from tests.methods_fixtures import random_model, tiny_tok, tiny_world, views_batch  # noqa: F401

LOG2 = math.log(2.0)


def plain_logsigmoid(x: float) -> float:
    return math.log(1.0 / (1.0 + math.exp(-x)))


# --- formulas on hand-made tensors -----------------------------------------------------------

@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_npo_equal_policies_is_two_over_beta_log2(beta):
    nll = torch.tensor([3.0, 7.5, 0.2])
    assert L.npo_term(nll, nll.clone(), beta).item() == pytest.approx(2 / beta * LOG2, rel=1e-6)


def test_npo_term_by_hand():
    nll, ref, beta = torch.tensor([2.0, 5.0]), torch.tensor([1.0, 6.0]), 0.5
    want = -(2 / beta) * (plain_logsigmoid(0.5 * 1.0) + plain_logsigmoid(0.5 * -1.0)) / 2
    assert L.npo_term(nll, ref, beta).item() == pytest.approx(want, rel=1e-6)
    # forgetting more (higher NLL) lowers the NPO term
    assert L.npo_term(nll + 10, ref, beta) < L.npo_term(nll, ref, beta)


def test_simnpo_term_by_hand():
    nll, n, beta, delta = torch.tensor([6.0, 2.0]), torch.tensor([3.0, 4.0]), 4.5, 1.0
    want = -(2 / beta) * (plain_logsigmoid(4.5 * (2.0 - 1.0)) + plain_logsigmoid(4.5 * (0.5 - 1.0))) / 2
    assert L.simnpo_term(nll, n, beta, delta).item() == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize("beta", [0.1, 1.0])
def test_dpo_equal_policies_is_two_over_beta_log2(beta):
    w, l = torch.tensor([4.0, 9.0]), torch.tensor([1.0, 2.0])
    assert L.dpo_term(w, w.clone(), l, l.clone(), beta).item() == pytest.approx(2 / beta * LOG2, rel=1e-6)


def test_dpo_term_by_hand():
    # margin = (ref_w - w) - (ref_l - l) = (5 - 3) - (2 - 4) = 4
    got = L.dpo_term(torch.tensor([3.0]), torch.tensor([5.0]), torch.tensor([4.0]), torch.tensor([2.0]), 0.25)
    assert got.item() == pytest.approx(-(2 / 0.25) * plain_logsigmoid(0.25 * 4.0), rel=1e-6)


def test_undial_targets_by_hand():
    # logits [0, 0, 0], label 1, beta = ln 2: exp -> [1, 1/2, 1], normalised [0.4, 0.2, 0.4]
    q = L.undial_targets(torch.zeros(1, 3), torch.tensor([1]), LOG2)
    assert q[0].tolist() == pytest.approx([0.4, 0.2, 0.4], abs=1e-6)
    q0 = L.undial_targets(torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([2]), 0.0)
    assert q0[0].tolist() == pytest.approx(torch.softmax(torch.tensor([1.0, 2.0, 3.0]), 0).tolist())


def test_act_loss_by_hand():
    h = torch.tensor([[[1.0, 1.0], [3.0, 3.0], [2.0, 0.0]],
                      [[0.0, 2.0], [0.0, 0.0], [0.0, 0.0]]])
    mask = torch.tensor([[1, 0, 1], [1, 1, 0]])
    # row 0: tokens 0 and 2: mean_d = 1 and 2 -> (1 + 2) / 2 = 1.5; row 1: 2 and 0 -> 1.0; mean 1.25
    assert L.act_loss(h, torch.zeros_like(h), mask).item() == pytest.approx(1.25)


def test_control_vector():
    c = L.control_vector(16, 10.0, seed=3)
    assert c.norm().item() == pytest.approx(10.0, rel=1e-6) and (c >= 0).all()
    assert torch.equal(c, L.control_vector(16, 10.0, seed=3))
    assert not torch.equal(c, L.control_vector(16, 10.0, seed=4))


def test_token_logprobs_by_hand():
    logits = torch.log(torch.tensor([[[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]]]))
    labels = torch.tensor([[-100, 0, 2]])   # position 0 predicts label 0, position 1 predicts 2
    logp, mask = L.token_logprobs(logits, labels)
    assert mask.tolist() == [[True, True]]
    assert logp[0].tolist() == pytest.approx([math.log(0.5), math.log(0.8)], rel=1e-6)


# --- losses on a random tiny model ---------------------------------------------------------------

def loop_nll(model, batch) -> list[float]:
    """Summed NLL per row by a plain loop over labelled tokens."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    out = []
    for row in range(len(logits)):
        total = 0.0
        for t in range(1, logits.shape[1]):
            y = int(batch["labels"][row, t])
            if y != -100:
                total -= torch.log_softmax(logits[row, t - 1], -1)[y].item()
        out.append(total)
    return out


@pytest.fixture(scope="module")
def setup(tiny_tok, tiny_world):
    model = random_model(tiny_tok)
    return model, frozen_copy(model), views_batch(tiny_tok, tiny_world)


def test_sequence_and_mean_nll_match_plain_loop_and_hf(setup):
    model, _, views = setup
    with torch.no_grad():
        nll, n = L.sequence_nll(model, views["forget"])
        assert nll.tolist() == pytest.approx(loop_nll(model, views["forget"]), rel=1e-4)
        assert n.tolist() == (views["forget"]["labels"][:, 1:] != -100).sum(1).tolist()
        hf_loss = model(**views["retain"]).loss.item()
        assert L.mean_nll(model, views["retain"]).item() == pytest.approx(hf_loss, rel=1e-5)


@pytest.mark.parametrize("method", ["npo", "idkdpo", "altpo"])
def test_reference_methods_at_start_give_two_over_beta_log2(setup, method):
    model, ref, views = setup
    hp = L.METHODS[method].hparams({"alpha": 0.0, "beta": 0.1})
    with torch.no_grad():
        assert L.METHODS[method].loss(model, ref, views, hp).item() == pytest.approx(20 * LOG2, rel=1e-4)


def test_simnpo_and_graddiff_losses_by_plain_computation(setup):
    model, ref, views = setup
    with torch.no_grad():
        f_nll, r_nll = loop_nll(model, views["forget"]), model(**views["retain"]).loss.item()
        n = (views["forget"]["labels"][:, 1:] != -100).sum(1).tolist()
        sim = -(2 / 4.5) * sum(plain_logsigmoid(4.5 * (a / b - 1.0)) for a, b in zip(f_nll, n)) / len(n)
        got = L.simnpo_loss(model, None, views, L.METHODS["simnpo"].hparams({"delta": 1.0}))
        assert got.item() == pytest.approx(0.125 * sim + r_nll, rel=1e-4)
        gd = L.graddiff_loss(model, None, views, L.METHODS["graddiff"].hparams({"alpha": 2.0}))
        assert gd.item() == pytest.approx(-model(**views["forget"]).loss.item() + 2 * r_nll, rel=1e-4)
        idk = L.idknll_loss(model, None, views, L.METHODS["idknll"].hparams())
        assert idk.item() == pytest.approx(model(**views["idk"]).loss.item() + r_nll, rel=1e-4)


def test_undial_with_teacher_equal_student(setup):
    """beta = 0, teacher = student: the loss is the mean entropy of the model's own predictions."""
    model, ref, views = setup
    with torch.no_grad():
        logits = model(input_ids=views["forget"]["input_ids"]).logits[:, :-1]
        mask = views["forget"]["labels"][:, 1:] != -100
        p = torch.softmax(logits[mask], -1)
        entropy = -(p * p.log()).sum(-1).mean().item()
        got = L.undial_loss(model, ref, views, L.METHODS["undial"].hparams({"beta": 0.0}))
    assert got.item() == pytest.approx(entropy, rel=1e-4)


def test_rmu_block_output_and_loss(setup):
    model, ref, views = setup
    f = views["forget"]
    with torch.no_grad():
        hidden = model(input_ids=f["input_ids"], attention_mask=f["attention_mask"],
                       output_hidden_states=True).hidden_states
        h0 = L.block_output(model, 0, f)
        assert torch.allclose(h0, hidden[1], atol=1e-6)   # block 0's output = hidden_states[1]
        hp = L.METHODS["rmu"].hparams({"layer": 0, "steer": 5.0})
        c = L.control_vector(h0.shape[-1], 5.0, 0)
        mask = (f["labels"] != -100).float()
        want = (((h0 - c) ** 2).mean(-1) * mask).sum(1) / mask.sum(1)
        # theta == ref: the retain (EMBED_DIFF) term is 0
        assert L.rmu_loss(model, ref, views, hp).item() == pytest.approx(want.mean().item(), rel=1e-5)


def test_registry_is_complete_and_rejects_unknown_hparams():
    assert set(L.METHODS) == {"graddiff", "npo", "simnpo", "rmu", "idkdpo", "idknll", "altpo", "undial"}
    assert {m for m, spec in L.METHODS.items() if spec.needs_ref} == {"npo", "rmu", "idkdpo", "altpo", "undial"}
    assert L.METHODS["simnpo"].defaults == {"beta": 4.5, "gamma": 0.125, "delta": 0.0, "alpha": 1.0}
    with pytest.raises(Exception, match="no hyperparameter"):
        L.METHODS["npo"].hparams({"lambda": 1.0})
