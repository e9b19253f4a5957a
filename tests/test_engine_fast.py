"""The fast engine (uds_core/suffix.py) against the straightforward algorithm it replaces.

Every comparison runs both algorithms on the same random tiny models and items. Families cover
the fast path's mask logic: Llama with grouped-query attention, Qwen2 with a mix of full and
sliding-window layers, Mistral with a sliding window shorter than the prompts.
"""

import copy
from contextlib import ExitStack, contextmanager

import numpy as np
import pytest
import torch
import transformers as T

from tests.engine_fixtures import RECORDS, make_tokenizer, perturbed, tiny_model
from uds_core import arch, suffix
from uds_core.engine import EngineSettings, FastPathUnavailable, UdsModels, compute_uds, score_pair
from uds_core.prompts import Examples, prepare_items

ATOL = 1e-5
FAMILIES = ("llama", "qwen2", "mistral")


def fast_config(family: str, layers: int = 4, **extra):
    """A tiny config with 4 query and 2 key/value heads (GQA) and, for Qwen2 and Mistral,
    sliding windows shorter than every prompt."""
    common = dict(vocab_size=512, hidden_size=32, num_hidden_layers=layers, num_attention_heads=4,
                  num_key_value_heads=2, intermediate_size=64, initializer_range=0.3, **extra)  # peaked logits
    if family == "llama":
        return T.LlamaConfig(**common)
    if family == "qwen2":
        return T.Qwen2Config(**common, use_sliding_window=True, sliding_window=6, max_window_layers=2)
    if family == "qwen3":  # query/key norms inside attention, explicit head_dim
        return T.Qwen3Config(**common, head_dim=8)
    return T.MistralConfig(**common, sliding_window=7)


def fast_model(family: str, attn: str = "eager", seed: int = 0, layers: int = 4):
    torch.manual_seed(seed)
    model = T.AutoModelForCausalLM.from_config(fast_config(family, layers), attn_implementation=attn)
    return model.eval()


@pytest.fixture(scope="module")
def item_sets():
    """Prepared items of the fixture records under right- and left-padding tokenizers."""
    return {side: prepare_items(RECORDS, make_tokenizer(side))[0] for side in ("right", "left")}


@pytest.fixture(scope="module")
def pairs():
    """(family, attn) -> (target, source): the source moved far enough for deltas of ~1 nat."""
    out = {}
    for family in FAMILIES:
        for attn in ("eager", "sdpa"):
            target = fast_model(family, attn)
            out[family, attn] = target, perturbed(target, 1.0, seed=3)
    return out


def both(target, source, items, **kw):
    """(naive, fast) PairScores with otherwise identical settings."""
    return tuple(score_pair(target, source, items, EngineSettings(algorithm=alg, logprob_dtype="float32", **kw))
                 for alg in ("naive", "fast"))


def assert_same(naive, fast):
    np.testing.assert_allclose(fast.full_scores, naive.full_scores, atol=ATOL, rtol=0)
    np.testing.assert_allclose(fast.deltas, naive.deltas, atol=ATOL, rtol=0)


def test_items_have_different_first_patched_positions(item_sets):
    starts = [it.eval_positions.start for it in item_sets["right"]]
    assert len(set(starts)) >= 4 and len(set(len(it.eval_positions) for it in item_sets["right"])) > 1


# (padding side, batch size) per patched component: every pair of values of the three settings occurs
# (each component meets both sides and all three batch sizes, each side all three batch sizes), at half
# the cost of the full product
PAIRWISE = {"block": (("right", 1), ("left", 3), ("right", 5)), "attn": (("left", 1), ("right", 3), ("left", 5)),
            "mlp": (("right", 1), ("left", 3), ("left", 5))}


def test_pairwise_grid_covers_every_pair():
    runs = [(c, side, bs) for c, cases in PAIRWISE.items() for side, bs in cases]
    assert {(c, s) for c, s, _ in runs} == {(c, s) for c in PAIRWISE for s in ("right", "left")}
    assert {(c, b) for c, _, b in runs} == {(c, b) for c in PAIRWISE for b in (1, 3, 5)}
    assert {(s, b) for _, s, b in runs} == {(s, b) for s in ("right", "left") for b in (1, 3, 5)}


@pytest.mark.parametrize("component", list(PAIRWISE))
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("family", FAMILIES)
def test_fast_matches_naive(family, attn, component, pairs, item_sets):
    target, source = pairs[family, attn]
    for side, bs in PAIRWISE[component]:
        naive, fast = both(target, source, item_sets[side], batch_size=bs, component=component)
        assert_same(naive, fast)
    assert np.abs(naive.deltas).max() > 0.1  # the comparison is not between near-zeros


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_qwen3_matches_naive(attn, item_sets):
    target = fast_model("qwen3", attn)
    source = perturbed(target, 1.0, seed=3)
    for bs in (1, 4):
        for component in ("block", "mlp"):
            assert_same(*both(target, source, item_sets["left"], batch_size=bs, component=component))


@pytest.mark.parametrize("family", FAMILIES)
def test_reference_last_layer_matches_naive(family, pairs, item_sets):
    target, source = pairs[family, "sdpa"]
    for bs in (1, 4):
        naive, fast = both(target, source, item_sets["right"], batch_size=bs, reference_last_layer=True)
        assert_same(naive, fast)
    naive, fast = both(target, target, item_sets["right"], batch_size=2, reference_last_layer=True)
    assert_same(naive, fast)  # the last layer is no no-op: the final norm runs twice
    assert np.array_equal(fast.deltas[:, :-1], np.zeros((5, 3)))


def test_layer_subsets_and_small_stacks(pairs, item_sets):
    target, source = pairs["qwen2", "eager"]
    items = item_sets["right"]
    for kw in (dict(layers=(3, 0, 2)), dict(layers=(3,)), dict(max_suffix_rows=1), dict(max_suffix_rows=5)):
        naive, fast = both(target, source, items, batch_size=4, **kw)
        assert_same(naive, fast)
    for comp in ("attn", "mlp"):
        assert_same(*both(target, source, items, batch_size=4, component=comp, layers=(2, 0), max_suffix_rows=3))


@pytest.mark.parametrize("family", FAMILIES)
def test_per_example_uds_matches_naive(family, pairs, item_sets):
    target, retain = pairs[family, "eager"]
    unlearned = perturbed(target, 0.5, seed=7)
    res = {alg: compute_uds(UdsModels(target, retain, unlearned), Examples(item_sets["left"]),
                            EngineSettings(batch_size=2, algorithm=alg, logprob_dtype="float32"), tau=0.01)
           for alg in ("naive", "fast")}
    naive, fast = res["naive"], res["fast"]
    assert [u is None for u in naive.uds] == [u is None for u in fast.uds]
    scored = [(a, b) for a, b in zip(naive.uds, fast.uds) if a is not None]
    assert len(scored) >= 3 and max(abs(a - b) for a, b in scored) <= ATOL
    np.testing.assert_allclose(fast.s2.deltas, naive.s2.deltas, atol=ATOL, rtol=0)
    assert 0 < fast.mean < 1


@pytest.mark.parametrize("family", FAMILIES)
def test_identities_are_exact(family, pairs, item_sets):
    """UDS(full) = 0 and UDS(retain) = 1 exactly, also with a copy of the models (not the same object)."""
    target, retain = pairs[family, "sdpa"]
    items = item_sets["right"]
    settings = EngineSettings(batch_size=2)
    as_full = compute_uds(UdsModels(target, retain, copy.deepcopy(target)), Examples(items), settings, tau=0.01)
    assert np.array_equal(as_full.s2.deltas, np.zeros_like(as_full.s2.deltas))
    assert {u for u in as_full.uds if u is not None} == {0.0}
    as_retain = compute_uds(UdsModels(target, retain, copy.deepcopy(retain)), Examples(items), settings, tau=0.01,
                            s1=as_full.s1)
    assert {u for u in as_retain.uds if u is not None} == {1.0}
    for comp in ("attn", "mlp"):
        r = score_pair(target, target, items, EngineSettings(component=comp, batch_size=3))
        assert np.array_equal(r.deltas, np.zeros_like(r.deltas))


def test_cached_s1_gives_the_same_s2(pairs, item_sets):
    target, retain = pairs["llama", "eager"]
    items, settings = item_sets["right"], EngineSettings(batch_size=2)
    unlearned = perturbed(target, 0.3, seed=9)
    fresh = compute_uds(UdsModels(target, retain, unlearned), Examples(items), settings)
    again = compute_uds(UdsModels(target, retain, unlearned), Examples(items), settings, s1=fresh.s1)
    assert np.array_equal(again.s2.patched, fresh.s2.patched) and again.uds == fresh.uds


def test_bfloat16_stays_close_and_exact_where_it_must(item_sets):
    target = fast_model("llama", "sdpa").to(torch.bfloat16)
    retain = perturbed(target, 1.0, seed=3)
    items = item_sets["right"]
    naive, fast = (score_pair(target, retain, items, EngineSettings(batch_size=3, algorithm=alg))
                   for alg in ("naive", "fast"))
    assert np.isfinite(fast.patched).all()
    np.testing.assert_allclose(fast.deltas, naive.deltas, atol=0.15, rtol=0)
    same = compute_uds(UdsModels(target, retain, target), Examples(items), EngineSettings(batch_size=3))
    assert same.s2.deltas.max() == 0.0


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_bfloat16_through_float32_kernels_scores_like_bfloat16(item_sets, attn):
    """`uds_core.float32_products` (what a CPU without bfloat16 kernels uses): per-layer deltas as
    close to the same models' float32 ones as torch's own bfloat16 kernels get, and the
    invariants exact (the model as its own source changes nothing; fast and straightforward
    paths agree as closely as in bfloat16)."""
    from uds_core.float32_products import float32_products

    target = fast_model("qwen2", attn).to(torch.bfloat16)
    retain = perturbed(target, 1.0, seed=3)
    items, settings = item_sets["right"], EngineSettings(batch_size=3)
    own = score_pair(target, retain, items, settings)
    with float32_products():
        ours = score_pair(target, retain, items, settings)
        naive = score_pair(target, retain, items, EngineSettings(batch_size=3, algorithm="naive"))
        same = compute_uds(UdsModels(target, retain, target), Examples(items), settings)
    exact = score_pair(target.float(), retain.float(), items, settings).deltas
    assert np.isfinite(ours.patched).all() and same.s2.deltas.max() == 0.0
    assert np.abs(ours.deltas - exact).max() <= np.abs(own.deltas - exact).max() + 0.02
    np.testing.assert_allclose(ours.deltas, naive.deltas, atol=0.15, rtol=0)


def test_unsupported_family_falls_back_with_one_notice(item_sets, monkeypatch):
    from uds_core import engine as engine_module

    monkeypatch.setattr(engine_module, "_NOTICES", set())  # earlier tests may have used up the notice
    target = tiny_model("gpt2", layers=2)
    source = perturbed(target, 0.5)
    items = item_sets["right"]
    with pytest.warns(FastPathUnavailable, match="gpt2"):
        fast = score_pair(target, source, items, EngineSettings(batch_size=2, component="mlp"))
    naive = score_pair(target, source, items, EngineSettings(batch_size=2, component="mlp", algorithm="naive"))
    assert np.array_equal(fast.patched, naive.patched)
    assert suffix.fast_path_problem(fast_model("llama"), "block") is None
    flash = fast_model("llama")
    flash.config._attn_implementation = "flash_attention_2"
    assert "flash_attention_2" in suffix.fast_path_problem(flash, "block")
    dynamic_rope = {"rope_type": "dynamic", "factor": 2.0}
    dynamic = T.AutoModelForCausalLM.from_config(fast_config("llama", rope_scaling=dynamic_rope))
    assert "dynamic" in suffix.fast_path_problem(dynamic, "block")


@contextmanager
def block_work(model):
    """Counts decoder-block forwards and the (row, position) pairs they process."""
    tally = {"calls": 0, "tokens": 0}

    def hook(_module, args, kwargs):
        hidden = args[0] if args else kwargs["hidden_states"]
        tally["calls"] += 1
        tally["tokens"] += hidden.shape[0] * hidden.shape[1]

    with ExitStack() as stack:
        for block in arch.decoder_layers(model):
            stack.callback(block.register_forward_pre_hook(hook, with_kwargs=True).remove)
        yield tally


def test_fast_runs_far_fewer_block_forwards(pairs, item_sets):
    target, retain = pairs["llama", "eager"]
    unlearned = perturbed(target, 0.5, seed=7)
    items = item_sets["right"]
    work = {}
    for alg in ("naive", "fast"):
        settings = EngineSettings(batch_size=5, algorithm=alg)
        with block_work(target) as t, block_work(retain) as r, block_work(unlearned) as u:
            compute_uds(UdsModels(target, retain, unlearned), Examples(items), settings)
        work[alg] = {k: t[k] + r[k] + u[k] for k in t}
    n_layers = 4
    # naive: 1 batch x (1 full + 2 stages x (1 source + 4 patched)) whole forwards of 4 blocks
    assert work["naive"]["calls"] == (1 + 2 * (1 + n_layers)) * n_layers
    # fast: 3 capture passes (4 blocks each) + 2 stages x blocks 1..3 once each on stacked rows
    assert work["fast"]["calls"] == 3 * n_layers + 2 * (n_layers - 1)
    assert work["fast"]["tokens"] * 3 < work["naive"]["tokens"]


def test_target_runs_are_reused_across_unlearned_models(pairs, item_sets):
    """With S1 cached and the target's captures kept, S2 runs no whole target forward."""
    from uds_core.engine import TargetRuns

    target, retain = pairs["mistral", "sdpa"]
    items, settings = item_sets["right"], EngineSettings(batch_size=2)
    runs = TargetRuns()
    first = compute_uds(UdsModels(target, retain, perturbed(target, 0.3, seed=9)), Examples(items), settings, runs=runs)
    unlearned = perturbed(target, 0.2, seed=11)
    with block_work(target) as t, block_work(unlearned) as u:
        second = compute_uds(UdsModels(target, retain, unlearned), Examples(items), settings, s1=first.s1, runs=runs)
    n_batches, n_layers = 3, 4  # one capture pass per batch; all 3 batches share one suffix pass
    assert u["calls"] == n_batches * n_layers and t["calls"] == n_layers - 1
    fresh = compute_uds(UdsModels(target, retain, unlearned), Examples(items), settings)
    assert np.array_equal(second.s2.patched, fresh.s2.patched)


def test_capture_layout_packs_sequences_and_keeps_positions(item_sets):
    from uds_core.capture import capture_layout

    items = item_sets["right"]
    model = fast_model("mistral", "sdpa")  # sliding window 7: part of the mask
    layout = capture_layout(items, 0, model, "cpu")
    ids, pos = layout.input_ids.flatten(), layout.position_ids.flatten()
    assert ids[layout.flat].tolist() == [it.input_ids[p] for it in items for p in it.eval_positions]
    assert pos[layout.flat].tolist() == [p for it in items for p in it.eval_positions]
    assert layout.input_ids.numel() < len(items) * max(it.eval_positions.stop for it in items)  # less padding
    allowed = torch.isfinite(layout.mask)[:, 0]  # sdpa mask: 0 = attend, -inf = not
    start = layout.row * layout.input_ids.shape[1] + layout.slot
    for e, it in enumerate(items):
        q = int(layout.flat[sum(len(x.eval_positions) for x in items[:e])])  # first site of e
        row, col = divmod(q, layout.input_ids.shape[1])
        seen = allowed[row, col].nonzero().flatten() + row * layout.input_ids.shape[1]
        first_seen = max(int(start[e]), q - 6)  # itself and the 6 positions before it
        assert seen.tolist() == list(range(first_seen, q + 1))


def test_first_fit_decreasing():
    from uds_core.packing import first_fit_decreasing

    bins = first_fit_decreasing([5, 3, 8, 2, 2], 8)
    assert sorted(sorted(b) for b in bins) == [[0, 1], [2], [3, 4]]
    assert all(sum([5, 3, 8, 2, 2][i] for i in b) <= 8 for b in bins)


@pytest.mark.parametrize("family", FAMILIES)
def test_captured_sources_give_the_joint_runs_numbers_bit_for_bit(family, pairs, item_sets):
    """Sources captured ahead (and released) then patched in: every score equal to patching the
    models themselves, over several suffix groups, with S1 computed and with S1 given; ticks as
    many as the joint run's."""
    from uds_core.engine import capture_sources

    target, retain = pairs[family, "sdpa"]
    unlearned = perturbed(target, 0.4, seed=5)
    items = item_sets["left"]
    settings = EngineSettings(batch_size=2, max_suffix_rows=8)   # 2 examples x 4 layers per group
    joint_ticks, ahead_ticks = [], []
    joint = compute_uds(UdsModels(target, retain, unlearned), Examples(items), settings, tau=0.01,
                        progress=joint_ticks.append)
    values = {name: capture_sources(m, items, settings, progress=ahead_ticks.append)
              for name, m in (("retain", retain), ("unlearned", unlearned))}
    assert len(values["retain"].groups) == -(-len(items) // 2) > 1
    ahead = compute_uds(UdsModels(target, values["retain"], values["unlearned"]), Examples(items), settings,
                        tau=0.01, progress=ahead_ticks.append)
    for a, b in ((ahead.s1, joint.s1), (ahead.s2, joint.s2)):
        assert np.array_equal(a.full_scores, b.full_scores) and np.array_equal(a.patched, b.patched)
    assert ahead.uds == joint.uds and sum(ahead_ticks) == sum(joint_ticks)
    given = compute_uds(UdsModels(target, None, values["unlearned"]), Examples(items), settings, tau=0.01,
                        s1=joint.s1)
    assert np.array_equal(given.s2.patched, joint.s2.patched) and given.uds == joint.uds


def test_captured_sources_refuse_other_batching_and_layers(pairs, item_sets):
    from uds_core.engine import capture_sources

    target, retain = pairs["llama", "eager"]
    items = item_sets["right"]
    values = capture_sources(retain, items, EngineSettings(batch_size=2))
    for other in (EngineSettings(batch_size=3), EngineSettings(batch_size=2, layers=(0, 1))):
        with pytest.raises(ValueError, match="other items, batching or layers"):
            compute_uds(UdsModels(target, values, values), Examples(items), other)
    with pytest.raises(ValueError, match="other items"):
        compute_uds(UdsModels(target, values, values), Examples(items[:-1]), EngineSettings(batch_size=2))
    with pytest.raises(ValueError, match="need the fast path"):
        compute_uds(UdsModels(target, values, values), Examples(items), EngineSettings(batch_size=2, algorithm="naive"))
