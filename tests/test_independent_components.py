"""Block / attention / MLP patching checked against a second, hand-written route, per family.

Nothing on the reference side uses the engine, uds_core.hooks or the architecture table (uds_core/arch.py):

- sites are found from the model itself: the decoder blocks are the ModuleList with one entry
  per layer; the attention (MLP) container is the one child of a block whose class name has
  "Attention" ("MLP", or "Moe" for mixture-of-experts blocks); its *output projection* is the
  last parametrised leaf module the container runs (o_proj, c_proj, dense, dense_4h_to_h, fc2,
  ...). spec §2.8 patches attention and MLP "after o_proj, before the residual add", which is
  the output projection's output whatever the container does after it (Bloom's containers add
  the residual themselves). Mixture-of-experts containers have no single projection; theirs is
  the container's output (that it carries no residual is checked by the decomposition test).
- the patch is a plain forward hook written here; the entity log-prob is computed here from the
  logits, one example per forward (no padding), while the engine runs padded batches of 3.

Four checks per family:
1. planted signal: a *different* model's states patched by the engine at each layer and
   component give the same deltas as the hand patch (|diff| <= 2e-5 nats, float32), and the
   attention and MLP deltas differ, so swapped lookups fail;
2. zeroing the attention container's output projection makes the engine's attn site output
   exactly 0 and leaves its mlp site non-zero (and the other way round): the attn/mlp lookups
   are told apart by what the modules compute, not by their names;
3. decomposition: block output - block input = attn + mlp (pre-norm families) or
   post_attn_norm(attn) + post_ff_norm(mlp) (Gemma2/3, OLMo2): the sites hold the sub-layers'
   own contributions, without the residual;
4. (TransformerLens, extra `tl`) a Llama's engine attn/mlp deltas equal those of TransformerLens'
   `hook_attn_out` / `hook_mlp_out` patched with `run_with_hooks`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pytest
import torch
import torch.nn as nn
import transformers as T

from tests.engine_fixtures import RECORDS, make_tokenizer, perturbed, tiny_model
from uds_core import arch
from uds_core.engine import EngineSettings, score_pair
from uds_core.errors import UdsInputError
from uds_core.prompts import PreparedItem, prepare_items

torch.set_num_threads(1)

VOCAB, HIDDEN = 512, 32
TOL = 2e-5     # float32: a padded batch of 3 vs one example per forward
SIGNAL = 1e-3  # smallest max |delta| a planted patch must reach (50 x TOL; the weakest, Bloom attn, ~2.4e-3)

# The twelve families of tests/test_arch.py (built by tests/engine_fixtures.tiny_model) ...
BASE_FAMILIES = ["llama", "qwen2", "mistral", "gemma", "gemma2", "phi3", "gpt2", "gpt_neox", "qwen3", "olmo",
                 "falcon", "bloom"]


def _common(**extra) -> dict:
    return dict(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=2 * HIDDEN, **extra)


# ... and every other family of the table that transformers can build from a config.
EXTRA_CONFIGS = {
    "mixtral": lambda: T.MixtralConfig(num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, **_common()),
    "gemma3_text": lambda: T.Gemma3TextConfig(num_key_value_heads=2, head_dim=16, **_common()),
    "olmo2": lambda: T.Olmo2Config(num_key_value_heads=2, pad_token_id=0, eos_token_id=2, **_common()),
    "stablelm": lambda: T.StableLmConfig(num_key_value_heads=2, **_common()),
    "cohere": lambda: T.CohereConfig(num_key_value_heads=2, pad_token_id=0, eos_token_id=2, **_common()),
    "granite": lambda: T.GraniteConfig(num_key_value_heads=2, **_common()),
    "starcoder2": lambda: T.Starcoder2Config(num_key_value_heads=2, bos_token_id=1, eos_token_id=2, **_common()),
    "qwen2_moe": lambda: T.Qwen2MoeConfig(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                          moe_intermediate_size=16, shared_expert_intermediate_size=16, **_common()),
    "qwen3_moe": lambda: T.Qwen3MoeConfig(num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                          moe_intermediate_size=16, head_dim=16, **_common()),
    "phi": lambda: T.PhiConfig(**_common()),
    "gpt_neo": lambda: T.GPTNeoConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_layers=2, num_heads=2,
                                      attention_types=[[["global", "local"], 1]], max_position_embeddings=128),
    "gptj": lambda: T.GPTJConfig(vocab_size=VOCAB, n_embd=HIDDEN, n_layer=2, n_head=2, rotary_dim=8, n_positions=128),
    "opt": lambda: T.OPTConfig(vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=2, num_attention_heads=2,
                               ffn_dim=2 * HIDDEN, word_embed_proj_dim=HIDDEN, max_position_embeddings=128),
}
FAMILIES = BASE_FAMILIES + list(EXTRA_CONFIGS)
NO_MLP = {"opt"}                                 # fc1/fc2 sit directly in the block: no MLP module
POST_NORM = {"gemma2", "gemma3_text", "olmo2"}   # sub-layer outputs are normed before the residual add


def build(family: str, seed: int = 0) -> T.PreTrainedModel:
    """Random-initialised float32 CausalLM of `family`, eager attention, eval mode."""
    if family in BASE_FAMILIES:
        return tiny_model(family, seed=seed)
    torch.manual_seed(seed)
    return T.AutoModelForCausalLM.from_config(EXTRA_CONFIGS[family](), attn_implementation="eager").eval()


def components(family: str) -> list[str]:
    return ["block", "attn"] + ([] if family in NO_MLP else ["mlp"])


# --- sites, found from the model itself ---------------------------------------------------------

def hand_blocks(model: nn.Module) -> nn.ModuleList:
    """The one ModuleList with num_hidden_layers entries (the decoder blocks)."""
    n = model.config.num_hidden_layers
    found = [m for m in model.modules() if isinstance(m, nn.ModuleList) and len(m) == n]
    assert len(found) == 1, f"{len(found)} module lists of length {n}"
    return found[0]


def container(block: nn.Module, component: str) -> nn.Module:
    """The block's child whose class name says attention (or MLP / mixture of experts)."""
    words = ("Attention",) if component == "attn" else ("MLP", "SparseMoe")
    found = [m for m in block.children() if any(w in type(m).__name__ for w in words)
             and (component == "attn" or "Attention" not in type(m).__name__)]
    assert len(found) == 1, f"{component}: {[type(m).__name__ for m in found]}"
    return found[0]


def is_moe(module: nn.Module) -> bool:
    return "SparseMoe" in type(module).__name__


def output_projection(model: nn.Module, box: nn.Module, ids: torch.Tensor) -> nn.Module:
    """The last parametrised leaf module of `box` that runs during a forward of `model` on `ids`
    (its output projection); found by recording call order."""
    order: list[nn.Module] = []
    leaves = [m for m in box.modules() if not list(m.children()) and list(m.parameters(recurse=False))]

    def record(module, _inputs, _output) -> None:
        order.append(module)
    handles = [m.register_forward_hook(record) for m in leaves]
    try:
        with torch.no_grad():
            model(input_ids=ids)
    finally:
        for h in handles:
            h.remove()
    assert order, "no parametrised module ran"
    return order[-1]


def hand_site(model: nn.Module, layer: int, component: str, ids: torch.Tensor) -> nn.Module:
    """Where spec §2.8 patches: the block, or its attention / MLP output projection (MoE: container)."""
    block = hand_blocks(model)[layer]
    if component == "block":
        return block
    box = container(block, component)
    if is_moe(box):
        return box
    return output_projection(model, box, ids)


# --- the hand patch -----------------------------------------------------------------------------

def first(output: Any) -> torch.Tensor:
    """A module's activation: its output, or the first element of a tuple output."""
    return output[0] if isinstance(output, tuple) else output


def keep(store: dict, key: str, select: Callable[[torch.Tensor], torch.Tensor] = lambda act: act) -> Callable:
    """A forward hook storing a copy of the module's activation (it returns None: output unchanged)."""
    def hook(_module, _inputs, output) -> None:
        store.setdefault(key, select(first(output)).clone())
    return hook


@contextmanager
def hooked(module: nn.Module, fn: Callable) -> Iterator[None]:
    handle = module.register_forward_hook(fn)
    try:
        yield
    finally:
        handle.remove()


def entity_logprob(logits: torch.Tensor, positions: list[int], targets: list[int]) -> float:
    """Mean over the entity tokens of log softmax(logits[0, p])[y] (float64), logits (1, T, V)."""
    logp = torch.log_softmax(logits[0, positions].double(), dim=-1)
    return logp[torch.arange(len(targets)), torch.tensor(targets)].mean().item()


@torch.no_grad()
def hand_deltas(target: nn.Module, source: nn.Module, items: Sequence[PreparedItem], component: str) -> np.ndarray:
    """(N, L) base - patched entity log-prob, every (example, layer) by one unbatched forward each."""
    n_layers = target.config.num_hidden_layers
    out = np.zeros((len(items), n_layers))
    for i, it in enumerate(items):
        ids = torch.tensor([it.input_ids])
        pos, tgt = list(it.eval_positions), list(it.target_ids)
        assert tgt == [it.input_ids[p + 1] for p in pos]  # teacher forcing: position p predicts token p + 1
        base = entity_logprob(target(input_ids=ids).logits, pos, tgt)
        for layer in range(n_layers):
            got = {}
            with hooked(hand_site(source, layer, component, ids), keep(got, "v", lambda act: act[0, pos])):
                source(input_ids=ids)

            def patch(_m, _a, o, v=got["v"]):
                act = first(o).clone()
                act[0, pos] = v
                return (act, *o[1:]) if isinstance(o, tuple) else act
            with hooked(hand_site(target, layer, component, ids), patch):
                out[i, layer] = base - entity_logprob(target(input_ids=ids).logits, pos, tgt)
    return out


# --- fixtures -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def items():
    return prepare_items(RECORDS, make_tokenizer())[0]


@pytest.fixture(scope="module")
def ids(items) -> torch.Tensor:
    return torch.tensor([items[0].input_ids])


_PAIRS: dict[str, tuple] = {}


def pair(family: str) -> tuple[nn.Module, nn.Module]:
    """(target, source): a random model and a different one (weights moved by noise of their own size)."""
    if family not in _PAIRS:
        target = build(family)
        _PAIRS[family] = target, perturbed(target, 2.0, seed=5)
    return _PAIRS[family]


def test_every_family_of_the_table_is_checked_here():
    """A family added to uds_core/arch.py without a tiny config here would go unchecked."""
    assert sorted(FAMILIES) == sorted(arch.ARCHITECTURES)


# --- 1. planted signal --------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_engine_patch_equals_hand_patch(family, items):
    target, source = pair(family)
    hand = {c: hand_deltas(target, source, items, c) for c in components(family)}
    for comp in components(family):
        engine = score_pair(target, source, items, EngineSettings(component=comp, batch_size=3)).deltas
        assert np.abs(hand[comp]).max() > SIGNAL, f"{family}/{comp}: the planted patch changes nothing"
        np.testing.assert_allclose(engine, hand[comp], atol=TOL, rtol=0, err_msg=f"{family}/{comp}")
    if "mlp" in hand:  # the two sub-layers give different deltas, so a swapped lookup cannot pass
        assert np.abs(hand["attn"] - hand["mlp"]).max() > SIGNAL, family
        assert np.abs(hand["block"] - hand["mlp"]).max() > SIGNAL, family


# --- 2. attention vs MLP by what they compute ---------------------------------------------------

def _zeroed(model: nn.Module, component: str, ids: torch.Tensor) -> nn.Module:
    """A copy whose attention (MLP) containers output exactly 0 before the residual add: their
    output projection's weights zeroed (MoE: every parameter of its output-side experts zeroed)."""
    import copy

    out = copy.deepcopy(model)
    with torch.no_grad():
        for layer in range(out.config.num_hidden_layers):
            site = hand_site(out, layer, component, ids)
            params = site.parameters() if not is_moe(site) else _moe_outputs(site)
            for p in params:
                p.zero_()
    return out


def _moe_outputs(box: nn.Module):
    """Parameters whose zeroing makes a mixture-of-experts block output 0: every expert's and
    shared expert's parameters (the router stays, so routing still runs)."""
    return [p for name, p in box.named_parameters() if "gate." not in name or "expert" in name]


@torch.no_grad()
def _site_outputs(model: nn.Module, component: str, ids: torch.Tensor) -> list[torch.Tensor]:
    store: dict[str, torch.Tensor] = {}
    handles = [arch.component_module(model, l, component).register_forward_hook(keep(store, str(l)))
               for l in range(arch.num_layers(model))]
    try:
        model(input_ids=ids)
    finally:
        for h in handles:
            h.remove()
    return [store[str(l)] for l in range(arch.num_layers(model))]


@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in NO_MLP])
def test_attn_and_mlp_sites_are_told_apart_by_function(family, ids):
    model = build(family)
    for silenced, other in (("attn", "mlp"), ("mlp", "attn")):
        quiet = _zeroed(model, silenced, ids)
        assert all(torch.equal(t, torch.zeros_like(t)) for t in _site_outputs(quiet, silenced, ids)), \
            f"{family}: the {silenced} site is not the {silenced} sub-layer's own output"
        assert all(t.abs().max() > 0 for t in _site_outputs(quiet, other, ids)), \
            f"{family}: silencing {silenced} silenced the {other} site"


def test_opt_attention_site_is_told_apart_by_function(ids):
    model = build("opt")
    quiet = _zeroed(model, "attn", ids)
    assert all(torch.equal(t, torch.zeros_like(t)) for t in _site_outputs(quiet, "attn", ids))
    assert all(t.abs().max() > 0 for t in _site_outputs(model, "attn", ids))


# --- 3. decomposition of the block --------------------------------------------------------------

@pytest.mark.parametrize("family", [f for f in FAMILIES if f not in NO_MLP])
def test_block_is_residual_plus_attn_plus_mlp(family, ids):
    model = build(family, seed=2)
    store: dict[str, torch.Tensor] = {}
    layer = 1
    block = hand_blocks(model)[layer]
    def keep_input(_module, args, kwargs) -> None:
        store.setdefault("in", (args[0] if args else kwargs["hidden_states"]).clone())
    pre = block.register_forward_pre_hook(keep_input, with_kwargs=True)
    try:
        with hooked(arch.component_module(model, layer, "attn"), keep(store, "attn")), \
                hooked(arch.component_module(model, layer, "mlp"), keep(store, "mlp")), \
                hooked(block, keep(store, "out")), torch.no_grad():
            model(input_ids=ids)
    finally:
        pre.remove()
    attn, mlp = store["attn"], store["mlp"]
    if family in POST_NORM:  # h = x + norm_a(attn); out = h + norm_f(mlp(...))
        with torch.no_grad():
            attn, mlp = block.post_attention_layernorm(attn), block.post_feedforward_layernorm(mlp)
    torch.testing.assert_close(store["out"] - store["in"], attn + mlp, atol=1e-5, rtol=1e-5,
                               msg=lambda m: f"{family}: block - input != attn + mlp ({m})")


# --- 4. TransformerLens ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llama_folder(tmp_path_factory):
    """A tiny random Llama and a different one saved as Hugging Face folders (TransformerLens boots folders)."""
    root = tmp_path_factory.mktemp("tl_components")
    target, source = pair("llama")
    target.save_pretrained(root / "target")
    source.save_pretrained(root / "source")
    make_tokenizer().save_pretrained(root / "target")
    make_tokenizer().save_pretrained(root / "source")
    return root


def test_attn_mlp_patching_equals_transformer_lens(llama_folder, items):
    pytest.importorskip("transformer_lens", reason="transformer-lens is not installed (extra uds[tl])")
    from transformer_lens.model_bridge import TransformerBridge

    bridges = {}
    for name in ("target", "source"):
        b = TransformerBridge.boot_transformers(str(llama_folder / name), device="cpu", dtype=torch.float32)
        b.enable_compatibility_mode(no_processing=True)
        bridges[name] = b
    target, source = pair("llama")
    n_layers = target.config.num_hidden_layers
    for comp, hook in (("attn", "hook_attn_out"), ("mlp", "hook_mlp_out")):
        expected = np.zeros((len(items), n_layers))
        with torch.no_grad():
            for i, it in enumerate(items):
                x = torch.tensor([it.input_ids])
                pos, tgt = list(it.eval_positions), list(it.target_ids)
                base = entity_logprob(bridges["target"](x, return_type="logits"), pos, tgt)
                _, cache = bridges["source"].run_with_cache(x, names_filter=lambda n: n.endswith(hook))
                for layer in range(n_layers):
                    src = cache[f"blocks.{layer}.{hook}"]

                    def patch(act, hook, src=src):
                        act = act.clone()
                        act[:, pos] = src[:, pos]
                        return act
                    logits = bridges["target"].run_with_hooks(x, fwd_hooks=[(f"blocks.{layer}.{hook}", patch)])
                    expected[i, layer] = base - entity_logprob(logits, pos, tgt)
        engine = score_pair(target, source, items, EngineSettings(component=comp, batch_size=3)).deltas
        assert np.abs(expected).max() > SIGNAL
        np.testing.assert_allclose(engine, expected, atol=TOL, rtol=0, err_msg=comp)


def test_bloom_tensor_parallel_slices_are_refused():
    """Bloom with slow_but_exact and pretraining_tp > 1 bypasses its output projections (a hook
    on them would never fire and every delta would be 0): refused with one line."""
    model = build("bloom")
    model.config.slow_but_exact, model.config.pretraining_tp = True, 2
    for comp in ("attn", "mlp"):
        with pytest.raises(UdsInputError, match="slow_but_exact"):
            arch.component_module(model, 0, comp)
    assert arch.component_module(model, 0, "block") is hand_blocks(model)[0]
