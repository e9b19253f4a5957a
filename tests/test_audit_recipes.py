"""The LMLM recipes join the catalogue without disturbing it: no other digest changes, the
meta-evaluation population is unchanged, and the training examples cut where generation splices."""

from __future__ import annotations

import json

import pytest

from checkpoints.catalogue import TRAINERS, recipes
from checkpoints.lmlm.data import FactPrompt, encode_lmlm, encode_parametric, lmlm_examples
from checkpoints.lmlm.markup import call_text, value_text
from checkpoints.lmlm.recipes import LMLM_KINDS, lmlm_recipes, published_root
from checkpoints.world.recipe_digest import recipe_digest
from checkpoints.world.presets import get_preset
from tests.external import LMLM_SKIP
from uds_core.chat import IGNORE


@pytest.mark.parametrize("preset", ["test", "small"])
def test_lmlm_recipes_are_roots(preset):
    rs = lmlm_recipes(get_preset(preset))
    assert [r.name for r in rs] == list(LMLM_KINDS)
    assert all(r.parent is None and r.method in TRAINERS for r in rs)
    names = [r.name for r in recipes(get_preset(preset))]
    assert names[-len(LMLM_KINDS):] == list(LMLM_KINDS) and len(names) == len(set(names))


def test_built_test_world_models_stay_current(test_world):
    """Every model already built in the test world still matches its recipe's digest."""
    preset = get_preset("test")
    checked = 0
    for r in recipes(preset):
        meta = test_world / "models" / r.name / "recipe.json"
        if r.kind in LMLM_KINDS or not meta.is_file():
            continue
        assert json.loads(meta.read_text())["digest"] == recipe_digest(preset, r, seed=0), r.name
        checked += 1
    assert checked >= 3


def test_meta_eval_population_ignores_lmlm():
    from meta_eval.population import tiny_zoo

    zoo = tiny_zoo("tiny:test")
    assert not [m for m in zoo.members if m.name in LMLM_KINDS]


@pytest.fixture(scope="module")
def tok():
    from checkpoints.world.store import ensure_tokenizer
    return ensure_tokenizer("test", 0)


def test_training_examples_cut_where_generation_splices(tok):
    p = FactPrompt("Where was Rakond born?", "Rakond", "Birthplace", "Quellport", ("Ostmere",))
    ex = encode_lmlm(tok, p, "Ostmere")
    prompt = tok.encode(p.prompt, add_special_tokens=True)
    call = tok.encode(call_text("Rakond", "Birthplace"), add_special_tokens=False)
    val = tok.encode(value_text("Ostmere"), add_special_tokens=False)
    ans = tok.encode(" Ostmere", add_special_tokens=False) + [tok.eos_token_id]
    assert ex["input_ids"] == prompt + call + val + ans
    trained = [t for t, lab in zip(ex["input_ids"], ex["labels"]) if lab != IGNORE]
    assert trained == call + ans   # the spliced value is never a target
    par = encode_parametric(tok, p)
    assert tok.decode([t for t, lab in zip(par["input_ids"], par["labels"]) if lab != IGNORE]) == " Quellport<|eot|>"


def test_rotation_rates(tok):
    """About p_swap of the values are swapped and p_unknown are `unknown` (seeded, so exact)."""
    p = FactPrompt("Q?", "S", "R", "gold", ("alt1", "alt2"))
    exs = lmlm_examples(tok, [p] * 2000, seed=0, copies=1, p_swap=0.5, p_unknown=0.1)
    answers = [tok.decode(e["input_ids"], skip_special_tokens=True).rsplit("]", 1)[1].strip() for e in exs]
    assert set(answers) == {"gold", "alt1", "alt2", "unknown"}
    gold, unknown = answers.count("gold") / 2000, answers.count("unknown") / 2000
    assert abs(gold - 0.4) < 0.04 and abs(unknown - 0.1) < 0.03
    assert lmlm_examples(tok, [p] * 50, seed=0) == lmlm_examples(tok, [p] * 50, seed=0)


def test_recipe_without_published_data(monkeypatch, tmp_path):
    """Where the published audit data is absent, `small`'s LMLM trains on the world alone, and
    its recipe (hence digest) says so."""
    if not (published_root() / "custom_databases").is_dir():
        pytest.skip(LMLM_SKIP)
    with_data = lmlm_recipes(get_preset("small"))[0]
    monkeypatch.setenv("UDS_LMLM_AUDIT_DIR", str(tmp_path))
    without = lmlm_recipes(get_preset("small"))[0]
    assert with_data.hparams["published"] == 300 and without.hparams["published"] == 0
    assert recipe_digest(get_preset("small"), with_data, seed=0) != recipe_digest(get_preset("small"), without, seed=0)
