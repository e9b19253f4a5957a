"""LoRA worlds' plumbing (checkpoints/world/lora.py, checkpoints/narrow.py) on the `test` world's small
Llama: stacked unmerged adapters compute what the merged model computes, models of a run share the
base's tensors, the reference of a trained adapter is the model before training bit for bit, the
Fisher of an unmerged adapter model is the merged model's, and a narrowed copy loads as the cast
`from_pretrained` makes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from checkpoints.world.lora import (LoraSettings, WithoutTrainedAdapter, sharing_copy, stack, stacked_model,
                                    with_trainable_adapter)

LORA = LoraSettings(r=4, alpha=8)
IDS = torch.tensor([[5, 17, 42, 99, 7, 3, 250, 11], [8, 9, 10, 11, 12, 13, 14, 15]])


def _trained_adapter(model, folder: Path, seed: int, base: str) -> Path:
    """A LoRA adapter with non-zero B (random weights, as if trained), saved as a PEFT folder."""
    from checkpoints.world.lora import save_trained_adapter

    peft_model = with_trainable_adapter(model, LoraSettings(r=4, alpha=8, seed=seed))
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if p.requires_grad:
                p.copy_(torch.randn(p.shape, generator=g) * 0.05)
    return save_trained_adapter(peft_model, folder, base)


@pytest.fixture(scope="module")
def chain(test_world: Path, tmp_path_factory) -> dict:
    """Two adapters, the second on top of the first (full's, then an unlearned one's)."""
    root = tmp_path_factory.mktemp("lora")
    folder = test_world / "models" / "full"
    load = lambda: AutoModelForCausalLM.from_pretrained(folder).eval()  # noqa: E731
    first = _trained_adapter(load(), root / "first", 1, str(folder))
    second = _trained_adapter(stack(load(), [first]), root / "second", 2, str(root / "first"))
    return {"folder": folder, "first": first, "second": second, "load": load}


def _merged(load, folders: list[Path]):
    from peft import PeftModel

    model = load()
    for f in folders:
        model = PeftModel.from_pretrained(model, str(f)).merge_and_unload()
    return model.eval()


@torch.no_grad()
def test_stacked_chain_computes_the_merged_model(chain):
    base = chain["load"]()
    stacked = stacked_model(base, [chain["first"], chain["second"]])
    merged = _merged(chain["load"], [chain["first"], chain["second"]])
    plain = chain["load"]()(IDS).logits
    got, want = stacked(IDS).logits, merged(IDS).logits
    assert (got - plain).abs().max() > 1e-2            # the adapters change the output
    # and unmerged equals merged up to float32 rounding, which grows with the logits' scale (about 12 here:
    # merged weights round once more than the sum of the base and adapter outputs)
    assert (got - want).abs().max() <= 1e-5 * want.abs().max()


@torch.no_grad()
def test_models_of_a_run_share_the_base_tensors_and_leave_each_other_alone(chain):
    base = chain["load"]()
    before = base(IDS).logits.clone()
    one = stacked_model(base, [chain["first"]])
    one_out = one(IDS).logits.clone()
    two = stacked_model(base, [chain["first"], chain["second"]])
    w = lambda m: m.get_submodule("model.layers.0.mlp.down_proj")  # noqa: E731
    assert w(one).base_layer.weight.data_ptr() == w(two).base_layer.weight.data_ptr() == w(base).weight.data_ptr()
    assert torch.equal(base(IDS).logits, before)     # the base tree carries no adapter
    assert torch.equal(one(IDS).logits, one_out)     # stacking another chain leaves the first model as it was
    assert not torch.equal(two(IDS).logits, one_out)


def test_sharing_copy_shares_parameters_not_modules(test_world):
    model = AutoModelForCausalLM.from_pretrained(test_world / "models" / "full")
    twin = sharing_copy(model)
    pairs = list(zip(model.parameters(), twin.parameters()))
    assert pairs and all(a is b for a, b in pairs)
    assert twin.model.layers[0] is not model.model.layers[0]


def test_reference_of_a_trained_adapter_is_the_starting_model_bit_for_bit(chain):
    """Train an adapter on top of a frozen chain for a few steps: the reference (trained adapter
    off) still gives the chain's output exactly, and the trainable flags are as they were."""
    model = stack(chain["load"](), [chain["first"]])
    with torch.no_grad():
        start = model(input_ids=IDS).logits.clone()
    peft_model = with_trainable_adapter(model, LORA)
    flags = {n: p.requires_grad for n, p in peft_model.named_parameters()}
    assert {n for n, f in flags.items() if f} and all(".default." in n for n, f in flags.items() if f)
    ref = WithoutTrainedAdapter(peft_model)
    opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=1e-2)
    peft_model.train()
    for _ in range(3):
        loss = peft_model(input_ids=IDS, labels=IDS).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        assert torch.equal(ref(input_ids=IDS).logits, start)
    peft_model.eval()
    with torch.no_grad():
        assert not torch.equal(peft_model(input_ids=IDS).logits, start)   # the trained adapter moved
    assert {n: p.requires_grad for n, p in peft_model.named_parameters()} == flags


def test_fisher_of_an_unmerged_adapter_model_is_the_merged_models(chain, test_world):
    from metrics.forward import PassOptions
    from metrics.hidden import checkpoint_parameters, fisher_diagonal
    from uds_core.prompts import prepare_items
    from checkpoints.specs import load_tokenizer

    stacked = stacked_model(chain["load"](), [chain["first"]])
    merged = _merged(chain["load"], [chain["first"]])
    block = stacked.model.layers[0]
    assert len(checkpoint_parameters(block)) == len(list(merged.model.layers[0].parameters()))
    assert all("lora_" not in n for n, p in block.named_parameters()
               if any(p is q for q in checkpoint_parameters(block)))
    records = json.loads((test_world / "data" / "uds_data.json").read_text())[:4]
    items, _ = prepare_items(records, load_tokenizer(str(chain["folder"])))
    opts = PassOptions(2, 0, "cpu")
    got, want = fisher_diagonal(stacked, items, opts), fisher_diagonal(merged, items, opts)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want):
        assert torch.allclose(g, w, rtol=1e-3, atol=1e-9 * float(w.abs().max()))


def test_narrowed_copy_equals_the_cast_at_load_time(test_world, tmp_path, monkeypatch):
    from checkpoints.narrow import narrowed

    monkeypatch.setenv("UDS_HOME", str(tmp_path))
    folder = test_world / "models" / "full"
    assert narrowed(folder, torch.float32) == folder    # already float32: the folder itself
    copy_ = narrowed(folder, torch.bfloat16)
    assert copy_.parent == tmp_path / "narrowed" and narrowed(folder, torch.bfloat16) == copy_
    want = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).state_dict()
    got = AutoModelForCausalLM.from_pretrained(copy_, dtype=torch.bfloat16).state_dict()
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) and got[k].dtype == want[k].dtype for k in want)
    assert json.loads((copy_ / "config.json").read_text())["dtype"] == "bfloat16"


def test_lora_settings_enter_the_digest_of_a_lora_world_only():
    """The smol world's scheme-1 digests are what its committed campaign protocol records (the LoRA
    fields changed none of them); a LoRA world's digest moves with its adapter settings."""
    import dataclasses

    from checkpoints.catalogue import find_recipe
    from checkpoints.world.recipe_digest import legacy_recipe_digest, recipe_digest
    from checkpoints.world.presets import get_preset

    protocol = json.loads((Path(__file__).resolve().parents[1] / "results/smol/campaign/protocol.json").read_text())
    smol = get_preset("smol")
    for name in ("full", "retain", "npo_lr3e-5_b01_a1_ep5"):
        assert legacy_recipe_digest(smol, find_recipe(smol, name)) == protocol["recipes"][name]
    qwen = get_preset("qwen")
    other = dataclasses.replace(qwen, lora=dataclasses.replace(qwen.lora, r=8))
    assert (recipe_digest(qwen, find_recipe(qwen, "full"), seed=0)
            != recipe_digest(other, find_recipe(other, "full"), seed=0))
