"""Fixtures shared by the mem_bits tests: the in-process tiny zoo, its one tokenizer for every
spec, a context for one model, and a second, token-by-token implementation of answer bits."""

from __future__ import annotations

import math

import pytest
import torch

from metrics import references
from metrics.encoding import encode_qa
from tests.metrics_fixtures import make_ctx, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo

KEYS = ["mem_bits", "mem_bits_per_token", "mem_bits_erased", "mem_bits_tfidf"]


@pytest.fixture(scope="module")
def zoo() -> dict:
    return trained_zoo()


@pytest.fixture
def same_tokenizer(monkeypatch):
    """The in-process zoo's specs are not on disk: every model shares the fixture tokenizer."""
    monkeypatch.setattr(references, "own_tokenizer", lambda spec: tiny_tokenizer())


def mem_bits_ctx(zoo, model: str):
    roles = {"model": f"tiny:t/{model}", "full": "tiny:t/full", "retain": "tiny:t/retain"}
    return make_ctx(zoo, roles, keys=KEYS)


@torch.no_grad()
def answer_bits_token_by_token(model, item: dict) -> float:
    """Second implementation: sum over labelled positions t of -log2 p(token_t | tokens_<t), one
    unbatched forward, float64 log-softmax (no TokenStats, no mean-times-length)."""
    enc = encode_qa(tiny_tokenizer(), item["question"], item["answer"])
    logp = torch.log_softmax(model(input_ids=torch.tensor([enc.input_ids])).logits[0].double(), -1)
    return -sum(float(logp[t - 1, label]) for t, label in enumerate(enc.labels) if label != -100) / math.log(2)
