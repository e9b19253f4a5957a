"""The unlearned grids and P/N pools in each preset's zoo (recipes only: nothing is trained)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from checkpoints.catalogue import TRAINERS, recipes
from checkpoints.methods.effect import format_effect, setting_of
from checkpoints.methods.losses import METHODS
from checkpoints.methods.zoo_recipes import lr_token, num_token
from checkpoints.world.presets import PRESETS, get_preset


def by_kind(preset: str):
    rs = recipes(get_preset(preset))
    return rs, [r for r in rs if r.kind == "unlearned"], [r for r in rs if r.kind == "pool"]


def test_test_zoo_holds_all_eight_methods_and_both_pools():
    _, unlearned, pools = by_kind("test")
    assert {r.method for r in unlearned} == set(METHODS)
    signs = Counter(r.hparams["pool"] for r in pools)
    assert signs["P"] >= 2 and signs["N"] >= 2
    variants = {r.hparams["variant"] for r in pools}
    assert variants == {"pos_full", "pos_bio", "pos_para", "neg_retain", "neg_pert", "neg_bio"}


@pytest.mark.parametrize("preset", ["small", "tofu"])
def test_small_and_tofu_sizes(preset):
    _, unlearned, pools = by_kind(preset)
    for method in METHODS:
        runs = [r for r in unlearned if r.method == method]
        settings = {(r.train.lr, tuple(sorted(r.hparams.items()))) for r in runs}
        assert len(settings) >= 3 and {r.epoch for r in runs} == {5, 10}
        assert len(runs) == 2 * len(settings)
    signs = Counter(r.hparams["pool"] for r in pools)
    assert signs["P"] >= 10 and signs["N"] >= 10
    assert len({(r.train.lr, r.train.epochs) for r in pools}) >= 4   # learning rates x epoch counts


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_recipes_are_consistent(preset):
    rs, unlearned, pools = by_kind(preset)
    names = [r.name for r in rs]
    assert len(names) == len(set(names))
    assert all(r.method in TRAINERS for r in rs)
    assert all(r.parent == "full" for r in unlearned)
    # cheap members of a real-model world: continued from full (P) / retain (N)
    if PRESETS[preset].pool.continued is not None:
        assert all(r.parent == {"P": "full", "N": "retain"}[r.hparams["pool"]] and r.train.epochs == 1 for r in pools)
        signs = Counter(r.hparams["pool"] for r in pools)
        assert signs["P"] == signs["N"] == len(pools) // 2
    else:
        assert all(r.parent == "base" for r in pools)
    if PRESETS[preset].random is not None:   # untrained models: the "unlearned" one is a noise copy of full
        assert [r.method for r in unlearned] == ["noise_copy"] and not pools
        return
    for r in unlearned:
        assert r.name.startswith(f"{r.method}_lr{lr_token(r.train.lr)}_") and r.name.endswith(f"_ep{r.epoch}")
        assert r.train.epochs == r.epoch and METHODS[r.method].hparams(r.hparams)  # known hyperparameters
        if r.method == "rmu":
            assert 0 <= r.hparams["layer"] < get_preset(preset).shape.layers
    ft = get_preset(preset).finetune   # no copy of full/retain: another lr, epoch count or data order
    assert all((r.train.lr, r.train.epochs, r.train.seed) != (ft.lr, ft.epochs, ft.seed) for r in pools)


def test_smol_zoo_is_spec_5_1_and_7_2_shaped():
    """60 pool members from the base (6 variants x lr 1x-5x of full's x epochs 1x, 2x), 8 methods x 3 rates."""
    _, unlearned, pools = by_kind("smol")
    ft = get_preset("smol").finetune
    assert len(pools) == 60 and all(r.parent == "base" for r in pools)
    points = Counter((r.hparams["variant"], round(r.train.lr / ft.lr, 9), r.train.epochs / ft.epochs) for r in pools)
    assert set(points.values()) == {1} and {lr for _, lr, _ in points} == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert {ep for _, _, ep in points} == {1.0, 2.0}
    assert Counter(r.hparams["pool"] for r in pools) == {"P": 30, "N": 30}
    assert {r.method for r in unlearned} == set(METHODS) and len(unlearned) == 24
    assert all(len({r.train.lr for r in unlearned if r.method == m}) == 3 for m in METHODS)


def test_name_tokens():
    assert [lr_token(x) for x in (1e-4, 5e-4, 2.5e-4, 3e-3)] == ["1e-4", "5e-4", "2.5e-4", "3e-3"]
    assert [num_token(x) for x in (0.1, 3.5, 0.125, 10.0, 2)] == ["01", "35", "0125", "10", "2"]
    assert setting_of("npo_lr5e-4_b01_a1_ep5", "npo") == "lr5e-4 b01 a1"
    assert setting_of("pos_bio_lr3e-3_ep12", "pos_bio") == "lr3e-3"


def test_effect_table_format():
    row = {"kind": "unlearned", "method": "npo", "setting": "lr5e-4 b01 a1", "epochs": 5, "forget_hit": 0.1,
           "retain_hit": 0.8, "holdout_hit": 0.0, "d_forget": -0.87, "d_retain": -0.14, "d_holdout": 0.0,
           "train_seconds": 6.2}
    text = format_effect([row], "title")
    assert text.splitlines()[0] == "title" and "npo" in text and "-0.87" in text and "0.80" in text


def test_builder_trains_an_unlearned_model_from_full(test_world):
    """Through the builder: the recipe's trainer runs, the model is saved with its recipe, and
    the forget entities' log-prob falls below the full model's."""
    from transformers import LlamaForCausalLM

    from checkpoints.world.build import ensure_model
    from checkpoints.world.quality import entity_logprob
    from checkpoints.world.store import ensure_tokenizer, load_world

    _, unlearned, _ = by_kind("test")
    npo = next(r for r in unlearned if r.method == "npo" and r.epoch == 5)
    folder = ensure_model("test", 0, npo.name, progress=False)
    meta = json.loads((folder / "recipe.json").read_text())
    assert meta["method"] == "npo" and meta["parent"] == "full" and meta["hparams"] == npo.hparams
    world, tok = load_world("test", 0), ensure_tokenizer("test", 0)
    items = world.uds_items()
    full = entity_logprob(LlamaForCausalLM.from_pretrained(test_world / "models" / "full"), tok, items)
    assert entity_logprob(LlamaForCausalLM.from_pretrained(folder), tok, items) < full - 1.0


def test_an_unknown_preset_names_the_known_ones():
    from uds_core.errors import UdsInputError

    with pytest.raises(UdsInputError) as e:
        get_preset("nope")
    assert "'nope'" in str(e.value) and all(name in str(e.value) for name in PRESETS)


@pytest.mark.parametrize("preset", sorted(p for p in PRESETS if PRESETS[p].random is None))
def test_every_preset_keyed_choice_comes_from_its_preset(preset):
    """The unlearning batch, the grid's epochs and methods, and the pool's shape a recipe list shows
    are the ones its `Preset` states (nothing falls back to another preset's)."""
    p = get_preset(preset)
    _, unlearned, pools = by_kind(preset)
    assert unlearned and {r.train.batch_size for r in unlearned} == {p.unlearn_batch}
    assert {r.epoch for r in unlearned} == set(p.grid.epochs)
    if p.grid.methods is not None:
        assert {r.method for r in unlearned} == set(p.grid.methods)
    if p.pool.continued is not None:
        assert sorted(r.hparams["variant"] for r in pools) == sorted(v for v, _ in p.pool.continued)
    else:
        assert len(pools) == 6 * len(p.pool.lr_scale) * len(p.pool.epoch_scale)   # six variants (spec §5.1)
