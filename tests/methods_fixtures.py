"""A tiny random world for the method tests: a 10-author synthetic world, its tokenizer and a
random 2-layer Llama (builds in about a second, no trained model needed)."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from checkpoints.methods.data import PairedData, collate_views
from checkpoints.world.synthetic import generate_synthetic_world
from checkpoints.world.tokenizer import train_tokenizer


@pytest.fixture(scope="module")
def tiny_world():
    return generate_synthetic_world(0, 10, 2, 20, 2)


@pytest.fixture(scope="module")
def tiny_tok(tiny_world):
    w = tiny_world
    texts = w.public_text + w.forget_bios + w.other_bios + w.idk
    texts += [x for it in w.forget + w.retain for x in [it["question"], it["answer"]] + it["perturbed_answers"]]
    return train_tokenizer(texts, 400)


def random_model(tok, seed: int = 0, layers: int = 2) -> LlamaForCausalLM:
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                      num_key_value_heads=2, intermediate_size=64, max_position_embeddings=256,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


def hand_alternates(world) -> dict[int, list[str]]:
    """One fixed wrong answer per forget item (its first perturbed answer)."""
    return {it["idx"]: it["perturbed_answers"][:1] for it in world.forget}


def views_batch(tok, world, views=("forget", "idk", "alt", "retain"), n: int = 4, seed: int = 0):
    data = PairedData(tok, world.forget, world.retain, views, seed=seed, idk=world.idk,
                      alternates=hand_alternates(world))
    return collate_views([data[i] for i in range(n)], tok.pad_token_id)
