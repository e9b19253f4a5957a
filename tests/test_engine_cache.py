"""S1 cache (atomic, keyed by fingerprints), fingerprints and compatibility checks."""

import json

import numpy as np
import pytest
import torch
import transformers as T

from tests.engine_fixtures import RECORDS, make_tokenizer, perturbed, tiny_model
from uds_core import s1_cache
from uds_core.compat import check_compatible
from uds_core.engine import EngineSettings, UdsModels, compute_uds
from uds_core.errors import UdsInputError
from uds_core.fingerprint import model_fingerprint, tokenizer_hash
from tests.hook_fixtures import count_calls
from uds_core.prompts import Examples, prepare_items


@pytest.fixture(scope="module")
def setup():
    tok = make_tokenizer()
    full = tiny_model("llama", layers=3)
    return tok, full, perturbed(full, 0.5, seed=1), prepare_items(RECORDS, tok)[0]


def _key(full, retain, items, **over):
    base = dict(full=model_fingerprint(full), retain=model_fingerprint(retain), inputs=s1_cache.items_hash(items),
                component="block", dtype="float32", batch_size=2, layers=(0, 1, 2))
    return s1_cache.cache_key(**{**base, **over})


def test_rerun_with_a_new_unlearned_model_skips_s1(setup, tmp_path):
    tok, full, retain, items = setup
    settings = EngineSettings(batch_size=2)
    key = _key(full, retain, items)
    assert s1_cache.load_s1(key, items, tmp_path) is None
    first = compute_uds(UdsModels(full, retain, perturbed(full, 0.2, seed=3)), Examples(items), settings)
    path = s1_cache.save_s1(key, items, first.s1, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left behind

    cached = s1_cache.load_s1(key, items, tmp_path)
    assert np.array_equal(cached.patched, first.s1.patched) and np.array_equal(cached.full_scores, first.s1.full_scores)
    unlearned = perturbed(full, 0.1, seed=4)
    with count_calls(full) as n_full, count_calls(retain) as n_retain, count_calls(unlearned) as n_unl:
        second = compute_uds(UdsModels(full, retain, unlearned), Examples(items), settings, s1=cached)
    n_batches = -(-len(items) // 2)
    # fast engine: one capture pass of the target per batch (its patched passes run block by block)
    assert n_retain[0] == 0 and n_full[0] == n_batches and n_unl[0] == n_batches
    fresh = compute_uds(UdsModels(full, retain, unlearned), Examples(items), settings)
    assert second.uds == fresh.uds


def test_key_changes_miss(setup, tmp_path):
    tok, full, retain, items = setup
    s1_cache.save_s1(_key(full, retain, items), items,
                     compute_uds(UdsModels(full, retain, full), Examples(items),
                                 EngineSettings(batch_size=2)).s1, tmp_path)
    assert s1_cache.load_s1(_key(full, retain, items, component="mlp"), items, tmp_path) is None
    assert s1_cache.load_s1(_key(full, perturbed(retain, 0.1), items), items, tmp_path) is None


def test_key_notes_bfloat16_products_through_float32_kernels(setup):
    """bfloat16 CPU products of the float32-kernel path round differently from torch's own, so the
    S1 of one path is not the other's; every other dtype, device or path keeps the key it had."""
    from uds_core.float32_products import float32_products
    tok, full, retain, items = setup
    fps = {"full": "f", "retain": "r"}
    settings = EngineSettings(batch_size=2)

    def key(dtype, device):
        return s1_cache.s1_key(fps, RECORDS, items, settings, dtype, device, {"layers": [0, 1, 2]})

    plain = {(d, dev): key(d, dev) for d in (torch.bfloat16, torch.float32) for dev in ("cpu", "cuda")}
    with float32_products():
        inside = {(d, dev): key(d, dev) for d in (torch.bfloat16, torch.float32) for dev in ("cpu", "cuda")}
    changed = {k for k in plain if plain[k] != inside[k]}
    assert changed == {(torch.bfloat16, "cpu")}
    assert inside[(torch.bfloat16, "cpu")] == {**plain[(torch.bfloat16, "cpu")], "bf16_products": "float32"}
    assert s1_cache.cache_path(inside[(torch.bfloat16, "cpu")]) != s1_cache.cache_path(plain[(torch.bfloat16, "cpu")])


def test_corrupt_entry_warns_and_recomputes(setup, tmp_path, capsys):
    tok, full, retain, items = setup
    key = _key(full, retain, items)
    path = s1_cache.cache_path(key, tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"config": {"trunc')
    assert s1_cache.load_s1(key, items, tmp_path) is None
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "recomputing" in err[0] and str(path) in err[0]   # one line, naming the file
    path.write_text(json.dumps({"config": key, "layers": [0, 1, 2], "entries": [{"idx": 0}]}))
    assert s1_cache.load_s1(key, items, tmp_path) is None
    assert "recomputing" in capsys.readouterr().err


def test_interrupted_write_leaves_no_entry(setup, tmp_path, monkeypatch):
    tok, full, retain, items = setup
    s1 = compute_uds(UdsModels(full, retain, full), Examples(items), EngineSettings(batch_size=5)).s1

    def boom(*a, **k):
        raise KeyboardInterrupt

    from uds_core import atomic

    monkeypatch.setattr(atomic.os, "fsync", boom)   # interrupted after the bytes went to the temp file
    with pytest.raises(KeyboardInterrupt):
        s1_cache.save_s1(_key(full, retain, items), items, s1, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_fingerprints_are_stable_across_loads(setup, tmp_path):
    tok, full, retain, _ = setup
    full.save_pretrained(tmp_path / "a")
    again = T.AutoModelForCausalLM.from_pretrained(tmp_path / "a")
    assert model_fingerprint(again) == model_fingerprint(full) != model_fingerprint(retain)
    assert tokenizer_hash(make_tokenizer()) == tokenizer_hash(tok) == tokenizer_hash(make_tokenizer("left"))


def _compat(**models):
    check_compatible({f"{role} (spec-{role})": pair for role, pair in models.items()})


def test_compatibility_checks():
    tok = make_tokenizer()
    llama = tiny_model("llama")
    _compat(full=(llama, tok), retain=(perturbed(llama), tok), unlearned=(llama, make_tokenizer()))
    cases = [
        (tiny_model("qwen2"), tok,
         r"architecture family differs: full \(spec-full\) has llama, unlearned \(spec-unlearned\) has qwen2"),
        (tiny_model("llama", layers=3), tok, "number of decoder layers differs"),
        (tiny_model("llama", hidden=64), tok, "hidden size differs"),
    ]
    bigger = make_tokenizer()
    bigger.add_tokens(["<extra>"])
    cases.append((llama, bigger, "tokenizer vocabulary"))
    for model, t, msg in cases:
        with pytest.raises(UdsInputError, match=msg):
            _compat(full=(llama, tok), retain=(llama, tok), unlearned=(model, t))
    odd = tiny_model("llama")
    odd.config.model_type = "mystery"
    with pytest.raises(UdsInputError, match="unsupported model family 'mystery'"):
        _compat(full=(llama, tok), unlearned=(odd, tok))
