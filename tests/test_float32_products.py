"""bfloat16 products through float32 kernels (uds_core/float32_products.py), against float64
references rounded to bfloat16 and against torch's own bfloat16 kernels on a small Qwen2."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from uds_core import float32_products as fp
from uds_core.float32_products import float32_products

BF = torch.bfloat16


def _ulps(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in units of bfloat16's spacing at |exact| (8 significant bits)."""
    spacing = torch.ldexp(torch.ones_like(exact), torch.frexp(exact.abs().clamp_min(1e-30)).exponent - 8)
    return (got.double() - exact).abs() / spacing


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(fp, "BLOCK_ELEMENTS", 300)   # weights of the tests are widened in several blocks


def _data(*shapes: tuple[int, ...]) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(*s, generator=gen).to(BF) for s in shapes]


def test_linear_and_its_gradients_are_float64_rounded_to_bfloat16(small_blocks):
    x, w, b, g = _data((3, 5, 64), (40, 64), (40,), (3, 5, 40))
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_()
    with float32_products():
        out = F.linear(x, w, b)
        out.backward(g)
    xd, wd, bd, gd = (t.detach().double() for t in (x, w, b, g))
    assert out.dtype == BF and out.shape == (3, 5, 40)
    for got, exact in ((out, xd @ wd.T + bd), (x.grad, gd @ wd), (w.grad, gd.reshape(-1, 40).T @ xd.reshape(-1, 64)),
                       (b.grad, gd.sum((0, 1)))):
        # the float32 sum is within a float32 rounding of the exact one, so the result is the exact
        # value's nearest bfloat16 or, right at a midpoint, its neighbour
        ulps = _ulps(got.detach(), exact)
        assert got.dtype == BF and ulps.max() <= 1.0 and (ulps <= 0.5).float().mean() > 0.99


def test_matmul_bmm_and_broadcasting_gradients(small_blocks):
    a, b, c, g = _data((2, 3, 7, 16), (16, 9), (2, 3, 16, 9), (2, 3, 7, 9))
    for op, rhs in ((torch.matmul, b), (torch.matmul, c), (lambda p, q: p @ q, b),
                    (lambda p, q: torch.bmm(p.flatten(0, 1), q.flatten(0, 1)).view(2, 3, 7, 9), c)):
        lhs, rhs = a.clone().requires_grad_(), rhs.clone().requires_grad_()
        with float32_products():
            out = op(lhs, rhs)
            out.backward(g)
        ad, rd, gd = lhs.detach().double(), rhs.detach().double(), g.double()
        grad_rhs = ad.transpose(-1, -2) @ gd
        grad_rhs = grad_rhs.sum((0, 1)) if rhs.dim() == 2 else grad_rhs
        for got, exact in ((out, ad @ rd), (lhs.grad, gd @ rd.transpose(-1, -2)), (rhs.grad, grad_rhs)):
            assert got.shape == exact.shape and got.dtype == BF and _ulps(got.detach(), exact).max() <= 1.0


def test_attention_is_float64_attention_rounded(small_blocks):
    q, k, v = _data((2, 4, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8))
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    with float32_products():
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    kd, vd = (t.double().repeat_interleave(2, dim=1) for t in (k, v))
    scores = (q.double() @ kd.transpose(-1, -2)) / 8 ** 0.5
    exact = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ vd
    assert out.dtype == BF and _ulps(out, exact).max() <= 1.0


def test_other_dtypes_pass_through_bit_for_bit():
    x, w = (t.float() for t in _data((4, 32), (8, 32)))
    with float32_products():
        inside = (F.linear(x, w), x @ w.T, F.linear(x.double(), w.double()))
    assert torch.equal(inside[0], F.linear(x, w)) and torch.equal(inside[1], x @ w.T)
    assert inside[2].dtype == torch.float64


def test_gradient_checkpointing_recomputes_the_same_operations(small_blocks):
    """A checkpointed block recomputes its forward inside backward: the same products run there,
    so its gradients are those of the block without checkpointing, bit for bit."""
    from torch.utils.checkpoint import checkpoint

    w1, w2, x = _data((48, 32), (32, 48), (6, 32))

    def block(t, a, b):
        return F.linear(torch.relu(F.linear(t, a)), b)
    grads = []
    for checkpointed in (False, True):
        params = [w1.clone().requires_grad_(), w2.clone().requires_grad_()]
        with float32_products():
            out = checkpoint(block, x, *params, use_reentrant=False) if checkpointed else block(x, *params)
            out.float().square().sum().backward()
        grads.append([p.grad for p in params])
    assert all(torch.equal(a, b) for a, b in zip(*grads))


def test_no_float32_copy_of_a_weight_is_kept_for_backward(small_blocks):
    """What autograd saves of a linear layer is its bfloat16 input and weight, nothing widened."""
    layer = torch.nn.Linear(64, 48).to(BF)
    x = _data((5, 64))[0].requires_grad_()
    saved: list[torch.Tensor] = []

    def pack(t):
        saved.append(t)
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), float32_products():
        layer(x).sum().backward()
    assert saved and all(t.dtype == BF for t in saved)
    assert any(t.numel() == layer.weight.numel() for t in saved)   # the weight (as linear transposes it)


def test_a_small_qwen2_trains_like_torchs_own_bfloat16(small_blocks):
    """Loss and gradients of a 2-layer Qwen2 in bfloat16, through float32 kernels, are as close to
    the same model in float32 as torch's bfloat16 kernels are (both eager and SDPA attention)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=2,
                      num_hidden_layers=2, vocab_size=97, tie_word_embeddings=False)
    ids = torch.randint(0, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    for attention in ("eager", "sdpa"):
        torch.manual_seed(0)
        model = Qwen2ForCausalLM._from_config(cfg, attn_implementation=attention, dtype=BF)

        def run(m):
            m.zero_grad()
            loss = m(ids, labels=ids).loss
            loss.backward()
            return loss.item(), [p.grad.double() for p in m.parameters()]
        ref_loss, ref = run(copy.deepcopy(model).float())
        own_loss, own = run(model)
        with float32_products():
            ours_loss, ours = run(model)

        def error(grads):
            return sum(float((g - r).norm() / r.norm()) for g, r in zip(grads, ref)) / len(ref)
        assert abs(ours_loss - ref_loss) <= 2 * abs(own_loss - ref_loss) + 2e-3
        assert error(ours) <= 1.5 * error(own) + 1e-3, attention
