"""Architecture table and hooks on random tiny models of several families (no downloads)."""

import numpy as np
import pytest
import torch
import torch.nn as nn

from tests.engine_fixtures import RECORDS, make_tokenizer, perturbed, tiny_model
from uds_core import arch
from uds_core.engine import EngineSettings, score_pair
from uds_core.errors import UdsInputError
from tests.hook_fixtures import count_calls
from uds_core.hooks import capture_outputs, replace_output
from uds_core.prompts import prepare_items

FAMILIES = ["llama", "qwen2", "mistral", "gemma", "gemma2", "phi3", "gpt2", "gpt_neox", "qwen3", "olmo",
            "falcon", "bloom"]


@pytest.fixture(scope="module")
def items():
    return prepare_items(RECORDS, make_tokenizer())[0]


@pytest.mark.parametrize("family", FAMILIES)
def test_table_finds_layers_and_components(family):
    model = tiny_model(family, layers=3)
    assert arch.model_family(model) == family
    assert arch.num_layers(model) == 3
    for layer in range(3):
        block = arch.component_module(model, layer, "block")
        assert block is arch.decoder_layers(model)[layer]
        for comp in ("attn", "mlp"):
            sub = arch.component_module(model, layer, comp)
            assert any(sub is m for m in block.modules()) and sub is not block
    assert isinstance(arch.final_norm(model), nn.Module)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("component", ["block", "attn", "mlp"])
def test_patching_runs_on_every_family(family, component, items):
    full = tiny_model(family)
    settings = EngineSettings(component=component, batch_size=3)
    same = score_pair(full, full, items, settings)
    assert np.array_equal(same.deltas, np.zeros_like(same.deltas))  # own states patched back: no change
    other = score_pair(full, perturbed(full), items, settings)
    assert np.isfinite(other.deltas).all() and np.abs(other.deltas).max() > 1e-4


def test_unknown_family_is_named():
    model = tiny_model("llama")
    model.config.model_type = "mystery"
    with pytest.raises(UdsInputError, match=r"mystery.*llama"):
        arch.decoder_layers(model)


def test_bad_component_and_layer():
    model = tiny_model("llama")
    with pytest.raises(UdsInputError, match="component"):
        arch.component_module(model, 0, "resid")
    with pytest.raises(UdsInputError, match="out of range"):
        arch.component_module(model, 5, "block")


class TupleBlock(nn.Module):
    """Returns (hidden, extra) as transformers 4.x decoder layers do."""

    def forward(self, x):
        return x * 2.0, "extra"


class Doubler(nn.Module):
    def forward(self, x):
        return x * 2.0


@pytest.mark.parametrize("module_cls", [TupleBlock, Doubler])
def test_capture_and_replace_on_tuple_and_tensor_outputs(module_cls):
    m = module_cls()
    x = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(2, 3, 4)
    with capture_outputs({"m": m}) as store:
        m(x)
    assert torch.equal(store["m"], x * 2.0)
    rows, pos = torch.tensor([0, 1]), torch.tensor([2, 0])
    with replace_output(m, rows, pos, torch.full((2, 4), -1.0, dtype=torch.float64)):
        out = m(x)
    act = out[0] if isinstance(out, tuple) else out
    if isinstance(out, tuple):
        assert out[1] == "extra"
    expected = x * 2.0
    expected[0, 2] = -1.0
    expected[1, 0] = -1.0
    assert torch.equal(act, expected) and act.dtype == torch.float32
    assert torch.equal(m(x)[0] if isinstance(out, tuple) else m(x), x * 2.0)  # hook gone


def test_hooks_are_removed_on_error():
    m = Doubler()
    with pytest.raises(RuntimeError):
        with capture_outputs({"m": m}), replace_output(m, torch.tensor([0]), torch.tensor([0]), torch.zeros(1, 4)), \
                count_calls(m):
            raise RuntimeError("boom")
    assert not m._forward_hooks
