"""Building a tiny world: data, tokenizer and models, resumable and on demand.

Layout under `$UDS_HOME/world/<preset>-<seed>/`: `data/` (one JSON per split, `uds_data.json`
for `uds score`), `tokenizer/`, `models/<name>/` (save_pretrained, model + tokenizer +
`recipe.json`), `zoo.json`, `quality.json`. A model folder appears only when complete (saved
to a temporary folder, then renamed), so an interrupted build resumes at the first missing model.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.world.encode import base_corpus, qa_examples, utility_rehearsal
from checkpoints.world.presets import Preset, get_preset
from checkpoints.world.schema import World
from checkpoints.world.tokenizer import train_tokenizer
from checkpoints.world.train import collate, train
from checkpoints.world.recipes import Recipe, recipes, write_manifest
from uds.errors import UdsInputError
from uds.paths import world_dir


def make_world(preset: Preset, seed: int, tofu_dir: str | None = None) -> World:
    if preset.data == "tofu":
        from checkpoints.world.tofu import read_tofu

        return read_tofu(tofu_dir, seed=seed, **preset.world)
    from checkpoints.world.synthetic import generate_synthetic_world

    return generate_synthetic_world(seed, **preset.world)


def ensure_world_data(preset_name: str, seed: int, tofu_dir: str | None = None) -> Path:
    """The world's `data/` folder, generated (or read from TOFU files) on first use."""
    folder = world_dir(preset_name, seed) / "data"
    if not (folder / "uds_data.json").is_file():
        world = make_world(get_preset(preset_name), seed, tofu_dir)
        tmp = folder.with_name("data.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        world.save(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.replace(folder)
    return folder


def load_world(preset_name: str, seed: int = 0) -> World:
    return World.load(ensure_world_data(preset_name, seed))


def ensure_tokenizer(preset_name: str, seed: int) -> PreTrainedTokenizerBase:
    folder = world_dir(preset_name, seed) / "tokenizer"
    if not (folder / "tokenizer_config.json").is_file():
        world = load_world(preset_name, seed)
        texts = world.public_text + world.forget_bios + world.other_bios + world.idk
        for split in (world.forget, world.retain, world.holdout, world.retain_eval, world.real_authors, world.world_facts):
            for it in split:
                texts += [it["question"], it["answer"]] + [v for k in ("paraphrased_question", "paraphrased_answer")
                                                            if (v := it.get(k))] + list(it.get("perturbed_answers") or [])
        tok = train_tokenizer(texts, get_preset(preset_name).vocab_size)
        tmp = folder.with_name("tokenizer.tmp")
        tok.save_pretrained(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        tmp.replace(folder)
    return AutoTokenizer.from_pretrained(folder)


def init_model(preset: Preset, tok: PreTrainedTokenizerBase, seed: int) -> PreTrainedModel:
    """A randomly initialised Llama of the preset's shape (tied embeddings, as Llama-3.2-1B)."""
    s = preset.shape
    cfg = LlamaConfig(
        vocab_size=len(tok), hidden_size=s.hidden, num_hidden_layers=s.layers, num_attention_heads=s.heads,
        num_key_value_heads=s.kv_heads, intermediate_size=s.intermediate, max_position_embeddings=s.max_positions,
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id, rms_norm_eps=1e-5)
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg)


# --- trainers: recipe.method -> function(context, recipe) -> trained model -----------------------

class BuildContext:
    """What trainers need: the preset, seed, world, tokenizer and a way to load built models."""

    def __init__(self, preset: Preset, seed: int, progress: bool, checkpoint: Path | None = None):
        self.preset, self.seed, self.progress = preset, seed, progress
        self.checkpoint = checkpoint   # training-state file of the model being built (resumable)
        self.root = world_dir(preset.name, seed)
        self.world = load_world(preset.name, seed)
        self.tok = ensure_tokenizer(preset.name, seed)

    def load(self, name: str) -> PreTrainedModel:
        return LlamaForCausalLM.from_pretrained(ensure_model(self.preset.name, self.seed, name, self.progress))

    def collate(self, examples):
        return collate(examples, self.tok.pad_token_id)


def _pretrain(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = init_model(ctx.preset, ctx.tok, ctx.seed)
    data = base_corpus(ctx.tok, ctx.world)
    train(model, data, r.train, ctx.collate, desc=f"{ctx.preset.name}/{r.name}", progress=ctx.progress,
          checkpoint=ctx.checkpoint)
    return model


def _finetune(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    model = ctx.load(r.parent)
    items = ctx.world.retain + (ctx.world.forget if r.kind == "full" else [])
    data = qa_examples(ctx.tok, items) + utility_rehearsal(ctx.tok, ctx.world)
    train(model, data, r.train, ctx.collate,
          desc=f"{ctx.preset.name}/{r.name}", progress=ctx.progress, checkpoint=ctx.checkpoint)
    return model


TRAINERS: dict[str, Callable[[BuildContext, Recipe], PreTrainedModel]] = {
    "pretrain": _pretrain,
    "finetune": _finetune,
}


def _recipe(preset: Preset, name: str) -> Recipe:
    for r in recipes(preset):
        if r.name == name:
            return r
    known = ", ".join(r.name for r in recipes(preset))
    raise UdsInputError(f"no tiny model {name!r} in preset {preset.name!r} (known: {known})")


def model_dir(preset_name: str, seed: int, name: str) -> Path:
    return world_dir(preset_name, seed) / "models" / name


def ensure_model(preset_name: str, seed: int, name: str, progress: bool = True) -> Path:
    """Folder of a tiny model, trained (with its parents) if not built yet."""
    preset = get_preset(preset_name)
    folder = model_dir(preset_name, seed, name)
    r = _recipe(preset, name)
    digest = recipe_digest(preset, r)
    if _is_current(folder, digest, quiet=True):
        return folder
    with _build_lock(folder):   # a second process building the same zoo waits, then reuses it
        if _is_current(folder, digest):
            return folder
        return _train_and_save(preset, seed, r, digest, folder, progress)


def _train_and_save(preset: Preset, seed: int, r: Recipe, digest: str, folder: Path, progress: bool) -> Path:
    if r.parent:   # built first, so that train_seconds is this model's own training time
        ensure_model(preset.name, seed, r.parent, progress)
    resume = folder.with_name(f".{r.name}.resume-{digest}.pt")
    for stale in folder.parent.glob(f".{r.name}.resume-*.pt"):   # left by another recipe
        if stale != resume:
            stale.unlink()
    ctx = BuildContext(preset, seed, progress, checkpoint=resume)
    t0 = time.time()
    model = TRAINERS[r.method](ctx, r) if r.method in TRAINERS else _unknown_method(r)
    tmp = folder.with_name(f".{r.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    ctx.tok.save_pretrained(tmp)
    meta = r.to_dict() | {"seed": seed, "preset": preset.name, "digest": digest,
                          "train_seconds": round(time.time() - t0, 1)}
    (tmp / "recipe.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)
    resume.unlink(missing_ok=True)
    return folder


# Per trainer; bump when what it does changes without the recipe's fields changing (its data, a
# loss): models it built before, and their descendants, are retrained on next use, not reused.
TRAINER_VERSIONS: dict[str, int] = {"finetune": 2, "P": 2, "N": 2}   # 2: utility rehearsal (encode.py)


def recipe_digest(preset: Preset, r: Recipe) -> str:
    """Hash of the recipe, its ancestors' recipes and its trainer's version: a model folder whose
    stored digest differs was built by another recipe (or from another parent) and is stale."""
    parent = recipe_digest(preset, _recipe(preset, r.parent)) if r.parent else ""
    blob = json.dumps({"recipe": r.to_dict(), "parent": parent, "preset": preset.name,
                       "version": TRAINER_VERSIONS.get(r.method or "", 1)},
                      sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _stored_digest(folder: Path) -> str | None:
    meta_path = folder / "recipe.json"
    return json.loads(meta_path.read_text()).get("digest") if meta_path.is_file() else None


def is_built(preset: Preset, seed: int, r: Recipe) -> bool:
    """Whether the model of recipe `r` is built, by this recipe (not a stale one)."""
    return _stored_digest(model_dir(preset.name, seed, r.name)) == recipe_digest(preset, r)


@contextmanager
def _build_lock(folder: Path) -> Iterator[None]:
    """Exclusive lock on one model folder while it is built (POSIX; elsewhere no lock)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(folder.with_name(f".{folder.name}.lock"), "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _is_current(folder: Path, digest: str, quiet: bool = False) -> bool:
    if not (folder / "recipe.json").is_file():
        return False
    stored = _stored_digest(folder)
    if stored != digest and not quiet:
        print(f"tiny model {folder.name}: built by another recipe ({stored or 'unversioned'}), rebuilding",
              file=sys.stderr)
    return stored == digest


def _unknown_method(r: Recipe) -> PreTrainedModel:
    raise UdsInputError(f"tiny model {r.name!r} needs method {r.method!r}, which this build does not provide")


def build_world(preset_name: str, seed: int = 0, progress: bool = True, names: list[str] | None = None) -> Path:
    """Build every model of the preset's zoo that is missing; write `zoo.json`. Returns the folder."""
    preset = get_preset(preset_name)
    root = world_dir(preset_name, seed)
    ensure_world_data(preset_name, seed)
    ensure_tokenizer(preset_name, seed)
    wanted = names or [r.name for r in recipes(preset)]
    built = {}
    for i, name in enumerate(wanted, 1):
        fresh = not is_built(preset, seed, _recipe(preset, name))
        t0 = time.time()
        built[name] = ensure_model(preset_name, seed, name, progress)
        if fresh:   # one line per model trained, also where the progress bar is off (no terminal)
            print(f"[{i}/{len(wanted)}] {preset_name}/{name}: ready after {time.time() - t0:.0f} s",
                  file=sys.stderr, flush=True)
    for r in recipes(preset):
        if is_built(preset, seed, r):
            built[r.name] = model_dir(preset_name, seed, r.name)
    write_manifest(root, preset, seed, built)
    return root


# The unlearning methods and the P/N pools register their trainers on import (kept last: they
# import this module's names).
import checkpoints.methods.trainer  # noqa: E402,F401
