"""CKA, Logit Lens and Fisher Masked: formulas by hand / by a naive second implementation, and
the model plumbing (captured states, lens decoding, per-item Fisher) against direct computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from metrics.forward import PassOptions
from metrics.hidden import capture_entity_states, fisher_diagonal, lens_logprobs
from metrics.representation import (cka_score, fisher_mask, fisher_masked_score, linear_cka,
                                    logit_lens_item, logit_lens_score, mask_size)
from tests.metrics_fixtures import qa_item, tiny_model, tiny_tokenizer
from uds_core.prompts import prepare_items


# --- CKA ---------------------------------------------------------------------------------------

def _naive_cka(x: np.ndarray, y: np.ndarray) -> float:
    """Independent: HSIC form with an explicit centring matrix, float64."""
    n = x.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n
    k, l = h @ x @ x.T @ h, h @ y @ y.T @ h
    return float(np.trace(k @ l) / np.sqrt(np.trace(k @ k) * np.trace(l @ l)))


@pytest.mark.parametrize("n, d", [(12, 40), (50, 8)])   # both code paths (N < D and N >= D)
def test_linear_cka_identities_and_naive(n, d):
    g = torch.Generator().manual_seed(n)
    x, y = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
    q, _ = torch.linalg.qr(torch.randn(d, d, generator=g))
    assert linear_cka(x, x) == pytest.approx(1.0, abs=1e-5)
    assert linear_cka(x, x @ q) == pytest.approx(1.0, abs=1e-5)          # orthogonal rotation
    assert linear_cka(x, 3.0 * x + 7.0) == pytest.approx(1.0, abs=1e-5)  # isotropic scale + shift
    assert linear_cka(x, y) == pytest.approx(_naive_cka(x.double().numpy(), y.double().numpy()), abs=1e-5)
    assert linear_cka(torch.zeros(n, d), x) == 0.0                        # denominator < EPS


def test_cka_score_by_hand():
    # layer 0: w = 0.5, erasure = 0.25/0.5; layer 1: c = 1 has no weight
    assert cka_score([0.5, 1.0], [0.75, 0.3]) == pytest.approx(0.5, rel=1e-6)
    c = [0.2, 0.6, 0.9]
    assert cka_score(c, c) == 0.0                                          # model = full
    assert cka_score(c, [1.0, 1.0, 1.0]) == pytest.approx(1.0, abs=1e-6)  # model = retain
    # weighted: (0.8·0.5 + 0.4·1) / 1.2 with erasures 0.4/0.8 and clip(0.5/0.4)
    assert cka_score([0.2, 0.6], [0.6, 1.1]) == pytest.approx((0.8 * 0.5 + 0.4 * 1.0) / 1.2, rel=1e-6)
    assert cka_score([1.0], [0.5]) is None


# --- Logit Lens ----------------------------------------------------------------------------------

def test_logit_lens_by_hand():
    k_full, k_ret = np.array([0.0, -0.5, -2.0]), np.array([-0.01, -1.5, -4.0])   # d_ret = .01, 1, 2
    k_unl = np.array([0.0, -1.0, -5.0])                                          # d_unl = 0, .5, 3
    assert logit_lens_item(k_full, k_ret, k_unl) == pytest.approx((1 * 0.5 + 2 * 1.0) / 3, rel=1e-6)
    assert logit_lens_item(k_full, k_ret, k_full) == 0.0                       # full scores 0
    assert logit_lens_item(k_full, k_ret, k_ret) == pytest.approx(1.0, abs=1e-7)  # retain ≈ 1
    assert logit_lens_item(k_full, k_ret, k_ret) < 1.0                          # ... but below it (EPS)
    zeros = np.zeros(3)
    assert logit_lens_item(zeros, zeros - 0.05, k_ret) is None                  # d_ret = 0.05 is not > 0.05


def test_logit_lens_score_skips_items():
    k_full = np.array([[0.0, 0.0], [0.0, 0.0]])        # (L=2, N=2)
    k_ret = np.array([[-1.0, 0.0], [-1.0, 0.0]])       # item 1 has no layer above tau
    k_unl = np.array([[-0.5, 5.0], [-0.5, 5.0]])
    score, per_item = logit_lens_score(k_full, k_ret, k_unl)
    assert per_item[1] is None and score == pytest.approx(0.5, rel=1e-6)


# --- Fisher Masked -------------------------------------------------------------------------------

def test_fisher_mask_top_k_and_floor():
    f_ret, f_full = torch.tensor([5.0, 1.0, 3.0, 0.5, 4.0]), torch.ones(5)   # a = [4, 0, 2, 0, 3]
    m = fisher_mask(f_ret, f_full, 0.4)                                       # floor(2.0) = 2
    assert sorted(m.indices.tolist()) == [0, 4]
    assert (m.mean_retain, m.mean_full, m.excess_full) == pytest.approx((4.5, 1.0, 3.5))
    assert fisher_mask(f_ret, f_full, 0.1).indices.tolist() == [0]            # max(1, floor(0.5))
    assert [mask_size(n, 1e-3) for n in (10, 999, 1000, 2999)] == [1, 1, 1, 2]


def test_fisher_masked_score_by_hand():
    f_ret, f_full = torch.tensor([5.0, 1.0, 3.0, 0.5, 4.0]), torch.ones(5)
    m = fisher_mask(f_ret, f_full, 0.4)                          # excess_full = 3.5
    assert fisher_masked_score([m], [f_ret]) == 1.0               # retain
    assert fisher_masked_score([m], [f_full]) == pytest.approx(0.0, abs=1e-8)   # full
    half = torch.tensor([2.75, 0, 0, 0, 2.75])                     # excess 1.75: ratio 0.5
    assert fisher_masked_score([m], [half]) == pytest.approx(0.5, rel=1e-6)
    # two blocks: weights 3.5 and 1.0, erasures 0.5 and 1.0
    m2 = fisher_mask(torch.tensor([2.0, 1.0]), torch.tensor([1.0, 1.0]), 0.5)
    assert fisher_masked_score([m, m2], [half, torch.tensor([2.0, 9.0])]) == pytest.approx((3.5 * 0.5 + 1.0) / 4.5)
    flat = fisher_mask(torch.ones(3), torch.ones(3), 0.5)          # no excess anywhere
    assert fisher_masked_score([flat], [torch.zeros(3)]) is None


# --- model plumbing --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prepared():
    items, skipped = prepare_items([qa_item(i) for i in range(5)], tiny_tokenizer())
    assert not skipped
    return items


def test_captured_states_are_block_outputs_and_lens_matches_model(prepared):
    model, tok = tiny_model(3), tiny_tokenizer()
    states = capture_entity_states(model, prepared, batch_size=2, pad_id=tok.pad_token_id, progress=False)
    item = prepared[4]
    rows = (states.item_of_row == 4).nonzero().squeeze(-1)
    with torch.no_grad():
        out = model(torch.tensor([item.input_ids]), output_hidden_states=True)
    pos = list(item.eval_positions)
    # block 0 output = hidden_states[1]; padding in the batch changes nothing
    assert torch.allclose(states.layers[0][rows], out.hidden_states[1][0, pos], atol=1e-5)
    # last block is pre-norm: decoding it through the model's own head gives the model's log-probs
    lens = lens_logprobs(states, model)
    lp = torch.log_softmax(out.logits[0, pos], -1).gather(-1, torch.tensor(item.target_ids)[:, None])
    assert lens[-1, 4] == pytest.approx(float(lp.mean()), abs=1e-5)


def test_fisher_diagonal_matches_per_item_backward(prepared):
    model, tok = tiny_model(4), tiny_tokenizer()
    fisher = fisher_diagonal(model, prepared, PassOptions(4, tok.pad_token_id, progress=False))
    # naive: one item at a time, loss.backward(), square the .grad of each block's parameters
    blocks = list(model.model.layers)
    naive = [torch.zeros(sum(p.numel() for p in b.parameters())) for b in blocks]
    for item in prepared:
        model.zero_grad()
        logits = model(torch.tensor([item.input_ids])).logits[0]
        lp = torch.log_softmax(logits[list(item.eval_positions)], -1)
        (-lp.gather(-1, torch.tensor(item.target_ids)[:, None]).mean()).backward()
        for acc, b in zip(naive, blocks):
            acc += torch.cat([p.grad.flatten() for p in b.parameters()]).square()
    for got, want in zip(fisher, naive):
        assert torch.allclose(got, want / len(prepared), rtol=1e-4, atol=1e-10)
    assert all(p.requires_grad for p in model.parameters())   # flags restored
