"""Second-route helpers for the tests/test_independent_*.py files, written from spec §3.1-3.2 and
4.3 without metrics/ or uds_core/chat.py: chat sequences from the tokenizer's own template, per-item
attack statistics from the logits (one example per forward, no padding, float64)."""

from __future__ import annotations

import math
import zlib

import torch


def chat_sequence(tok, question: str, answer: str) -> tuple[list[int], int]:
    """(token ids of the whole turn, ending in eos; number of prompt tokens)."""
    def ids(messages, gen_prompt):
        text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=gen_prompt)
        return tok(text, add_special_tokens=False)["input_ids"]
    user = [{"role": "user", "content": question}]
    prompt = ids(user, True)
    full = ids(user + [{"role": "assistant", "content": answer}], False)
    if full[-1] != tok.eos_token_id:
        full.append(tok.eos_token_id)
    assert full[:len(prompt)] == prompt
    return full, len(prompt)


@torch.no_grad()
def item_statistics(model, tok, question: str, answer: str) -> dict[str, float]:
    """The four attack statistics of one item (higher = less likely a member)."""
    ids, n_prompt = chat_sequence(tok, question, answer)
    logp = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
    rows = torch.arange(n_prompt - 1, len(ids) - 1)          # position p scores token p + 1
    labels = torch.tensor(ids[n_prompt:])
    lp_all = logp[rows, labels]                                # over A (answer + eos)
    avg_loss = float(-lp_all.mean())
    lp = lp_all[:-1]                                           # A-: eos dropped
    n = max(1, math.floor(0.4 * len(lp)))
    probs = logp[rows[:-1]].exp()
    mu = (probs * logp[rows[:-1]]).sum(-1)
    var = ((probs * logp[rows[:-1]] ** 2).sum(-1) - mu ** 2).clamp_min(1e-6)
    z = (lp - mu) / var.sqrt()
    return {"loss": avg_loss,
            "zlib": avg_loss / len(zlib.compress(answer.strip().encode("utf-8"))),
            "min_k": float(-lp.sort().values[:n].mean()) if len(lp) else 0.0,
            "min_kpp": float(-z.sort().values[:n].mean()) if len(lp) else 0.0}
