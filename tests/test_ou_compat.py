"""What Open-Unlearning's pinned transformers (4.45.1) needs, checked under whichever transformers
runs the tests: the default suite runs them on 5.x; run them once in an OU-pinned environment too
(docs/open_unlearning.md):

    PYTHONPATH=. <ou-venv>/bin/python -m pytest -q tests/test_ou_compat.py

1. The fast UDS engine is used, and equals the straightforward one, on Llama (eager and sdpa
   attention, block / attn / mlp patches).
2. A tiny-world model folder with the 4.x spellings added (checkpoints.world.store.
   write_legacy_fields) loads with the same tokenization, chat template and config values (rope
   theta included) as its own files say, and its weights and recipe digest are untouched.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import jinja2
import numpy as np
import pytest
import transformers as T
from tokenizers import Tokenizer

from checkpoints.world.store import write_legacy_fields
from tests.engine_fixtures import RECORDS, make_tokenizer, perturbed
from uds_core import engine
from uds_core.arch import transformers_major
from uds_core.engine import EngineSettings, UdsModels, compute_uds
from uds_core.paths import world_dir
from uds_core.prompts import Examples, prepare_items

TEXTS = ["In which city was Rakond Raraimir born?", "Question: Who wrote it?\nAnswer: <|user|> x  y"]


def llama(attn: str, seed: int = 0):
    cfg = T.LlamaConfig(vocab_size=512, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                        num_key_value_heads=2, intermediate_size=64, initializer_range=0.3, rope_theta=500000.0)
    T.set_seed(seed)
    return T.AutoModelForCausalLM.from_config(cfg, attn_implementation=attn).eval()


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("component", ["block", "attn", "mlp"])
def test_fast_path_is_used_and_equals_the_naive_one(attn, component):
    full = llama(attn)
    retain, unlearned = perturbed(full, 1.0, seed=3), perturbed(full, 0.5, seed=5)
    items = prepare_items(RECORDS, make_tokenizer("right"))[0]
    fast = EngineSettings(component=component, batch_size=3)
    assert engine.algorithm_tag(fast, full, retain, unlearned).startswith("fast"), T.__version__
    models, examples = UdsModels(full, retain, unlearned), Examples(items)
    a = compute_uds(models, examples, fast)
    b = compute_uds(models, examples, EngineSettings(component=component, batch_size=3, algorithm="naive"))
    np.testing.assert_allclose(a.s1.patched, b.s1.patched, atol=1e-5, rtol=0)
    np.testing.assert_allclose(a.s2.patched, b.s2.patched, atol=1e-5, rtol=0)
    assert [u is None for u in a.uds] == [u is None for u in b.uds]


@pytest.fixture
def legacy_copy(tmp_path, request):
    """A copy of the test world's full model folder (as 5.x saved it) with the 4.x fields written.
    Under 5.x the world is built if missing (the `test_world` fixture), so these tests need no
    earlier file; under 4.x it is only located: building reads the world's tokenizer, which 4.x
    cannot before this fix."""
    if transformers_major() >= 5:
        request.getfixturevalue("test_world")
    source = world_dir("test", 0) / "models" / "full"
    if not (source / "model.safetensors").is_file():
        pytest.skip("the test world is not built (build it under transformers 5.x: the default suite does)")
    folder = tmp_path / "full"
    shutil.copytree(source, folder)
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    write_legacy_fields(folder)
    return folder, before


def test_legacy_fields_leave_weights_and_recipe_alone(legacy_copy):
    folder, before = legacy_copy
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}
    changed = {name for name in before if before[name] != after[name]}
    assert changed <= {"config.json", "tokenizer_config.json"}
    assert "model.safetensors" in before and "recipe.json" in before
    write_legacy_fields(folder)   # idempotent
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()} == after


def test_tokenizer_reads_the_same(legacy_copy):
    folder, _ = legacy_copy
    tok = T.AutoTokenizer.from_pretrained(folder)
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))   # what the saved file itself says
    for text in TEXTS:
        assert tok(text)["input_ids"] == raw.encode(text).ids
    assert tok.pad_token == "<|pad|>" and tok.eos_token == "<|eot|>" and tok.bos_token == "<|bos|>"
    template = jinja2.Environment().from_string((folder / "chat_template.jinja").read_text())
    chat = [{"role": "user", "content": "Who wrote it?"}]
    expected = template.render(messages=chat, bos_token=tok.bos_token, add_generation_prompt=True)
    assert tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) == expected


def _theta(config) -> float:
    params = getattr(config, "rope_parameters", None)   # 5.x keeps it there
    return float(params["rope_theta"]) if isinstance(params, dict) else float(config.rope_theta)


def test_config_values_read_the_same(legacy_copy):
    folder, _ = legacy_copy
    saved = json.loads((folder / "config.json").read_text())
    # a non-default theta, in the layout 5.x writes (rope_parameters only), then the 4.x fields added
    saved.pop("rope_theta", None)
    saved["rope_parameters"] = {"rope_theta": 500000.0, "rope_type": "default"}
    (folder / "config.json").write_text(json.dumps(saved))
    plain = T.AutoConfig.from_pretrained(folder)
    if transformers_major() < 5:
        assert plain.rope_theta == 10000.0   # the silent default this fixes
    write_legacy_fields(folder)
    config = T.AutoConfig.from_pretrained(folder)
    assert _theta(config) == 500000.0
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "rms_norm_eps", "vocab_size", "tie_word_embeddings", "max_position_embeddings"):
        assert getattr(config, key) == saved[key], key
