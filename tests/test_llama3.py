"""The Llama 3 tokenizer folder made from Meta's `llama-models` wheel (checkpoints/llama3.py): every
string of the TOFU files encodes token for token as Meta's own encoder (`llama_models.llama3.
tokenizer.Tokenizer`, on tiktoken) encodes it, decodes back to itself, and the special tokens sit at
their official ids; the Llama-3.2-1B architecture matches the wheel's argument table; bad input
(wheel missing, a tokenizer larger than the embedding) is one clear error."""

from __future__ import annotations

import sys

import pytest

from tests.llama3_fixtures import llama_tok, llama_tok_folder, meta_tok, tofu_strings  # noqa: F401
from uds_core.errors import UdsInputError

# Official ids, as Meta's model card and the issue list them (not read from the code under test)
OFFICIAL = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001, "<|start_header_id|>": 128006,
            "<|end_header_id|>": 128007, "<|eom_id|>": 128008, "<|eot_id|>": 128009, "<|python_tag|>": 128010}


def test_special_tokens_at_their_official_ids(llama_tok, meta_tok):
    assert len(llama_tok) == 128256 == meta_tok.n_words
    for name, token_id in OFFICIAL.items():
        assert llama_tok.convert_tokens_to_ids(name) == token_id, name
    # all 256 of the wheel's special tokens, at the wheel's ids, encoded as one token each
    assert len(meta_tok.special_tokens) == 256
    for name, token_id in meta_tok.special_tokens.items():
        assert llama_tok.convert_tokens_to_ids(name) == token_id
        assert llama_tok.encode(name, add_special_tokens=False) == [token_id]
    # BOS / EOS / pad as Open-Unlearning's Llama-3.2 checkpoints set them (spec §1; pad = eos)
    assert (llama_tok.bos_token_id, llama_tok.eos_token_id, llama_tok.pad_token_id) == (128000, 128009, 128009)
    assert llama_tok.encode("Hi")[0] == 128000 and llama_tok.encode("Hi", add_special_tokens=False)[0] != 128000


def test_every_tofu_string_encodes_as_metas_encoder_and_round_trips(llama_tok, meta_tok, tofu_dir):
    files = tofu_strings(tofu_dir)
    assert {"forget10_annotated.json", "full.json", "retain90.json", "forget10_perturbed.json"} <= set(files)
    n = 0
    for name, strings in files.items():
        ours = llama_tok(strings, add_special_tokens=False)["input_ids"]
        for text, ids in zip(strings, ours):
            assert ids == meta_tok.encode(text, bos=False, eos=False), (name, text)
            assert llama_tok.decode(ids, clean_up_tokenization_spaces=False) == text == meta_tok.decode(ids)
        n += len(strings)
    assert n > 20000   # full.json alone holds 4000 question/answer pairs
    # with special tokens: BOS first, as Meta's encode(bos=True)
    questions = files["forget10_annotated.json"][:50]
    assert [llama_tok.encode(q) for q in questions] == [meta_tok.encode(q, bos=True, eos=False) for q in questions]


def test_folder_loads_under_the_4x_spellings(llama_tok_folder):
    import json

    config = json.loads((llama_tok_folder / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"        # 4.45 cannot resolve TokenizersBackend
    assert "Cutting Knowledge Date" in config["chat_template"]            # 4.45 reads the template from here


def test_architecture_is_the_wheels_llama32_1b():
    pytest.importorskip("llama_models")
    from checkpoints import llama3
    from checkpoints.world.presets import get_preset
    from uds_core.memory import count_parameters

    args = llama3.llama32_1b_args()
    assert (args["dim"], args["n_layers"], args["n_heads"], args["n_kv_heads"], args["vocab_size"]) == \
        (2048, 16, 32, 8, 128256)
    cfg = llama3.llama32_1b_config()
    # MLP width from the FeedForward rule: 2/3 of 4*2048, x1.5, rounded up to a multiple of 256
    assert cfg.intermediate_size == 8192 and cfg.head_dim == 64 and cfg.tie_word_embeddings
    assert cfg.rope_parameters["rope_type"] == "llama3" and cfg.rope_parameters["factor"] == 32.0
    shape = get_preset("llama1b").shape
    assert (shape.hidden, shape.layers, shape.heads, shape.kv_heads, shape.intermediate) == \
        (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads,
         cfg.intermediate_size)
    # 1.24B parameters (tied embedding counted once): 128256*2048 + 16 blocks + final norm
    block = 2048 * (2048 + 512 + 512 + 2048) + 3 * 2048 * 8192 + 2 * 2048
    assert count_parameters(cfg) == 128256 * 2048 + 16 * block + 2048 == 1_235_814_400


def test_missing_wheel_is_one_clear_error(monkeypatch):
    from checkpoints import llama3

    monkeypatch.setitem(sys.modules, "llama_models", None)   # import fails as if not installed
    with pytest.raises(UdsInputError,
                       match=r"llama_models package, which is not installed.*pip install 'llama-models==0\.3\.0'"):
        llama3.official_tokenizer()
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(UdsInputError, match="tiktoken package"):
        llama3.tokenizer_folder()


def test_tokenizer_larger_than_the_embedding_is_refused(llama_tok):
    from transformers import LlamaConfig

    from uds_core.compat import check_compatible_configs

    small = LlamaConfig(vocab_size=49152, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128)
    with pytest.raises(UdsInputError, match="128256 tokens but the model's embedding has 49152 rows"):
        check_compatible_configs({"full (x)": (small, llama_tok)})
