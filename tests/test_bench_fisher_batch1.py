"""benchmarks/bench_fisher_batch1.py's variant computes the same Fisher diagonals as the product
path up to float rounding (else its speed-up would compare different work), and leaves the model's
gradient flags as it found them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

from metrics.forward import PassOptions
from metrics.hidden import fisher_diagonal
from tests.metrics_fixtures import tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo
from uds_core.prompts import prepare_items


def _bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_fisher_batch1.py"
    spec = importlib.util.spec_from_file_location("bench_fisher_batch1", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_batch1_backward_gives_the_fisher_of_the_spec_path_up_to_rounding():
    tok = tiny_tokenizer()
    items, _ = prepare_items(tiny_splits()["forget"], tok)
    model = trained_zoo()["tiny:t/full"]
    flags = [p.requires_grad for p in model.parameters()]
    spec = fisher_diagonal(model, items, PassOptions(4, tok.pad_token_id, progress=False))
    alt = _bench().fisher_batch1(model, items, tok.pad_token_id)
    assert [p.requires_grad for p in model.parameters()] == flags
    assert len(alt) == len(spec) and all(a.shape == s.shape for a, s in zip(alt, spec))
    for a, s in zip(alt, spec):
        assert torch.allclose(a, s, rtol=1e-3, atol=1e-6 * float(s.abs().max()))
    assert any(float(s.abs().max()) > 0 for s in spec)   # the comparison is not between zeros
