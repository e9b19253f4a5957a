"""The arithmetic of experiments/llama1b_work.py: counts worked by hand on two small items, and the
weights it charges per token equal to the parameters of the llama1b preset's model."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
from llama1b_work import Item, Shape, fast_work, gflops, reference_work

SMALL = Shape(hidden=4, intermediate=8, heads=2, kv_heads=1, layers=2, vocab=10)
A, B = Item(prompt=3, continuation=2, start=3, end=5), Item(prompt=4, continuation=2, start=4, end=6)


def test_weights_per_token_by_hand():
    # q, o: 4 x 4 each; k, v: 4 x 2 each; gate, up, down: 4 x 8 each
    assert SMALL.layer_weights == 2 * 16 + 2 * 8 + 3 * 32 == 144
    assert SMALL.head_weights == 40


def test_reference_work_by_hand():
    # batch of 2 padded to 6 tokens; 3 + 2 * 2 = 7 whole passes of 12 tokens through 2 blocks and the head;
    # generations: 3 x (prompt + 29) tokens through the blocks, 3 x 30 rows through the head, per item
    assert reference_work([A, B], SMALL, batch_size=2) == {"token_blocks": 7 * 12 * 2 + 3 * 32 * 2 + 3 * 33 * 2,
                                                         "head_rows": 7 * 12 + 2 * 90}
    # batch size 1: no padding (5 + 6 tokens)
    assert reference_work([A, B], SMALL, batch_size=1)["token_blocks"] == 7 * 11 * 2 + 3 * 32 * 2 + 3 * 33 * 2


def test_fast_work_by_hand():
    # per item: 3 models x end tokens x 2 blocks; per stage, layer 0's window through block 1 (layer 1's
    # through none); the head on the window for the baseline and for each of 2 stages x 2 layers
    assert fast_work([A], SMALL) == {"token_blocks": 3 * 5 * 2 + 2 * 2 * 1, "head_rows": 2 + 2 * 2 * 2}
    assert fast_work([A, B], SMALL) == {"token_blocks": 34 + 3 * 6 * 2 + 2 * 2 * 1, "head_rows": 10 + 10}
    assert gflops({"token_blocks": 74, "head_rows": 20}, SMALL) == pytest.approx(2 * (74 * 144 + 20 * 40) / 1e9)


def test_charged_weights_are_the_llama1b_models_parameters():
    """Blocks and head as charged, plus the norms (no matrix products), are every parameter of the
    preset's model (tied embeddings: the head is the embedding)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from checkpoints.world.presets import get_preset

    preset = get_preset("llama1b")
    s = preset.shape
    shape = Shape(hidden=s.hidden, intermediate=s.intermediate, heads=s.heads, kv_heads=s.kv_heads,
                  layers=s.layers, vocab=preset.vocab_size)
    config = LlamaConfig(hidden_size=s.hidden, intermediate_size=s.intermediate, num_attention_heads=s.heads,
                         num_key_value_heads=s.kv_heads, num_hidden_layers=s.layers, vocab_size=preset.vocab_size,
                         tie_word_embeddings=True)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    total = sum(p.numel() for p in model.parameters())
    norms = (2 * s.layers + 1) * s.hidden
    assert shape.layers * shape.layer_weights + shape.head_weights + norms == total == 1_235_814_400
