"""The fast measurement paths against the straightforward ones they replace (issue 40).

Packed teacher forcing (`core.prefix_pack`, `metrics.forward.packed_stats`), the greedy loop that
keeps its batch full (`core.greedy`) and the per-item Fisher pass must give what the padded
sweep, transformers' `generate` and the batched Fisher give: the layout by hand, each piece on
small models, and every metric of a measurement on the trained tiny zoo and the `test` world
(smol-ci: tests/test_smol_world.py). Values within 1e-6, generations token for token.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.generation import greedy_generate
from core.prefix_pack import Group, group_by_prompt, pack_groups
from metrics.encoding import Encoded, encode_qa, generation_prompt
from metrics.forward import packable, packed_stats, padded_stats, teacher_forced_stats
from tests.measurement_checks import TOL, assert_same_measurement, metric_runs
from tests.metrics_fixtures import qa_item, tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo



@pytest.fixture(scope="module")
def zoo() -> dict:
    return trained_zoo()


# --- the layout, by hand ---------------------------------------------------------------------

def test_groups_share_a_prompt_in_order_of_first_appearance():
    seqs = [(1, 2, 3, 4), (9, 8, 7), (1, 2, 5), (1, 2, 3)]
    groups = group_by_prompt(seqs, [2, 1, 2, 3])
    assert groups == [Group((1, 2), ((3, 4), (5,)), (0, 2)), Group((9,), ((8, 7),), (1,)),
                      Group((1, 2, 3), ((),), (3,))]


def test_tree_layout_mask_and_scored_logits_by_hand():
    # one row: prompt [1, 2], continuation A = [3, 4], continuation B = [5]; then a second group [6] + [7]
    groups = [Group((1, 2), ((3, 4), (5,)), (0, 1)), Group((6,), ((7,),), (2,))]
    rows = pack_groups(groups, [[0, 1]], pad_id=0)
    assert rows.input_ids.tolist() == [[1, 2, 3, 4, 5, 6, 7]]
    assert rows.position_ids.tolist() == [[0, 1, 2, 3, 2, 0, 1]]
    seen = rows.visible()[0] & (rows.position_ids[0][None, :] <= rows.position_ids[0][:, None])
    want = torch.tensor([            # query row, key column: what each token's own full pass sees
        [1, 0, 0, 0, 0, 0, 0],       # 1
        [1, 1, 0, 0, 0, 0, 0],       # 2
        [1, 1, 1, 0, 0, 0, 0],       # 3 (A)
        [1, 1, 1, 1, 0, 0, 0],       # 4 (A)
        [1, 1, 0, 0, 1, 0, 0],       # 5 (B): the prompt and itself, not A
        [0, 0, 0, 0, 0, 1, 0],       # 6
        [0, 0, 0, 0, 0, 1, 1]], dtype=torch.bool)   # 7
    assert torch.equal(seen, want)
    # logits kept: slot 1 (predicts A[0] and B[0]), slot 2 (predicts A[1]), slot 5 (predicts 7)
    assert rows.keep.tolist() == [[False, True, True, False, False, True, False]]
    assert {m: s.tolist() for m, s in rows.scored.items()} == {0: [0, 1], 1: [0], 2: [2]}


def test_padding_slots_see_only_themselves():
    groups = [Group((1, 2), ((3,),), (0,)), Group((4,), ((5, 6, 7, 8),), (1,))]
    rows = pack_groups(groups, [[0], [1]], pad_id=0)
    assert rows.input_ids.tolist() == [[1, 2, 3, 0, 0], [4, 5, 6, 7, 8]]
    seen = rows.visible()[0] & (rows.position_ids[0][None, :] <= rows.position_ids[0][:, None])
    assert seen[3].tolist() == [False, False, False, True, False] and seen[4].tolist()[3] is False


# --- teacher forcing -------------------------------------------------------------------------

def _encodings(tok, items, system_prompt=None) -> list[Encoded]:
    out = []
    for it in items:
        texts = [it["answer"], it["paraphrased_answer"], *it["perturbed_answers"]]
        out += [encode_qa(tok, it["question"], t, system_prompt) for t in texts]
    return out


def assert_stats_close(a, b) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.n_labels == y.n_labels and np.array_equal(x.targets, y.targets)
        assert abs(x.avg_loss - y.avg_loss) <= TOL or (math.isnan(x.avg_loss) and math.isnan(y.avg_loss))
        assert np.array_equal(x.preds, y.preds)
        assert np.allclose(x.logprobs, y.logprobs, atol=1e-5, rtol=0)
        assert np.allclose(x.zscores, y.zscores, atol=1e-4, rtol=0)


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_packed_sweep_equals_the_padded_sweep(zoo, batch_size):
    tok = tiny_tokenizer()
    items = [qa_item(i) for i in range(6)]
    encs = _encodings(tok, items) + _encodings(tok, items[:2], system_prompt="Be brief.")
    assert packable(encs)
    model = zoo["tiny:t/full"]
    padded = padded_stats(model, encs, batch_size=4, pad_id=tok.pad_token_id, progress=False)
    packed = packed_stats(model, encs, batch_size=batch_size, pad_id=tok.pad_token_id, progress=False)
    assert_stats_close(padded, packed)


def test_sweep_falls_back_to_the_padded_path_where_packing_does_not_apply(zoo):
    tok, model = tiny_tokenizer(), zoo["tiny:t/full"]
    encs = _encodings(tok, [qa_item(0)])
    padded = padded_stats(model, encs, batch_size=3, pad_id=tok.pad_token_id, mask_id=tok.pad_token_id,
                          progress=False)
    # OU's pad-id mask: the padded path, bit for bit
    same = teacher_forced_stats(model, encs, batch_size=3, pad_id=tok.pad_token_id, mask_id=tok.pad_token_id,
                                progress=False)
    assert [s.avg_loss for s in same] == [s.avg_loss for s in padded]
    # labels that are not one block at the end (a hole in the answer): not packable
    odd = Encoded(encs[0].input_ids, encs[0].labels[:-3] + (-100,) + encs[0].labels[-2:])
    assert not packable([odd])
    want = padded_stats(model, [odd], batch_size=3, pad_id=tok.pad_token_id, progress=False)
    got = teacher_forced_stats(model, [odd], batch_size=3, pad_id=tok.pad_token_id, progress=False)
    assert got[0].avg_loss == want[0].avg_loss and got[0].n_labels == want[0].n_labels


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
        slow = greedy_generate(model, tok, prompts, batch_size=batch_size, max_new_tokens=max_new,
                               progress=False, fast=False)
        fast = greedy_generate(model, tok, prompts, batch_size=batch_size, max_new_tokens=max_new,
                               progress=False, fast=True)
        assert [g.ids for g in fast] == [g.ids for g in slow], name
        assert [g.text for g in fast] == [g.text for g in slow]
        assert all(len(g.ids) <= max_new for g in fast)


def test_greedy_loop_stops_where_a_stop_token_comes(zoo):
    """A sequence leaves at its first stop token, the others go on to max_new_tokens."""
    tok, model = tiny_tokenizer(), zoo["tiny:t/base"]   # random weights: long answers
    prompts = _prompts(tok, 6)
    free = greedy_generate(model, tok, prompts, batch_size=4, max_new_tokens=10, progress=False, fast=False)
    first = max(range(len(free)), key=lambda i: len(free[i].ids))
    stop = free[first].ids[2]   # the third token of the longest answer becomes a stop token
    model.generation_config.eos_token_id = [tok.eos_token_id, stop]
    try:
        slow = greedy_generate(model, tok, prompts, batch_size=4, max_new_tokens=10, progress=False, fast=False)
        fast = greedy_generate(model, tok, prompts, batch_size=4, max_new_tokens=10, progress=False, fast=True)
    finally:
        model.generation_config.eos_token_id = tok.eos_token_id
    assert [g.ids for g in fast] == [g.ids for g in slow]
    assert fast[first].ids == free[first].ids[:free[first].ids.index(stop)]
    assert all(stop not in g.ids for g in fast) and any(len(g.ids) < len(f.ids) for g, f in zip(fast, free))


# --- Fisher ----------------------------------------------------------------------------------

def test_per_item_fisher_equals_the_batched_one(zoo):
    from core.prompts import prepare_items
    from metrics.hidden import fisher_diagonal

    tok = tiny_tokenizer()
    items, _ = prepare_items(tiny_splits()["forget"], tok)
    model = zoo["tiny:t/full"]
    flags = [p.requires_grad for p in model.parameters()]
    slow = fisher_diagonal(model, items, pad_id=tok.pad_token_id, progress=False, fast=False)
    fast = fisher_diagonal(model, items, pad_id=tok.pad_token_id, progress=False, fast=True)
    assert len(slow) == len(fast)
    for a, b in zip(slow, fast):
        assert float((a - b).abs().max()) <= 1e-5 * float(a.abs().max())   # float32 sums of squares
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
