"""Checkpoints in the shapes people publish give the numbers of the plain folder: sharded
safetensors, bf16 weights (loaded in bf16 or float32), untied embeddings, weights-only folders
that share the full model's tokenizer; a sharded index naming a missing shard is bad input."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.engine_fixtures import RECORDS, interpolate, make_tokenizer, memorise, tiny_model
from uds.cli import main


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("shapes")
    tok = make_tokenizer()
    base = tiny_model("llama", layers=3, hidden=48)
    full = memorise(base, tok, steps=40, lr=5e-3)
    half = interpolate(full, base, 0.5)
    rounded = copy.deepcopy(half).to(torch.bfloat16).to(torch.float32)   # bf16 weights, held in float32
    out = {}

    def save(name: str, model, with_tokenizer: bool = True, **kw) -> None:
        model.save_pretrained(root / name, **kw)
        if with_tokenizer:
            tok.save_pretrained(root / name)
        out[name] = root / name

    save("full", full)
    save("retain", base)
    save("half", half)
    save("half_sharded", half, max_shard_size="20KB")
    save("half_no_tokenizer", half, with_tokenizer=False)
    save("rounded", rounded)
    save("rounded_bf16", copy.deepcopy(half).to(torch.bfloat16))
    save("half_untied", _untied(half))
    (root / "data.json").write_text(json.dumps(RECORDS))
    out["data"] = root / "data.json"
    return out


def _untied(model):
    """The same function with the LM head stored as its own copy of the embedding matrix."""
    config = copy.deepcopy(model.config)
    config.tie_word_embeddings = False
    untied = type(model)(config).eval()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    state["lm_head.weight"] = model.get_input_embeddings().weight.detach().clone()
    untied.load_state_dict(state)
    return untied


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def _uds(world, unlearned: str, tmp_path: Path, *extra: str) -> list:
    out = tmp_path / f"out_{unlearned}_{len(extra)}"
    rc = main(["score", "--unlearned", str(world[unlearned]), "--full", str(world["full"]),
               "--retain", str(world["retain"]), "--data", str(world["data"]), "--device", "cpu",
               "--batch-size", "2", "--no-s1-cache", "--out", str(out), *extra])
    assert rc == 0
    rows = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    return [(r["uds"], r["s2_delta"]) for r in rows]


def test_sharded_untied_and_tokenizerless_folders_score_as_the_plain_one(world, tmp_path):
    assert len(list(world["half_sharded"].glob("model-*.safetensors"))) > 1
    plain = _uds(world, "half", tmp_path)
    assert any(u is not None and 0 < u < 1 for u, _ in plain)   # a model between full and retain
    for variant in ("half_sharded", "half_untied", "half_no_tokenizer"):
        assert _uds(world, variant, tmp_path) == plain, variant


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_bf16_weights_score_as_their_float32_copy(world, tmp_path, dtype):
    config = json.loads((world["rounded_bf16"] / "config.json").read_text())
    assert config.get("dtype", config.get("torch_dtype")) == "bfloat16"   # key renamed in transformers 4.56
    assert _uds(world, "rounded_bf16", tmp_path, "--dtype", dtype) == _uds(world, "rounded", tmp_path, "--dtype", dtype)


def test_a_missing_shard_is_one_clear_line(world, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(world["half_sharded"], broken)
    next(iter(sorted(broken.glob("model-*.safetensors")))).unlink()
    rc = main(["score", "--unlearned", str(broken), "--full", str(world["full"]), "--retain", str(world["retain"]),
               "--data", str(world["data"]), "--device", "cpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1
    assert "model.safetensors.index.json names" in err[0] and "1 missing (model-00001-of-" in err[0]
