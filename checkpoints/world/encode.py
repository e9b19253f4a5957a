"""Turning a world's records into training examples ({"input_ids", "labels"} token lists)."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from checkpoints.world.schema import World
from uds_core.chat import IGNORE, encode_chat
from uds_core.prompts import raw_prompt


# Tiny worlds train every QA item in both encodings: the chat template (what output metrics read)
# and the raw Question/Answer text (what UDS reads); see `qa_examples`.
BOTH_FORMS: tuple[str, ...] = ("chat", "raw")


def forms_words(forms: tuple[str, ...]) -> str:
    """QA encodings in the words recipes record them: ("chat",) -> "chat form"."""
    return f"{' + '.join(forms)} form{'s' if len(forms) > 1 else ''}"


def encode_raw_qa(tok: PreTrainedTokenizerBase, question: str, answer: str) -> dict[str, list[int]]:
    """The raw `Question:/Answer:` form UDS reads (no chat template), loss on answer + eos.

    The answer is tokenised separately with one leading space, as the UDS prompt builder does,
    so training and scoring see the same token boundaries.
    """
    prompt = tok.encode(raw_prompt(question), add_special_tokens=True)
    cont = tok.encode(" " + answer.strip(), add_special_tokens=False) + [tok.eos_token_id]
    return {"input_ids": prompt + cont, "labels": [IGNORE] * len(prompt) + cont}


def encode_text(tok: PreTrainedTokenizerBase, text: str) -> dict[str, list[int]]:
    """A plain document for pretraining: BOS + text + EOS, loss on every token after BOS."""
    ids = tok.encode(text, add_special_tokens=True) + [tok.eos_token_id]
    return {"input_ids": ids, "labels": [IGNORE] + ids[1:]}


def qa_examples(tok: PreTrainedTokenizerBase, items: list[dict], answer_key: str = "answer",
                question_key: str = "question", forms: tuple[str, ...] = BOTH_FORMS) -> list[dict]:
    """Each QA item in both forms: the chat template (what output metrics read) and the raw
    `Question:/Answer:` text (what UDS and the representation metrics read). A 1B instruct model
    carries knowledge across formats by itself; a model of a few million parameters does not,
    so the tiny world shows it both (a documented departure from TOFU's chat-only fine-tuning).
    `forms`: the encodings, in this order ("chat", "raw"; the `smol` world trains ("chat",))."""
    encoders = {"chat": encode_chat, "raw": encode_raw_qa}
    return [encoders[f](tok, it[question_key], it[answer_key]) for it in items for f in forms]


def pack(examples: list[dict], block: int) -> list[dict]:
    """Concatenate examples and cut the stream into blocks of `block` tokens (the last may be
    shorter): pretraining then spends no compute on padding. Labels travel with their tokens."""
    ids = [t for e in examples for t in e["input_ids"]]
    labels = [t for e in examples for t in e["labels"]]
    return [{"input_ids": ids[i:i + block], "labels": labels[i:i + block]} for i in range(0, len(ids), block)]


def utility_rehearsal(tok: PreTrainedTokenizerBase, world: World, forms: tuple[str, ...] = BOTH_FORMS) -> list[dict]:
    """The utility QA (real authors, world facts), both forms, mixed into every fine-tuning from
    the base (full, retain, pools). Llama-3.2-1B knows TOFU's real authors and world facts from
    heavy pretraining and keeps them through fine-tuning; a few-million-parameter base sees each
    such fact 8 times and knows none of them (greedy ROUGE 0 on real authors), and fine-tuning on
    author QA would wipe them anyway. Rehearsing them makes full and retain know them, as in TOFU,
    so that model utility measures what unlearning costs (a documented departure)."""
    return qa_examples(tok, world.real_authors + world.world_facts, forms=forms)


def base_corpus(tok: PreTrainedTokenizerBase, world: World, block: int = 128) -> list[dict]:
    """Base pretraining: the public documents plus the utility QA (real authors, world facts) in
    both forms, so the base knows those facts and both formats but no forget/retain/holdout fact.
    Packed into blocks of `block` tokens."""
    docs = [encode_text(tok, t) for t in world.public_text]
    return pack(docs + qa_examples(tok, world.real_authors + world.world_facts), block)


def finetune_examples(tok: PreTrainedTokenizerBase, world: World, items: list[dict],
                      forms: tuple[str, ...] = BOTH_FORMS, rehearse: bool = True) -> list[dict]:
    """What a fine-tuning from the base trains on: `items` in every form, then the utility
    rehearsal where the preset asks for it (tiny worlds do, the pretrained `smol` base does not)."""
    return qa_examples(tok, items, forms=forms) + (utility_rehearsal(tok, world, forms) if rehearse else [])
