"""The folder of one tiny world: its data, tokenizer and model folders, and what trainers receive.

Layout under `$UDS_HOME/world/<preset>-<seed>/`: `data/` (one JSON per split, `uds_data.json`
for `uds score`), `tokenizer/`, `models/<name>/` (save_pretrained, model + tokenizer +
`recipe.json`), `zoo.json`, `quality.json`. Data and tokenizer are made on first use and
written atomically (a temporary folder, then renamed), with the digest of each file
(`uds_core.manifest`): a damaged file is said in one line and the folder made again. Which models
exist and how they are trained is the catalogue's (`checkpoints.catalogue`); the builder
(`build`) drives it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Callable, Sequence

import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.legacy_fields import write_legacy_fields  # also where builders find it
from checkpoints.world.presets import Preset, get_preset
from checkpoints.world.schema import World
from checkpoints.world.tokenizer import train_tokenizer
from checkpoints.world.train import Loop, collate
from uds_core import manifest
from uds_core.atomic import file_lock, fsync_tree
from uds_core.errors import UdsInputError
from uds_core.paths import world_dir


def make_world(preset: Preset, seed: int, tofu_dir: str | None = None) -> World:
    if preset.data == "tofu":
        from checkpoints.world.tofu import read_tofu

        return read_tofu(tofu_dir, seed=seed, **preset.world)
    from checkpoints.world.synthetic import generate_synthetic_world

    return generate_synthetic_world(seed, **preset.world)


DATA_STAMP = "world_args.json"   # what the data was made from; older data folders have none


def data_stamp(preset: Preset, seed: int) -> dict:
    """The inputs of `make_world`: data kind, the preset's world arguments and the seed."""
    return json.loads(json.dumps({"data": preset.data, "world": preset.world, "seed": seed}, sort_keys=True,
                                 default=str))


def _check_stamp(folder: Path, preset: Preset, seed: int) -> None:
    """Data made from other world arguments (a preset edited after its world was built) would pair
    new recipes with old splits silently: refuse it instead of loading it."""
    path = folder / DATA_STAMP
    if not path.is_file():
        return
    stored, want = json.loads(path.read_text()), data_stamp(preset, seed)
    if stored != want:
        changed = sorted(k for k in set(stored["world"]) | set(want["world"])
                         if stored["world"].get(k) != want["world"].get(k)) or ["data/seed"]
        raise UdsInputError(f"world data at {folder} was made from other world arguments of preset "
                            f"{preset.name!r} (changed: {', '.join(changed)}); remove {folder.parent} "
                            "and build the world again")


def ensure_world_data(preset_name: str, seed: int, tofu_dir: str | None = None) -> Path:
    """The world's `data/` folder, generated (or read from TOFU files) on first use, with the
    arguments it was made from (`DATA_STAMP`), checked on every later use."""
    folder = world_dir(preset_name, seed) / "data"
    preset = get_preset(preset_name)
    if not folder_whole(folder, "uds_data.json", quiet=True):
        with build_lock(folder):   # two processes on a fresh home: one writes, the other waits and reads
            if not folder_whole(folder, "uds_data.json"):
                _write_data(folder, preset, seed, tofu_dir)
    _check_stamp(folder, preset, seed)
    return folder


def _write_data(folder: Path, preset: Preset, seed: int, tofu_dir: str | None) -> None:
    """The world's splits and their stamp, written whole or not at all (a temporary folder, renamed)."""
    tmp = folder.with_name("data.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    make_world(preset, seed, tofu_dir).save(tmp)
    (tmp / DATA_STAMP).write_text(json.dumps(data_stamp(preset, seed), indent=1, sort_keys=True) + "\n")
    manifest.record(tmp)
    fsync_tree(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)


def folder_whole(folder: Path, marker: str, quiet: bool = False) -> bool:
    """Whether a world folder (data, tokenizer) is made (`marker` there) and its files match
    their digests. `quiet` (before the lock) says and writes nothing; otherwise a damaged folder
    is said in one line (it is made again) and one made before digests gets them recorded."""
    return (folder / marker).is_file() and manifest.checked(
        folder, quiet, lambda problem: f"world {folder.parent.name} {folder.name}: {problem}; making it again")


def load_world(preset_name: str, seed: int = 0) -> World:
    return World.load(ensure_world_data(preset_name, seed))


def ensure_tokenizer(preset_name: str, seed: int) -> PreTrainedTokenizerBase:
    folder = world_dir(preset_name, seed) / "tokenizer"
    if not folder_whole(folder, "tokenizer_config.json", quiet=True):
        with build_lock(folder):   # one process trains it, another waits and loads it
            if not folder_whole(folder, "tokenizer_config.json"):
                _train_and_save_tokenizer(preset_name, seed, folder)
    return AutoTokenizer.from_pretrained(folder)


def _train_and_save_tokenizer(preset_name: str, seed: int, folder: Path) -> None:
    """A BPE tokenizer trained on the world's text, or the pretrained base model's own one."""
    preset = get_preset(preset_name)
    if preset.tokenizer == "llama3":
        from checkpoints.llama3 import build_tokenizer

        _save_tokenizer(build_tokenizer(), folder)
        return
    if preset.base_model:
        _save_tokenizer(AutoTokenizer.from_pretrained(pretrained_folder(preset)), folder)
        return
    world = load_world(preset_name, seed)
    texts = world.public_text + world.forget_bios + world.other_bios + world.idk
    for split in (world.forget, world.retain, world.holdout, world.retain_eval, world.real_authors, world.world_facts):
        for it in split:
            texts += [it["question"], it["answer"]] + [v for k in ("paraphrased_question", "paraphrased_answer")
                                                        if (v := it.get(k))] + list(it.get("perturbed_answers") or [])
    _save_tokenizer(train_tokenizer(texts, preset.vocab_size), folder)


def _save_tokenizer(tok: PreTrainedTokenizerBase, folder: Path) -> None:
    tmp = folder.with_name("tokenizer.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tok.save_pretrained(tmp)
    write_legacy_fields(tmp)
    manifest.record(tmp)
    fsync_tree(tmp)
    shutil.rmtree(folder, ignore_errors=True)
    tmp.replace(folder)


def pretrained_folder(preset: Preset) -> Path:
    """The local folder of a preset's pretrained base: a GGUF file or alias converted once into
    the cache (`checkpoints.gguf`), else the folder the preset names."""
    from checkpoints import gguf   # lazy: only pretrained presets pay for it

    spec = preset.base_model
    if gguf.is_gguf_spec(spec):
        return gguf.ensure_converted(spec)
    if not Path(spec).is_dir():
        raise UdsInputError(f"preset {preset.name!r}: base model {spec!r} is neither a GGUF file/alias nor a folder")
    return Path(spec)


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


def model_dir(preset_name: str, seed: int, name: str) -> Path:
    return world_dir(preset_name, seed) / "models" / name


def stored_digest(folder: Path) -> str | None:
    """The recipe digest a model folder was built by (None: no complete model there)."""
    meta_path = folder / "recipe.json"
    return json.loads(meta_path.read_text()).get("digest") if meta_path.is_file() else None


def build_lock(folder: Path):
    """Exclusive lock on one model folder while it is built (`uds_core.atomic.file_lock`)."""
    return file_lock(folder)


class BuildContext:
    """What a trainer receives: the preset, seed, world, tokenizer, the training-state file of the
    model being built, and `load(name)`, the model `name` of this world (built first if missing;
    given by the builder, so that trainers need not know it), the device they train on, and the
    training callbacks of the model being built (Hugging Face `TrainerCallback`s; the unlearning
    trainer drives them, `checkpoints.world.hooks`)."""

    def __init__(self, preset: Preset, seed: int, progress: bool, load: Callable[[str], PreTrainedModel],
                 checkpoint: Path | None = None, device: str = "cpu", callbacks: Sequence = (),
                 load_path: Callable[[str], Path] | None = None):
        self.preset, self.seed, self.progress, self.load = preset, seed, progress, load
        self.load_path = load_path   # name -> the built folder (a trainer that loads in its own dtype)
        self.device = device   # where models train; `load` already puts them there
        self.checkpoint = checkpoint   # training-state file of the model being built (resumable)
        self.callbacks = list(callbacks)
        self.root = world_dir(preset.name, seed)
        self.world = load_world(preset.name, seed)
        self.tok = ensure_tokenizer(preset.name, seed)

    def trainable(self, model):
        """`model` as the trainer trains it: in a LoRA world with a fresh adapter on top (the only
        trainable weights, `checkpoints.world.lora`); elsewhere the model itself."""
        if self.preset.lora is None:
            return model
        from checkpoints.world.lora import with_trainable_adapter

        return with_trainable_adapter(model, self.preset.lora)

    def collate(self, examples):
        return collate(examples, self.tok.pad_token_id)

    def loop(self, name: str) -> Loop:
        """The training loop's options for the model `name` of this world: its progress label and
        its resumable training-state file."""
        return Loop(desc=f"{self.preset.name}/{name}", progress=self.progress, checkpoint=self.checkpoint)
