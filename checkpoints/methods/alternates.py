"""AltPO's alternate answers: wrong but fluent answers to the forget questions, made by the model
being unlearned (the full model), sampled with a fixed seed and cached as JSON.

OU samples free answers from the 1B full model (temperature 1.0, 5 per question). A tiny model
that memorised the forget set would mostly repeat the true answer that way, so here the model
continues the answer's own prefix ("X was born in") with the true next token forbidden (the
token it would pick greedily), at temperature 1.0; samples that still contain the true entity
(or, without an entity, equal the true answer) are dropped, and the most likely distinct ones
under the model are kept. An item left with no sample falls back to its first perturbed answer
(counted in the cache file as `fallbacks`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.world.matching import entity_hit, plain_words
from uds_core.chat import chat_prompt_ids


def _keeps(text: str, item: dict) -> bool:
    """A usable alternate: non-empty, and not the true entity (or true answer) again."""
    if not plain_words(text) or plain_words(text) == plain_words(item["answer"]):
        return False
    return not (item.get("entity") and entity_hit(text, item["entity"]))


@torch.no_grad()
def sample_alternates(model: PreTrainedModel, tok: PreTrainedTokenizerBase, item: dict, n: int,
                      temperature: float = 1.0, max_new_tokens: int = 48) -> list[str]:
    """Up to n alternate answers for one QA item: 4n draws, filtered by `_keeps`, the n most
    likely under the model (mean log-prob per generated token) first, so that fluent ones win."""
    prefix = (item.get("prefix") or "").strip()
    ids = chat_prompt_ids(tok, item["question"]) + (tok.encode(prefix, add_special_tokens=False) if prefix else [])
    prompt = torch.tensor([ids])
    banned = int(model(input_ids=prompt).logits[0, -1].argmax())
    out = model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), do_sample=True,
                         temperature=temperature, top_k=0, top_p=1.0, max_new_tokens=max_new_tokens,
                         num_return_sequences=4 * n, bad_words_ids=[[banned]], pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id, return_dict_in_generate=True, output_scores=True)
    logp = model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
    generated = out.sequences[:, len(ids):]
    live = (generated != tok.pad_token_id) & torch.isfinite(logp)
    mean_logp = (logp.nan_to_num(0.0, neginf=0.0) * live).sum(1) / live.sum(1).clamp_min(1)
    scored = []
    for seq, score in zip(generated, mean_logp.tolist()):
        text = tok.decode(seq, skip_special_tokens=True)
        answer = f"{prefix}{text}" if text[:1].isspace() or not prefix else f"{prefix} {text}"
        if _keeps(answer, item):
            scored.append((-score, answer.strip()))
    unique = dict.fromkeys(text for _, text in sorted(scored))
    return list(unique)[:n]


def alternate_answers(model: PreTrainedModel, tok: PreTrainedTokenizerBase, items: list[dict],
                      n: int = 5, seed: int = 0) -> tuple[dict[int, list[str]], int]:
    """idx -> up to n alternates for each item, and how many items fell back to a perturbed answer."""
    torch.manual_seed(seed)
    model.eval()
    table, fallbacks = {}, 0
    for item in items:
        alts = sample_alternates(model, tok, item, n)
        if not alts:
            alts, fallbacks = list(item.get("perturbed_answers") or [])[:1], fallbacks + 1
        table[item["idx"]] = alts
    return table, fallbacks


def cached_alternates(path: Path, make_model: Callable[[], PreTrainedModel], tok: PreTrainedTokenizerBase,
                      items: list[dict], n: int = 5, seed: int = 0) -> dict[int, list[str]]:
    """The alternates stored at `path`, generated (and written atomically) on first use."""
    if not path.is_file():
        table, fallbacks = alternate_answers(make_model(), tok, items, n, seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"n": n, "seed": seed, "fallbacks": fallbacks,
                                   "answers": {str(k): v for k, v in table.items()}}, indent=1))
        tmp.replace(path)
    return {int(k): v for k, v in json.loads(path.read_text())["answers"].items()}
