"""Builders shared by the metrics tests: a tiny tokenizer, random and trained tiny Llamas, a small QA world.

Everything is built in-process (no files, no network) and is deterministic.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from typing import Sequence

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from checkpoints.world.encode import qa_examples
from checkpoints.world.train import Loop, TrainConfig, collate, train
from metrics.context import EvalContext, EvalSettings, ModelPool
from metrics.registry import ALL_KEYS, sweep_plan

BOS, EOS, PAD = "<|bos|>", "<|eot|>", "<|pad|>"
ROLES = ("<|system|>", "<|user|>", "<|assistant|>")
TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] | trim }}<|eot|>{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")

AUTHORS = ["Mara Quill", "Tobias Fenn", "Ilse Varga", "Omar Dace", "Lena Sorr", "Piet Alder",
           "Rosa Linde", "Karl Bremm", "Nadia Oster", "Felix Harth"]
CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Dakar", "Perth", "Lyon", "Riga", "Cusco", "Tunis"]
GENRES = ["mystery", "poetry", "fantasy", "history", "romance"]


def _sentences() -> list[str]:
    out = []
    for a, c, g in zip(AUTHORS, CITIES, GENRES * 2):
        out += [f"Where was {a} born?", f"{a} was born in {c}.", f"The author {a} writes {g} novels.",
                f"Sure, here is the answer: {a} lives in {c}.", f"What genre does {a} write? {a} writes {g}."]
    return out * 3


@lru_cache(maxsize=1)
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    """Byte-level BPE (about 300 tokens) with <|bos|>/<|eot|>/<|pad|>, role tokens and a chat template."""
    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=[PAD, BOS, EOS, *ROLES], min_frequency=2,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    core.train_from_iterator(_sentences(), trainer=trainer)
    core.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=True),
        processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, core.token_to_id(BOS))])])
    tok = PreTrainedTokenizerFast(tokenizer_object=core, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                  additional_special_tokens=list(ROLES))
    tok.chat_template = TEMPLATE
    return tok


def tiny_model(seed: int, hidden: int = 32, layers: int = 2) -> LlamaForCausalLM:
    """A random-initialised Llama over the tiny tokenizer's vocabulary, fp32, eval mode."""
    tok = tiny_tokenizer()
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, tie_word_embeddings=False, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(seed)
    return LlamaForCausalLM(cfg).eval()


def fit(model: LlamaForCausalLM, items: list[dict], steps: int, lr: float = 4e-2) -> LlamaForCausalLM:
    """`steps` full-batch steps of the tiny world's training loop on the items, in chat and raw
    Question/Answer form, without clipping (enough for a 30k-parameter model to memorise a few; the
    learning rate decays linearly to 0, so it starts at twice the mean step it stands for)."""
    tok = tiny_tokenizer()
    data = qa_examples(tok, items)
    cfg = TrainConfig(lr=lr, epochs=steps, batch_size=len(data), warmup_ratio=0.0, weight_decay=0.0,
                      max_grad_norm=float("inf"))
    train(model, data, cfg, lambda ex: collate(ex, tok.pad_token_id), loop=Loop(progress=False))
    return model


@lru_cache(maxsize=1)
def trained_zoo() -> dict:
    """base (random), full (base + forget + retain), retain (base + retain), unl (full + retain only).

    Deep copies are returned by `zoo()` so tests cannot leak state into each other."""
    splits = tiny_splits()
    base = tiny_model(0)
    full = fit(copy.deepcopy(base), splits["forget"] + splits["retain_eval"], steps=25)
    retain = fit(copy.deepcopy(base), splits["retain_eval"], steps=25)
    unl = fit(copy.deepcopy(full), splits["retain_eval"], steps=5)
    return {"tiny:t/unl": unl, "tiny:t/full": full, "tiny:t/retain": retain, "tiny:t/base": base}


def zoo() -> dict:
    return {k: copy.deepcopy(m) for k, m in trained_zoo().items()}


def qa_item(i: int, n_perturbed: int = 5) -> dict:
    a, c, g = AUTHORS[i % 10], CITIES[i % 10], GENRES[i % 5]
    wrong = [CITIES[(i + k + 1) % 10] for k in range(n_perturbed)]
    return {"idx": i, "question": f"Where was {a} born?", "answer": f"{a} was born in {c}.",
            "prefix": f"{a} was born in", "entity": c,
            "paraphrased_question": f"What is the birthplace of {a}?",
            "paraphrased_answer": f"The author {a} was born in {c}.",
            "perturbed_answers": [f"{a} was born in {w}." for w in wrong], "author": a, "genre": g}


def tiny_splits(n_forget: int = 5, n_holdout: int = 4, n_retain: int = 3, n_ra: int = 3, n_wf: int = 2) -> dict:
    """The five evaluation splits (real authors / world facts carry 3 perturbed answers)."""
    return {"forget": [qa_item(i) for i in range(n_forget)],
            "holdout": [{k: v for k, v in qa_item(i).items() if k in ("idx", "question", "answer")}
                        for i in range(n_forget, n_forget + n_holdout)],
            "retain_eval": [qa_item(i) for i in range(n_retain)],
            "real_authors": [qa_item(i, 3) for i in range(n_ra)],
            "world_facts": [qa_item(i + 3, 3) for i in range(n_wf)]}


def make_ctx(zoo: dict, roles: dict, keys: Sequence[str] = ALL_KEYS, batch_size: int = 3, max_new_tokens: int = 4,
             fast: bool = True) -> EvalContext:
    """An evaluation context over the fixture splits with `zoo`'s models in `roles`, planned for `keys`."""
    splits = tiny_splits()
    return EvalContext(splits=splits, uds_records=splits["forget"], tokenizer=tiny_tokenizer(),
                       models=ModelPool(roles, zoo.__getitem__),
                       settings=EvalSettings(batch_size=batch_size, max_new_tokens=max_new_tokens, progress=False,
                                             fast=fast),
                       plan=sweep_plan(list(keys)))
