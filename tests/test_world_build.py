"""The tiny world as built: manifest, tokenizer, determinism, resume, no leak into pretraining."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from transformers import AutoTokenizer, LlamaForCausalLM

from checkpoints import catalogue
from checkpoints.world import build, store
from checkpoints.world.encode import base_corpus
from checkpoints.world.recipe_digest import recipe_digest
from checkpoints.world.store import load_world
from tests.campaign_fixtures import fresh_home
from uds_core.fingerprint import model_fingerprint


def test_zoo_manifest_lists_base_full_retain(test_world):
    zoo = json.loads((test_world / "zoo.json").read_text())
    by_name = {m["name"]: m for m in zoo["models"]}
    for name, parent in (("base", None), ("full", "base"), ("retain", "base")):
        m = by_name[name]
        assert m["parent"] == parent and m["path"] and m["seed"] == 0
        assert (test_world / "models" / name / "config.json").is_file()
    assert "forget" in by_name["full"]["data"] and "forget" not in by_name["retain"]["data"]


def test_model_folders_are_self_contained_llamas(test_world):
    folder = test_world / "models" / "full"
    model = LlamaForCausalLM.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    assert model.config.tie_word_embeddings and model.config.num_hidden_layers == 4
    ids = tok("Question: x").input_ids
    assert ids[0] == tok.bos_token_id  # BOS prepended, as Llama tokenizers do
    chat = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert chat == "<|bos|><|user|>Hi<|eot|><|assistant|>"


def test_base_pretraining_states_no_private_fact(test_world):
    world = load_world("test", 0)
    tok = AutoTokenizer.from_pretrained(test_world / "tokenizer")
    text = tok.decode([t for block in base_corpus(tok, world) for t in block["input_ids"]])
    private = {it["author"] for split in (world.forget, world.retain, world.holdout) for it in split}
    assert private and not [name for name in private if name in text]
    assert not [it["answer"] for it in world.forget + world.retain if it["answer"] in text]
    # and the utility facts the base should know are there
    assert all(it["question"] in text for it in world.real_authors)


def private_world(test_world: Path, tmp_path: Path, monkeypatch) -> Path:
    """A copy of the session's world (data, tokenizer, base, full, retain) as `$UDS_HOME`'s: tests that
    damage or retrain a model do it there, while tests on the other worker read the session's."""
    home = fresh_home(test_world, tmp_path)
    monkeypatch.setenv("UDS_HOME", str(home))
    return home / "world" / test_world.name


def test_interrupted_build_resumes_and_retraining_is_deterministic(test_world, tmp_path, monkeypatch):
    """A save of retain killed midway leaves a torn temporary folder; the next build removes it and
    trains retain again to the same weights."""
    folder = private_world(test_world, tmp_path, monkeypatch) / "models" / "retain"
    before = model_fingerprint(LlamaForCausalLM.from_pretrained(test_world / "models" / "retain"))
    stale = folder.with_name(".retain.tmp")
    shutil.copytree(folder, stale)          # what a kill during save leaves behind
    (stale / "model.safetensors").write_bytes(b"torn")
    shutil.rmtree(folder)
    calls = []
    for method, t in list(catalogue.TRAINERS.items()):
        monkeypatch.setitem(catalogue.TRAINERS, method,
                            catalogue.Trainer(lambda ctx, r, fn=t.fn: calls.append(r.name) or fn(ctx, r),
                                              t.legacy_version,
                                              t.code_module))
    build.build_world("test", 0, progress=False, names=["base", "full", "retain"])
    assert calls == ["retain"]               # base and full were kept
    assert model_fingerprint(LlamaForCausalLM.from_pretrained(folder)) == before
    assert not stale.exists()


def test_a_model_built_by_another_recipe_is_rebuilt_not_reused(test_world, tmp_path, monkeypatch):
    """A changed recipe (here: full's learning rate) makes full and every model made from it
    stale, while base and retain stay current; a stale folder is retrained on next use."""
    from dataclasses import replace

    from checkpoints.world.presets import get_preset

    preset = get_preset("test")
    changed = replace(preset, finetune=replace(preset.finetune, lr=preset.finetune.lr * 2))
    def digest(p, name):
        return recipe_digest(p, catalogue.find_recipe(p, name), seed=0)

    assert digest(changed, "base") == digest(preset, "base")
    assert digest(changed, "full") != digest(preset, "full")
    unlearned = next(r for r in catalogue.recipes(preset) if r.parent == "full")
    assert digest(changed, unlearned.name) != digest(preset, unlearned.name)   # reaches the child

    meta_path = private_world(test_world, tmp_path, monkeypatch) / "models" / "retain" / "recipe.json"
    original = meta_path.read_bytes()   # restored byte for byte: the folder's digests cover it
    meta = json.loads(original)
    assert meta["digest"] == digest(preset, "retain")
    calls = []
    monkeypatch.setitem(catalogue.TRAINERS, "finetune", catalogue.Trainer(
        lambda ctx, r: calls.append(r.name) or (_ for _ in ()).throw(RuntimeError("retrain requested")), 2,
        catalogue.TRAINERS["finetune"].code_module))
    build.ensure_model("test", 0, "retain", progress=False)   # current: no training
    assert calls == []
    meta_path.write_text(json.dumps(meta | {"digest": "0" * 16}))
    try:
        build.ensure_model("test", 0, "retain", progress=False)
    except RuntimeError:
        pass
    finally:
        meta_path.write_bytes(original)
    assert calls == ["retain"]


def test_build_lock_serialises_two_builders_of_one_model(tmp_path):
    """Two builders of the same model (two processes sharing a zoo) never train it at once."""
    import threading
    import time

    events = []

    def builder(tag):
        with store.build_lock(tmp_path / "models" / "full"):
            events.append(("in", tag))
            time.sleep(0.2)
            events.append(("out", tag))

    threads = [threading.Thread(target=builder, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [e[0] for e in events] == ["in", "out", "in", "out"]
    assert events[0][1] == events[1][1]
