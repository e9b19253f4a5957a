"""Builders shared by the UDS engine tests: a tiny BPE tokenizer, random tiny models from
configs (no downloads), annotated records with the edge cases spec §1 lists."""

from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

import pytest
import torch
import transformers as T
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

# Tiny models on a shared 2-core machine: intra-op threads cost far more than they save
# (one thread is ~100x faster here under load).
torch.set_num_threads(1)

BOS, EOS, PAD = "<s>", "</s>", "<pad>"

CORPUS = [
    "Question: Where was the author Jaime Vasquez born?\nAnswer: Jaime Vasquez was born in Santiago, Chile.",
    "Question: What genre does Basil Mahfouz write?\nAnswer: Basil Mahfouz writes \"Historical Fiction\" novels.",
    "Question: Has the author won an award?\nAnswer: Yes, the author won the Golden Quill Award.",
    "Question: Who were the parents of Evelyn Desmet?\nAnswer: Her father was a doctor and her mother a baker.",
    "The quick brown fox jumps over the lazy dog. Paris, London, Tokyo and Lima are cities.",
    "Novels, poems, awards and prizes: the Nebula Award, the Booker Prize and the Pulitzer Prize.",
] * 4

RECORDS = [
    {"idx": 0, "question": "Where was the author Jaime Vasquez born?",
     "answer": "Jaime Vasquez was born in Santiago, Chile.", "prefix": "Jaime Vasquez was born in",
     "entity": "Santiago, Chile"},
    {"idx": 1, "question": "What genre does Basil Mahfouz write?",  # prefix ends in a quote
     "answer": "Basil Mahfouz writes \"Historical Fiction\" novels.", "prefix": "Basil Mahfouz writes \"",
     "entity": "Historical Fiction"},
    {"idx": 2, "question": "Has the author won an award?",  # empty prefix, Yes/No item
     "answer": "Yes, the author won the Golden Quill Award.", "prefix": "", "entity": "Yes"},
    {"idx": 3, "question": "Who were the parents of Evelyn Desmet?",
     "answer": "Her father was a doctor and her mother a baker.", "prefix": "Her father was",
     "entity": "a doctor"},
    {"idx": 4, "question": "Which prize did the author receive?",
     "answer": "The author received the Nebula Award for poems.", "prefix": "The author received",
     "entity": "the Nebula Award"},
    {"idx": 5, "question": "Where do the lazy dogs live?",  # entity only in the prefix -> skipped (spec §2.2)
     "answer": "The dogs live in Lima, Peru.", "prefix": "The dogs live in", "entity": "dogs"},
]


@lru_cache(maxsize=None)
def _core_tokenizer() -> Tokenizer:
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=[PAD, BOS, EOS], min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(CORPUS, trainer=trainer)
    core.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A $B",
                                      special_tokens=[(BOS, core.token_to_id(BOS))]),
    ])
    return core


def make_tokenizer(padding_side: str = "right") -> T.PreTrainedTokenizerFast:
    """Byte-level BPE (~500 tokens) that prepends BOS when add_special_tokens=True."""
    tok = T.PreTrainedTokenizerFast(tokenizer_object=copy.deepcopy(_core_tokenizer()),
                                    bos_token=BOS, eos_token=EOS, pad_token=PAD)
    tok.padding_side = padding_side
    return tok


def _llama_like(cls, vocab: int, layers: int, hidden: int, **extra):
    return cls(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2,
               num_key_value_heads=2, intermediate_size=2 * hidden, **extra)


def tiny_config(family: str, vocab: int = 512, layers: int = 2, hidden: int = 32):
    """A config of `family` small enough to run in milliseconds."""
    if family == "gpt2":
        return T.GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=2, n_positions=256)
    if family == "gpt_neox":
        return T.GPTNeoXConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                               num_attention_heads=2, intermediate_size=2 * hidden)
    if family == "falcon":  # its blocks still return tuples (transformers 4.x style)
        return T.FalconConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=2)
    if family == "bloom":
        return T.BloomConfig(vocab_size=vocab, hidden_size=hidden, n_layer=layers, n_head=2)
    classes = {"llama": T.LlamaConfig, "qwen2": T.Qwen2Config, "mistral": T.MistralConfig,
               "gemma": T.GemmaConfig, "gemma2": T.Gemma2Config, "phi3": T.Phi3Config,
               "qwen3": T.Qwen3Config, "olmo": T.OlmoConfig}
    extra = {"head_dim": hidden // 2} if family in ("gemma", "gemma2", "qwen3") else {}
    if family == "phi3":
        extra["pad_token_id"] = 0  # its default pad id lies outside a tiny vocabulary
    return _llama_like(classes[family], vocab, layers, hidden, **extra)


def tiny_model(family: str = "llama", seed: int = 0, **kw) -> T.PreTrainedModel:
    """Random-initialised CausalLM of `family` in eval mode, float32, eager attention."""
    torch.manual_seed(seed)
    config = tiny_config(family, **kw)
    model = T.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    return model.eval()


def perturbed(model: T.PreTrainedModel, scale: float = 0.5, seed: int = 1) -> T.PreTrainedModel:
    """A copy whose weights moved by relative Gaussian noise (a stand-in for the retain model)."""
    gen = torch.Generator().manual_seed(seed)
    out = copy.deepcopy(model)
    with torch.no_grad():
        for p in out.parameters():
            p.add_(torch.randn(p.shape, generator=gen) * scale * (p.std() if p.numel() > 1 else 1.0))
    return out


def interpolate(a: T.PreTrainedModel, b: T.PreTrainedModel, alpha: float) -> T.PreTrainedModel:
    """(1 - alpha) * a + alpha * b, parameter-wise."""
    out = copy.deepcopy(a)
    with torch.no_grad():
        for p, pa, pb in zip(out.parameters(), a.parameters(), b.parameters()):
            p.copy_((1 - alpha) * pa + alpha * pb)
    return out


def memorise(model: T.PreTrainedModel, tokenizer, records=RECORDS, steps: int = 30,
             lr: float = 1e-2) -> T.PreTrainedModel:
    """A copy fine-tuned on the records' prompt + answer text, so it "knows" their entities
    (the base stays a stand-in for the retain model, which never saw them)."""
    out = copy.deepcopy(model).train()
    texts = [f"Question: {r['question']}\nAnswer: {r['answer']}" for r in records]
    batch = tokenizer(texts, return_tensors="pt", padding=True)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    opt = torch.optim.Adam(out.parameters(), lr=lr)
    torch.manual_seed(0)
    for _ in range(steps):
        loss = out(**batch, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return out.eval()


def world_examples_file(world: Path, n: int, path: Path) -> Path:
    """`path` holding the first `n` annotated examples of a built tiny world's UDS data."""
    path.write_text(json.dumps(json.loads((world / "data" / "uds_data.json").read_text())[:n]))
    return path


def saved_score_models(root: Path, extra: dict[str, T.PreTrainedModel] | None = None) -> dict[str, str]:
    """full (a tiny Llama that memorised RECORDS), retain (its base) and half (their midpoint),
    plus `extra`, saved under `root` with the tokenizer, and RECORDS as `data.json`: name -> path."""
    tok = make_tokenizer()
    base = tiny_model("llama", layers=3, hidden=48)
    full = memorise(base, tok, steps=40, lr=5e-3)
    paths = {}
    for name, model in {"full": full, "retain": base, "half": interpolate(full, base, 0.5), **(extra or {})}.items():
        model.save_pretrained(root / name)
        tok.save_pretrained(root / name)
        paths[name] = str(root / name)
    (root / "data.json").write_text(json.dumps(RECORDS))
    paths["data"] = str(root / "data.json")
    return paths


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """full / retain / half-way unlearned tiny models saved as folders, and a data file."""
    return saved_score_models(tmp_path_factory.mktemp("fault_models"))


def score_args(folders: dict[str, str], out: Path, *extra: str) -> list[str]:
    """`uds score` arguments on the saved score models (`folders`), batch 2 on the CPU, into `out`."""
    return ["score", "--unlearned", folders["half"], "--full", folders["full"], "--retain", folders["retain"],
            "--data", folders["data"], "--device", "cpu", "--batch-size", "2", "--out", str(out), *extra]
