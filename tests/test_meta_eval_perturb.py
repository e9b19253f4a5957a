"""NF4 quantisation (bitsandbytes on CPU) and relearning on small random Llamas."""

from __future__ import annotations

import json
import math

import pytest
import torch

from meta_eval.perturb import dequantize_linears, ensure_relearned, load_nf4, nf4_config, relearn_config
from tests.metrics_fixtures import qa_item, tiny_model, tiny_tokenizer

bnb = pytest.importorskip("bitsandbytes")


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("m") / "model"
    tiny_model(0, hidden=64, layers=2).save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def test_nf4_on_cpu_equals_bitsandbytes_float32_path(saved_model):
    """The dense replacement computes exactly what bitsandbytes' float32 path computes (its
    bfloat16 CPU kernel disabled), and the weights really are 4-bit: not the float weights."""
    from checkpoints.specs import load_model

    ids = torch.tensor([[1, 5, 9, 17, 33, 40, 2], [1, 7, 8, 9, 10, 11, 12]])
    quant = load_model(str(saved_model), device="cpu", dtype=torch.float32, quantization_config=nf4_config("cpu"),
                       device_map={"": "cpu"})
    linears = [m for m in quant.modules() if isinstance(m, bnb.nn.Linear4bit)]
    assert len(linears) == 2 * 7                                   # q k v o gate up down per block
    assert linears[0].weight.quant_state.blocksize == 64 and linears[0].weight.quant_state.quant_type == "nf4"
    for m in linears:
        m.support_avx512bf16_for_cpu = False
    dense = load_nf4(str(saved_model))
    assert not any(isinstance(m, bnb.nn.Linear4bit) for m in dense.modules())
    with torch.no_grad():
        a, b = quant(ids).logits, dense(ids).logits
        c = load_model(str(saved_model), dtype=torch.float32)(ids).logits
    assert torch.equal(a, b)
    assert (b - c).abs().max() > 1e-4                              # quantisation changed the function
    ref = load_model(str(saved_model), dtype=torch.float32)
    assert torch.equal(dense.model.embed_tokens.weight, ref.model.embed_tokens.weight)   # kept unquantised
    w, w0 = dense.model.layers[0].mlp.down_proj.weight, ref.model.layers[0].mlp.down_proj.weight
    assert w.dtype == torch.float32 and 0 < (w - w0).norm() / w0.norm() < 0.2
    # every block of 64 consecutive weights holds at most 16 distinct values (4 bits) times its scale
    blocks = w.detach().reshape(-1, 64)
    assert max(len(torch.unique(row)) for row in blocks) <= 16


def test_dequantize_counts_and_gradients(saved_model):
    from checkpoints.specs import load_model

    quant = load_model(str(saved_model), device="cpu", dtype=torch.float32, quantization_config=nf4_config("cpu"),
                       device_map={"": "cpu"})
    assert dequantize_linears(quant) == 14 and dequantize_linears(quant) == 0
    loss = quant(torch.tensor([[1, 5, 9, 17]]), labels=torch.tensor([[1, 5, 9, 17]])).loss
    loss.backward()                                                # Fisher needs gradients (spec §4.5)
    assert quant.model.layers[0].self_attn.q_proj.weight.grad is not None


def test_relearning_recipe_and_cache(saved_model, tmp_path):
    tok = tiny_tokenizer()
    forget = [qa_item(i) for i in range(5)]
    recipe = relearn_config(batch_size=4, lr=1e-3)
    t = recipe.train
    assert (t.epochs, t.warmup_ratio, t.weight_decay, t.seed) == (1, 0.0, 0.0, 42)
    folder = ensure_relearned(str(saved_model), tmp_path / "r", "stamp-1", tok, forget, recipe)
    losses = json.loads((folder / "losses.json").read_text())
    assert len(losses) == math.ceil(2 * len(forget) / 4)          # chat + raw form of each item, 1 epoch
    from checkpoints.specs import load_model

    before = load_model(str(saved_model)).model.layers[0].mlp.up_proj.weight
    after = load_model(str(folder)).model.layers[0].mlp.up_proj.weight
    assert not torch.equal(before, after)
    stamp = (folder / "config.json").stat().st_mtime_ns
    assert ensure_relearned(str(saved_model), tmp_path / "r", "stamp-1", tok, forget, recipe) == folder
    assert (folder / "config.json").stat().st_mtime_ns == stamp      # cached: not retrained
    ensure_relearned(str(saved_model), tmp_path / "r", "stamp-2", tok, forget, recipe)
    assert (folder / "config.json").stat().st_mtime_ns != stamp      # a new parent is relearned
    assert json.loads((folder / "relearn.json").read_text())["recipe"]["train"]["lr"] == 1e-3
