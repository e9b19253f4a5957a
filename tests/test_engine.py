"""The patching engine: batching invariance, an independent naive path, UDS identities."""

import copy

import numpy as np
import pytest
import torch

from tests.engine_fixtures import RECORDS, interpolate, make_tokenizer, memorise, perturbed, tiny_model
from uds_core import arch
from uds_core.engine import EngineSettings, UdsModels, compute_uds, make_batch, score_pair
from uds_core.errors import UdsInputError
from uds_core.prompts import Examples, prepare_items


@pytest.fixture(scope="module")
def models():
    """(full, retain, other): full memorised the records, retain is its untrained base."""
    base = tiny_model("llama", layers=4, hidden=48)
    full = memorise(base, make_tokenizer(), steps=40, lr=5e-3)
    return full, base, perturbed(full, 0.5, seed=2)


@pytest.fixture(scope="module")
def items():
    return prepare_items(RECORDS, make_tokenizer())[0]


def naive_deltas(target, source, item, reference_last_layer=False):
    """Second path: one example alone, no padding, no mask, source states from
    `output_hidden_states`, an inline hook per layer, float64 log-softmax. (L,) deltas."""
    ids = torch.tensor([item.input_ids])
    pos, tgt = list(item.eval_positions), list(item.target_ids)

    def score(logits):
        lp = logits[0].double().log_softmax(-1)
        return float(np.mean([lp[p, y].item() for p, y in zip(pos, tgt)]))

    with torch.no_grad():
        seen = {}
        h = arch.final_norm(source).register_forward_pre_hook(lambda m, a: seen.__setitem__("x", a[0].clone()))
        try:
            states = list(source(ids, output_hidden_states=True).hidden_states[1:])
        finally:
            h.remove()
        if not reference_last_layer:
            states[-1] = seen["x"]  # pre-final-norm output of the last block
        full = score(target(ids).logits)
        deltas = []
        for layer, state in enumerate(states):
            def patch(module, inputs, out, state=state):
                act = (out[0] if isinstance(out, tuple) else out).clone()
                act[0, pos] = state[0, pos]
                return (act, *out[1:]) if isinstance(out, tuple) else act
            h = arch.decoder_layers(target)[layer].register_forward_hook(patch)
            try:
                deltas.append(full - score(target(ids).logits))
            finally:
                h.remove()
    return np.array(deltas)


@pytest.mark.parametrize("family", ["llama", "gpt2"])
@pytest.mark.parametrize("quirk", [False, True])
def test_engine_matches_naive_path(family, quirk, items):
    full = tiny_model(family, layers=3)
    source = perturbed(full, 0.5)
    got = score_pair(full, source, items, EngineSettings(batch_size=3, reference_last_layer=quirk,
                                                         logprob_dtype="float32"))
    want = np.stack([naive_deltas(full, source, it, quirk) for it in items])
    np.testing.assert_allclose(got.deltas, want, atol=1e-5, rtol=0)
    assert np.abs(want).max() > 1e-3


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_batching_never_changes_numbers(attn, models):
    full, retain = (copy.deepcopy(m) for m in models[:2])
    for m in (full, retain):
        m.set_attn_implementation(attn)
    results = []
    for side in ("right", "left"):
        tok = make_tokenizer(side)
        its = prepare_items(RECORDS, tok)[0]
        for bs in (1, 2, 5):
            r = score_pair(full, retain, its, EngineSettings(batch_size=bs), pad_id=tok.pad_token_id)
            results.append(np.concatenate([r.full_scores[:, None], r.patched], axis=1))
    for r in results[1:]:
        np.testing.assert_allclose(r, results[0], atol=1e-5, rtol=0)


def test_batches_are_right_padded_from_lengths(items):
    batch = make_batch(items, "cpu", pad_id=items[0].input_ids[1])  # a pad id that is also a real token
    for row, it in enumerate(items):
        n = len(it.input_ids)
        assert batch.attention_mask[row, :n].all() and not batch.attention_mask[row, n:].any()
        assert batch.input_ids[row, :n].tolist() == list(it.input_ids)
    assert len(batch.rows) == sum(len(it.eval_positions) for it in items)


def test_source_equal_to_target_gives_exact_zeros(models, items):
    full = models[0]
    for comp in ("block", "attn", "mlp"):
        r = score_pair(full, full, items, EngineSettings(component=comp, batch_size=2))
        assert np.array_equal(r.patched, np.repeat(r.full_scores[:, None], 4, axis=1))


def test_reference_last_layer_changes_only_the_last_layer(models, items):
    full = models[0]
    r = score_pair(full, full, items, EngineSettings(batch_size=2, reference_last_layer=True))
    assert np.array_equal(r.deltas[:, :-1], np.zeros((len(items), 3)))
    assert np.abs(r.deltas[:, -1]).min() > 0  # the final norm is applied twice


def test_uds_identities(models, items):
    full, retain, other = models
    settings = EngineSettings(batch_size=2)
    as_full = compute_uds(UdsModels(full, retain, full), Examples(items), settings)
    scored = [v for v in as_full.uds if v is not None]
    assert len(scored) >= 4, "fixture should give KE layers"
    assert np.array_equal(as_full.s2.deltas, np.zeros_like(as_full.s2.deltas))
    assert scored == [0.0] * len(scored) and as_full.mean == 0.0
    as_retain = compute_uds(UdsModels(full, retain, retain), Examples(items), settings, s1=as_full.s1)
    assert [v for v in as_retain.uds if v is not None] == [1.0] * len(scored) and as_retain.mean == 1.0
    assert np.array_equal(as_retain.s2.patched, as_full.s1.patched)
    ke = as_full.ke_layers
    assert all(all(as_full.s1.deltas[i, l] > 0.05 for l in ke[i]) for i in range(len(items)))


def test_settings_are_validated(models, items):
    full = models[0]
    for bad in (EngineSettings(batch_size=0), EngineSettings(logprob_dtype="fp8"),
                EngineSettings(component="mlp", reference_last_layer=True)):
        with pytest.raises(UdsInputError):
            compute_uds(UdsModels(full, full, full), Examples(items), bad)


def test_bfloat16_model_dtype_logprobs(items):
    full = tiny_model("llama").to(torch.bfloat16)
    retain = perturbed(full, 0.5)
    model_mode = score_pair(full, retain, items, EngineSettings(batch_size=5))
    fp32_mode = score_pair(full, retain, items, EngineSettings(batch_size=5, logprob_dtype="float32"))
    assert np.isfinite(model_mode.patched).all()
    assert not np.array_equal(model_mode.patched, fp32_mode.patched)
    np.testing.assert_allclose(model_mode.patched, fp32_mode.patched, atol=0.1)


def test_uds_rises_along_the_full_to_retain_interpolation(models, items):
    full, retain, _ = models
    settings = EngineSettings(batch_size=5)
    s1 = compute_uds(UdsModels(full, retain, full), Examples(items), settings).s1
    curve = [compute_uds(UdsModels(full, retain, interpolate(full, retain, a)), Examples(items), settings, s1=s1).mean
             for a in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert curve[0] == 0.0 and curve[-1] == 1.0
    assert all(a < b for a, b in zip(curve, curve[1:])), curve


def test_no_scorable_item_gives_zero(models):
    full, retain, _ = models
    result = compute_uds(UdsModels(full, retain, retain), Examples([]), EngineSettings())
    assert result.uds == [] and result.mean == 0.0 and result.s1.patched.shape == (0, 4)
