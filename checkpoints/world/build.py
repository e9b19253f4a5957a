"""Building a tiny world: its models, resumable and on demand, from the catalogue's recipes.

A model folder (`store.model_dir`) appears only when complete (saved to a temporary folder, then
renamed), so an interrupted build resumes at the first missing model; it records the digest of
the recipe that built it (`recipe_digest`: the recipe, its parents, the world settings and the
trainer's code), and a folder with another digest is stale and rebuilt. It also records
the sha256 of every file (`uds_core.manifest`, `digests.json`), checked before the folder is used: a
damaged file, of the right size or not, is said in one line and the model rebuilt.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

from transformers import LlamaForCausalLM, PreTrainedModel

from checkpoints.catalogue import TRAINERS, find_recipe, recipes
from checkpoints.world.presets import Preset, get_preset
from checkpoints.world.recipe_digest import RECIPE_SCHEME, recipe_content, recipe_digest
from checkpoints.world.recipes import Recipe, write_manifest
from checkpoints.world.lora import save_trained_adapter
from checkpoints.world.names import tiny_spec
from checkpoints.world.store import (BuildContext, build_lock, ensure_tokenizer, ensure_world_data, model_dir,
                                     pretrained_folder, stored_digest, write_legacy_fields)
from uds_core.loading import DTYPES
from uds_core import atomic, manifest
from uds_core.progress import is_quiet, progress as track
from uds_core.errors import UdsInputError
from uds_core.paths import world_dir

# The training callbacks of one recipe (none for most): what `uds world build --curve-every` attaches
CallbacksFor = Callable[[Recipe], Sequence]


def ensure_model(preset_name: str, seed: int, name: str, progress: bool = True, device: str = "cpu",
                 callbacks_for: CallbacksFor | None = None) -> Path:
    """Folder of a tiny model, trained (with its parents) on `device` if not built yet. The device
    is not part of the recipe: a GPU build makes the same zoo up to floating-point order.
    `callbacks_for(recipe)`: training callbacks of this model when it is trained (not of its
    parents); they observe the training and change none of its results."""
    preset = get_preset(preset_name)
    folder = model_dir(preset_name, seed, name)
    r = find_recipe(preset, name)
    if preset.lora is not None and r.method == "pretrained":
        return pretrained_folder(preset)   # a LoRA world's adapters go on the base itself: no copy of it
    digest = recipe_digest(preset, r, seed=seed)
    if _is_current(folder, digest, quiet=True):
        return folder
    with build_lock(folder):   # a second process building the same zoo waits, then reuses it
        if _is_current(folder, digest):
            return folder
        return _train_and_save(preset, seed, r, digest, folder, progress, device, callbacks_for)


def training_state(folder: Path, name: str, digest: str) -> Path:
    """The file a stopped build of model `name` by recipe `digest` resumes from, beside its folder."""
    return folder.with_name(f".{name}.resume-{digest}.pt")


def _train_and_save(preset: Preset, seed: int, r: Recipe, digest: str, folder: Path, progress: bool,
                    device: str = "cpu", callbacks_for: CallbacksFor | None = None) -> Path:
    if r.parent:   # built first, so that train_seconds is this model's own training time
        ensure_model(preset.name, seed, r.parent, progress, device)
    resume = training_state(folder, r.name, digest)
    for stale in folder.parent.glob(f".{r.name}.resume-*.pt"):   # left by another recipe
        if stale != resume:
            stale.unlink()

    def load(name: str) -> PreTrainedModel:
        if preset.lora is not None:   # the base with the chain of adapters of `name`, frozen
            return lora_world_model(preset, seed, name, DTYPES[preset.train_dtype], progress, device)
        return LlamaForCausalLM.from_pretrained(ensure_model(preset.name, seed, name, progress, device)).to(device)

    callbacks = callbacks_for(r) if callbacks_for is not None else ()
    ctx = BuildContext(preset, seed, progress, load, checkpoint=resume, device=device, callbacks=callbacks,
                       load_path=lambda name: ensure_model(preset.name, seed, name, progress, device))
    t0 = time.time()
    model = TRAINERS[r.method].fn(ctx, r) if r.method in TRAINERS else _unknown_method(r)
    tmp = folder.with_name(f".{r.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if hasattr(model, "peft_config"):   # a LoRA world's adapter (its base, trained here or not, is a full model)
        save_trained_adapter(model, tmp, parent_spec(preset, seed, r))
    else:
        model.save_pretrained(tmp)
    ctx.tok.save_pretrained(tmp)
    write_legacy_fields(tmp)   # also loadable by transformers 4.45 (Open-Unlearning's pin)
    meta = r.to_dict() | {"seed": seed, "preset": preset.name, "digest": digest, "digest_scheme": RECIPE_SCHEME,
                          "digest_covers": recipe_content(preset, r, seed=seed),
                          "train_seconds": round(time.time() - t0, 1), "device": device}
    (tmp / "recipe.json").write_text(json.dumps(meta, indent=1))
    manifest.record(tmp)     # every file's digest, recipe.json's too
    atomic.fsync_tree(tmp)   # on disk before the rename makes it visible
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)
    resume.unlink(missing_ok=True)
    return folder


def parent_spec(preset: Preset, seed: int, r: Recipe) -> str:
    """The model spec a LoRA world's adapter goes on: a pretrained base's own spec, or its parent
    model's in the world."""
    return preset.base_model if r.parent == "base" and preset.base_model else tiny_spec(preset.name, seed, r.parent)


def lora_world_model(preset: Preset, seed: int, name: str, dtype, progress: bool = True, device: str = "cpu"):
    """Model `name` of a LoRA world for training on it: the base in `dtype` (`name` == "base"), else
    a PeftModel of the base with `name`'s adapter chain, frozen (`checkpoints.world.lora.stack`)."""
    from checkpoints.world.lora import load_base, stack

    base = load_base(ensure_model(preset.name, seed, "base", progress, device), dtype).to(device)
    if name == "base":
        return base
    chain = [ensure_model(preset.name, seed, n, progress, device) for n in lineage(preset, name)]
    return stack(base, chain)


def lineage(preset: Preset, name: str) -> list[str]:
    """The models from the base (excluded) up to `name`: ["full", "npo_..."] for an unlearned one."""
    r = find_recipe(preset, name)
    return ([] if r.parent in (None, "base") else lineage(preset, r.parent)) + [name]


def is_built(preset: Preset, seed: int, r: Recipe) -> bool:
    """Whether the model of recipe `r` is built, by this recipe (not a stale one). Its files are
    checked when it is used (`ensure_model`), not here: listings and counts stay cheap. A LoRA
    world's base is the pretrained model itself, never built."""
    if preset.lora is not None and r.method == "pretrained":
        return True
    return _stored_or_none(model_dir(preset.name, seed, r.name)) == recipe_digest(preset, r, seed=seed)


def _is_current(folder: Path, digest: str, quiet: bool = False) -> bool:
    """Built by this recipe and whole: every file as its manifest records it. A damaged folder
    (weights cut short by a full disk, bytes changed by a bad copy or the disk) is reported in
    one line and rebuilt, never loaded. `quiet` (the check before taking the build lock) says
    and writes nothing: a folder built before manifests is current only after the locked check
    has recorded its manifest."""
    if not (folder / "recipe.json").is_file():
        return False
    stored = _stored_or_none(folder)
    if quiet:
        return stored == digest and manifest.has_manifest(folder) and manifest.verify(folder) is None
    if stored != digest:   # damage first: a changed byte in recipe.json is damage, not another recipe
        damage = manifest.verify(folder) if manifest.has_manifest(folder) else None
        reason = damage or (f"built by another recipe ({stored})" if stored
                            else f"{folder / 'recipe.json'}: unreadable or without a recipe digest")
        print(f"tiny model {folder.name}: {reason}; rebuilding", file=sys.stderr, flush=True)
        return False
    problem = manifest.verify_or_record(folder)
    if problem:
        print(f"tiny model {folder.name}: {problem}; rebuilding", file=sys.stderr, flush=True)
    return problem is None


def _stored_or_none(folder: Path) -> str | None:
    """The recipe digest in the folder's recipe.json; None when it does not parse or has none."""
    try:
        stored = stored_digest(folder)
    except (OSError, ValueError, AttributeError):
        return None
    return stored if isinstance(stored, str) else None


def _unknown_method(r: Recipe) -> PreTrainedModel:
    raise UdsInputError(f"tiny model {r.name!r} needs method {r.method!r}, which this build does not provide")


def build_world(preset_name: str, seed: int = 0, progress: bool = True, names: list[str] | None = None,
                device: str = "cpu", callbacks_for: CallbacksFor | None = None) -> Path:
    """Build every model of the preset's zoo that is missing; write `zoo.json`. Returns the folder.
    `callbacks_for`: training callbacks per recipe (see `ensure_model`); a model already built is
    not trained again, so it gets none (said in one line)."""
    preset = get_preset(preset_name)
    root = world_dir(preset_name, seed)
    ensure_world_data(preset_name, seed)
    ensure_tokenizer(preset_name, seed)
    zoo = recipes(preset)
    wanted = names or [r.name for r in zoo]
    built = {}
    missing = sum(not is_built(preset, seed, find_recipe(preset, name)) for name in wanted)
    with track(total=missing, desc=f"world {preset_name}-{seed}", unit="model", enabled=progress) as bar:
        for i, name in enumerate(wanted, 1):
            fresh = not is_built(preset, seed, find_recipe(preset, name))
            if not fresh and callbacks_for is not None and callbacks_for(find_recipe(preset, name)):
                print(f"{preset_name}/{name}: already built, not trained again, so no training callback runs "
                      "(remove its folder or build in another UDS_HOME)", file=sys.stderr, flush=True)
            t0 = time.time()
            built[name] = ensure_model(preset_name, seed, name, progress, device, callbacks_for)
            if fresh:   # one line per model trained, also where the progress bar is off (no terminal)
                if progress and not is_quiet():
                    print(f"[{i}/{len(wanted)}] {preset_name}/{name}: ready after {time.time() - t0:.0f} s",
                          file=sys.stderr, flush=True)
                bar.update(1)
    for r in zoo:
        if is_built(preset, seed, r):
            built[r.name] = model_dir(preset_name, seed, r.name)
    write_manifest(root, preset, seed, zoo, built)
    return root
