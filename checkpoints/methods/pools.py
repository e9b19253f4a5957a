"""Knowledge-present (P) and knowledge-absent (N) pools: spec §5.1's six training sets, scaled
down, each fine-tuned from the same base as full and retain.

P: `full` (retain + forget QA), `bio` (retain QA + the forget facts as biographies), `para`
(retain + paraphrased forget QA). N: `retain` (retain only), `pert` (retain + the forget
questions with a perturbed, wrong answer), `bio` (retain + biographies of unrelated entities).
QA goes in the preset's encodings (chat and raw; chat only on a pretrained base), as for
full/retain. A biography is trained as text (loss on every token), cut into chunks of whole
sentences about as long as a QA pair (so that batches mixing QA and biographies carry little
padding), and repeated once per QA encoding, so that, as in the QA variants, every fact is seen
as often per epoch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.world.encode import BOTH_FORMS, encode_text, finetune_examples, qa_examples
from checkpoints.world.recipes import Recipe
from checkpoints.world.schema import World
from checkpoints.world.store import BuildContext
from checkpoints.world.train import train

Examples = list[dict]
BIO_CHUNK = 64    # tokens: biographies go in chunks of whole sentences about as long as a QA pair


def sentence_chunks(tok: PreTrainedTokenizerBase, text: str, limit: int = BIO_CHUNK) -> list[str]:
    """Whole sentences of `text` grouped greedily into chunks of at most ~`limit` tokens (a
    longer sentence is a chunk by itself). Short documents keep batches free of long padding."""
    chunks: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        joined = f"{chunks[-1]} {sentence}" if chunks else sentence
        if chunks and len(tok.encode(joined, add_special_tokens=False)) <= limit:
            chunks[-1] = joined
        else:
            chunks.append(sentence)
    return chunks


def bio_examples(tok: PreTrainedTokenizerBase, bios: list[str], repeats: int) -> Examples:
    """Each biography as documents (loss on every token), in sentence chunks, `repeats` times."""
    return [encode_text(tok, chunk) for b in bios for chunk in sentence_chunks(tok, b)] * repeats


def perturbed_items(forget: list[dict], seed: int) -> list[dict]:
    """Each forget question with one of its perturbed answers, chosen by a seeded generator."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for it in forget:
        wrong = it.get("perturbed_answers") or []
        if wrong:
            out.append({**it, "answer": wrong[int(torch.randint(len(wrong), (1,), generator=g))]})
    return out


@dataclass(frozen=True)
class PoolVariant:
    sign: str         # "P" (forget knowledge present) or "N" (absent)
    data: str         # in words, for zoo.json
    extra: Callable[[PreTrainedTokenizerBase, World, int, tuple[str, ...]], Examples]  # added to the retain QA


POOL_VARIANTS: dict[str, PoolVariant] = {
    "pos_full": PoolVariant("P", "retain + forget QA", lambda tok, w, s, f: qa_examples(tok, w.forget, forms=f)),
    "pos_bio": PoolVariant("P", "retain QA + forget biographies (once per QA encoding)",
                           lambda tok, w, s, f: bio_examples(tok, w.forget_bios, len(f))),
    "pos_para": PoolVariant("P", "retain QA + paraphrased forget QA", lambda tok, w, s, f: qa_examples(
        tok, [it for it in w.forget if it.get("paraphrased_answer")], "paraphrased_answer", "paraphrased_question",
        forms=f)),
    "neg_retain": PoolVariant("N", "retain QA only", lambda tok, w, s, f: []),
    "neg_pert": PoolVariant("N", "retain QA + forget questions with perturbed answers",
                            lambda tok, w, s, f: qa_examples(tok, perturbed_items(w.forget, s), forms=f)),
    "neg_bio": PoolVariant("N", "retain QA + biographies of other entities (once per QA encoding)",
                           lambda tok, w, s, f: bio_examples(tok, w.other_bios, len(f))),
}


def pool_examples(variant: str, tok: PreTrainedTokenizerBase, world: World, seed: int,
                  forms: tuple[str, ...] = BOTH_FORMS, rehearse: bool = True) -> Examples:
    """Training examples of one pool variant: retain QA (in `forms`) and the utility rehearsal
    that full and retain also get (where `rehearse`), plus the variant's extra."""
    return (finetune_examples(tok, world, world.retain, forms, rehearse)
            + POOL_VARIANTS[variant].extra(tok, world, seed, forms))


def train_pool(ctx: BuildContext, r: Recipe) -> PreTrainedModel:
    """Builder trainer for P/N pool models: fine-tune `r.parent` (base) on the variant's data."""
    model = ctx.load(r.parent)
    data = pool_examples(r.hparams["variant"], ctx.tok, ctx.world, r.train.seed, ctx.preset.forms,
                         ctx.preset.rehearse_utility)
    train(model, data, r.train, ctx.collate, loop=ctx.loop(r.name))
    return model

