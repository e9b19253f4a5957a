"""The fast measurement paths against the straightforward ones they replace.

Teacher forcing and Fisher passes with logits only where the loss reads them must give the full
passes' numbers bit for bit; the greedy loop that keeps its batch full (`uds_core.greedy`), and the
joint generation of a model's prompt sets, transformers' `generate` tokens. Each piece on small
models, then every metric of a measurement on the trained tiny zoo and the `test` world (smol-ci:
tests/test_smol_world.py): values within 1e-6, generations token for token.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from uds_core.gen_options import GenOptions
from uds_core.generation import greedy_generate
from metrics.encoding import Encoded, encode_qa, generation_prompt
from metrics.forward import PassOptions, teacher_forced_stats
from tests.measurement_checks import assert_same_measurement, metric_runs
from tests.metrics_fixtures import qa_item, tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo



@pytest.fixture(scope="module")
def zoo() -> dict:
    return trained_zoo()


# --- teacher forcing -------------------------------------------------------------------------

def _encodings(tok, items, system_prompt=None) -> list[Encoded]:
    out = []
    for it in items:
        texts = [it["answer"], it["paraphrased_answer"], *it["perturbed_answers"]]
        out += [encode_qa(tok, it["question"], t, system_prompt) for t in texts]
    return out


def assert_same_stats(a, b) -> None:
    """Bit for bit: the LM head is row-wise, so its rows at the scored positions are the same numbers."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.n_labels == y.n_labels and np.array_equal(x.targets, y.targets)
        assert x.avg_loss == y.avg_loss or (math.isnan(x.avg_loss) and math.isnan(y.avg_loss))
        for field in ("preds", "logprobs", "zscores"):
            assert np.array_equal(getattr(x, field), getattr(y, field)), field


@pytest.mark.parametrize("batch_size", [1, 3, 64])
@pytest.mark.parametrize("ou_mask", [False, True])
def test_label_only_sweep_equals_the_full_logits_sweep(zoo, batch_size, ou_mask):
    tok = tiny_tokenizer()
    items = [qa_item(i) for i in range(6)]
    encs = _encodings(tok, items) + _encodings(tok, items[:2], system_prompt="Be brief.")
    encs.append(Encoded(encs[0].input_ids, (-100,) * len(encs[0].input_ids)))   # nothing labelled
    model, mask_id = zoo["tiny:t/full"], (tok.pad_token_id if ou_mask else None)
    opts = PassOptions(batch_size, tok.pad_token_id, mask_id=mask_id, progress=False)
    full = teacher_forced_stats(model, encs, opts, fast=False)
    fast = teacher_forced_stats(model, encs, opts, fast=True)
    assert_same_stats(full, fast)
    assert full[-1].n_labels == 0 and math.isnan(full[-1].avg_loss)


# --- generation ------------------------------------------------------------------------------

def _prompts(tok, n: int) -> list[tuple[int, ...]]:
    return [generation_prompt(tok, qa_item(i)["question"] + " Please" * (i % 4), jailbreak=bool(i % 2))
            for i in range(n)]


@pytest.mark.parametrize("batch_size,max_new", [(2, 12), (5, 12), (32, 12), (3, 1)])
def test_greedy_loop_gives_generates_tokens(zoo, batch_size, max_new):
    """A batch smaller than the prompt list makes sequences join a running batch."""
    tok = tiny_tokenizer()
    prompts = _prompts(tok, 9)
    for name in ("tiny:t/full", "tiny:t/unl", "tiny:t/base"):
        model = zoo[name]
        opts = GenOptions(batch_size, max_new, progress=False)
        slow = greedy_generate(model, tok, prompts, opts, fast=False)
        fast = greedy_generate(model, tok, prompts, opts, fast=True)
        assert [g.ids for g in fast] == [g.ids for g in slow], name
        assert [g.text for g in fast] == [g.text for g in slow]
        assert all(len(g.ids) <= max_new for g in fast)


def test_greedy_loop_stops_where_a_stop_token_comes(zoo):
    """A sequence leaves at its first stop token, the others go on to max_new_tokens."""
    tok, model = tiny_tokenizer(), zoo["tiny:t/base"]   # random weights: long answers
    prompts = _prompts(tok, 6)
    free = greedy_generate(model, tok, prompts, GenOptions(4, 10, progress=False), fast=False)
    first = max(range(len(free)), key=lambda i: len(free[i].ids))
    stop = free[first].ids[2]   # the third token of the longest answer becomes a stop token
    model.generation_config.eos_token_id = [tok.eos_token_id, stop]
    try:
        slow = greedy_generate(model, tok, prompts, GenOptions(4, 10, progress=False), fast=False)
        fast = greedy_generate(model, tok, prompts, GenOptions(4, 10, progress=False), fast=True)
    finally:
        model.generation_config.eos_token_id = tok.eos_token_id
    assert [g.ids for g in fast] == [g.ids for g in slow]
    assert fast[first].ids == free[first].ids[:free[first].ids.index(stop)]
    assert all(stop not in g.ids for g in fast) and any(len(g.ids) < len(f.ids) for g, f in zip(fast, free))


# --- Fisher ----------------------------------------------------------------------------------

def test_fisher_with_entity_logits_only_equals_the_full_logits_one(zoo):
    from uds_core.prompts import prepare_items
    from metrics.hidden import fisher_diagonal

    tok = tiny_tokenizer()
    items, _ = prepare_items(tiny_splits()["forget"], tok)
    model = zoo["tiny:t/full"]
    flags = [p.requires_grad for p in model.parameters()]
    opts = PassOptions(4, tok.pad_token_id, progress=False)
    slow = fisher_diagonal(model, items, opts, fast=False)
    fast = fisher_diagonal(model, items, opts, fast=True)
    assert len(slow) == len(fast)
    assert all(torch.equal(a, b) for a, b in zip(slow, fast))   # the head's rows are the same numbers
    assert [p.requires_grad for p in model.parameters()] == flags   # left as it was found


# --- whole measurements ----------------------------------------------------------------------

def test_every_metric_of_the_tiny_zoo_is_the_same_on_both_paths(zoo):
    from metrics.context import EvalContext, EvalSettings, ModelPool
    from metrics.registry import ALL_KEYS, sweep_plan

    splits = tiny_splits()
    roles = {"model": "tiny:t/unl", "full": "tiny:t/full", "retain": "tiny:t/retain", "base": "tiny:t/base"}

    def make(fast: bool):
        return EvalContext(splits=splits, uds_records=splits["forget"], tokenizer=tiny_tokenizer(),
                           models=ModelPool(roles, zoo.__getitem__),
                           settings=EvalSettings(batch_size=3, max_new_tokens=12, progress=False, fast=fast),
                           plan=sweep_plan(list(ALL_KEYS)))
    assert_same_measurement(metric_runs(make, ALL_KEYS))


def test_every_metric_of_a_test_world_model_is_the_same_on_both_paths(test_world):
    from checkpoints.world.build import ensure_model
    from meta_eval.measure import BENCHMARK_EXTRA
    from metrics.context import EvalSettings
    from metrics.registry import META_KEYS
    from metrics.session import EvalSession

    ensure_model("test", 0, "npo_lr2e-4_b01_a1_ep5", progress=False)
    session = EvalSession("tiny:test/npo_lr2e-4_b01_a1_ep5")
    keys = tuple(META_KEYS) + BENCHMARK_EXTRA
    runs = metric_runs(lambda fast: session.context(EvalSettings(batch_size=8, progress=False, fast=fast), keys),
                       keys)
    assert_same_measurement(runs)
