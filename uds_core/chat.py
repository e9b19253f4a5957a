"""Chat encoding shared by training and the output-level metrics (spec §3.1).

`chat_ids` = the template of the whole conversation, `prompt_ids` = the template without the
last assistant turn plus the generation prompt; labels are -100 on the prompt and the token ids
after it (answer tokens + final eos).
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

IGNORE = -100
DATE_STRING = "10 Apr 2025"  # Llama-3.x templates otherwise insert today's date


def _template_ids(tok: PreTrainedTokenizerBase, messages: list[dict], generation_prompt: bool) -> list[int]:
    out = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=generation_prompt,
                                  date_string=DATE_STRING)
    # transformers 5 returns a BatchEncoding, 4.x a plain list
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def chat_prompt_ids(tok: PreTrainedTokenizerBase, question: str, system_prompt: str | None = None) -> list[int]:
    """Token ids of the conversation up to and including the assistant generation header."""
    msgs = ([{"role": "system", "content": system_prompt}] if system_prompt is not None else [])
    return _template_ids(tok, msgs + [{"role": "user", "content": question}], True)


def conversation_prompt_ids(tok: PreTrainedTokenizerBase, turns: list[tuple[str, str]], question: str,
                            system_prompt: str | None = None) -> list[int]:
    """Token ids of earlier (question, answer) turns, then `question`, up to the assistant
    generation header; with no turns, `chat_prompt_ids` exactly."""
    msgs = ([{"role": "system", "content": system_prompt}] if system_prompt is not None else [])
    for q, a in turns:
        msgs += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return _template_ids(tok, msgs + [{"role": "user", "content": question}], True)


def encode_chat(tok: PreTrainedTokenizerBase, question: str, answer: str,
                system_prompt: str | None = None) -> dict[str, list[int]]:
    """{"input_ids", "labels"} of one QA turn, loss on the answer and the final eos only."""
    msgs = ([{"role": "system", "content": system_prompt}] if system_prompt is not None else [])
    msgs += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    prompt = chat_prompt_ids(tok, question, system_prompt)
    ids = _template_ids(tok, msgs, False)
    if ids[-1] != tok.eos_token_id:
        ids.append(tok.eos_token_id)
    labels = [IGNORE] * len(prompt) + ids[len(prompt):]
    return {"input_ids": ids, "labels": labels}
