"""How good is a tiny world? Entity recall of its models, measured (`quality.json`).

For each model and split (forget, retain, holdout): the greedy-decoding entity hit rate (the
normalised entity string found in the model's greedy chat answer) and the mean teacher-forced
log-prob of the entity tokens in the raw UDS format (nats per token).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import torch
from transformers import LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.world.build import ensure_tokenizer, load_world, model_dir
from uds.chat import chat_prompt_ids
from uds.engine import EngineSettings, chunks, forward_scores, make_batch, score_pair
from uds.formula import TAU
from uds.prompts import prepare_items
from uds.paths import world_dir

SPLITS = ("forget", "retain", "holdout")


def normalise(text: str) -> str:
    """Lower case, punctuation to spaces, single spaces: 'The Jinot.' -> 'the jinot'."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def entity_hit(generation: str, entity: str) -> bool:
    return f" {normalise(entity)} " in f" {normalise(generation)} "


@torch.no_grad()
def greedy_answers(model: PreTrainedModel, tok: PreTrainedTokenizerBase, questions: list[str],
                   max_new_tokens: int = 40, batch_size: int = 32) -> list[str]:
    """Greedy chat answers, left-padded batches, cut at eos."""
    out = []
    for i in range(0, len(questions), batch_size):
        prompts = [chat_prompt_ids(tok, q) for q in questions[i:i + batch_size]]
        width = max(map(len, prompts))
        ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        gen = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens, do_sample=False,
                             pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        out += [tok.decode(g[width:], skip_special_tokens=True).strip() for g in gen]
    return out


def entity_logprob(model: PreTrainedModel, tok: PreTrainedTokenizerBase, items: list[dict],
                   batch_size: int = 32) -> float:
    """Mean over items of the teacher-forced mean log-prob of the entity tokens (UDS inputs)."""
    prepared, _ = prepare_items(items, tok)
    scores = [forward_scores(model, make_batch(c, "cpu", tok.pad_token_id), "float32")
              for c in chunks(prepared, batch_size)]
    return float(np.concatenate(scores).mean()) if scores else float("nan")


def s1_deltas(full: PreTrainedModel, retain: PreTrainedModel, tok: PreTrainedTokenizerBase,
              items: list[dict]) -> np.ndarray:
    """S1 deltas (N, L) of annotated items: retain patched into full, nats."""
    prepared, _ = prepare_items(items, tok)
    return score_pair(full, retain, prepared, EngineSettings(batch_size=32), tok.pad_token_id).deltas


def alignment(full: PreTrainedModel, retain: PreTrainedModel, tok: PreTrainedTokenizerBase, world,
              tau: float = TAU) -> dict:
    """How TOFU-like the world is: S1 damage on retain questions (knowledge both models share,
    i.e. noise) against S1 damage on forget questions (knowledge only full has).

    KE layers = layers whose mean forget-split S1 delta exceeds tau; the ratio is the mean retain
    delta over those layers divided by the mean forget delta over them (target <= 0.3).
    """
    forget = s1_deltas(full, retain, tok, [it for it in world.forget if it.get("entity")])
    retain_d = s1_deltas(full, retain, tok, [it for it in world.retain_eval if it.get("entity")])
    f_mean, r_mean = forget.mean(axis=0), retain_d.mean(axis=0)
    ke = f_mean > tau
    ratio = float(r_mean[ke].mean() / f_mean[ke].mean()) if ke.any() else float("nan")
    return {"ratio": ratio, "ke_layers": np.flatnonzero(ke).tolist(),
            "forget_s1_delta_per_layer": f_mean.round(4).tolist(),
            "retain_s1_delta_per_layer": r_mean.round(4).tolist()}


def model_quality(model: PreTrainedModel, tok: PreTrainedTokenizerBase, world) -> dict:
    row = {}
    for split in SPLITS:
        items = [it for it in getattr(world, split) if it.get("entity")]
        answers = greedy_answers(model, tok, [it["question"] for it in items])
        row[f"{split}_hit_rate"] = sum(entity_hit(a, it["entity"]) for a, it in zip(answers, items)) / len(items)
        row[f"{split}_entity_logprob"] = entity_logprob(model, tok, items)
    return row


def measure_quality(preset: str, seed: int, names: tuple[str, ...] = ("full", "retain")) -> dict:
    """Measure the named (built) models, write `quality.json` in the world folder and return it."""
    world, tok = load_world(preset, seed), ensure_tokenizer(preset, seed)
    models, loaded = [], {}
    for name in names:
        folder = model_dir(preset, seed, name)
        if not (folder / "recipe.json").is_file():
            continue
        loaded[name] = LlamaForCausalLM.from_pretrained(folder).eval()
        models.append({"model": name} | model_quality(loaded[name], tok, world))
    report = {"preset": preset, "seed": seed, "models": models}
    if "full" in loaded and "retain" in loaded:
        report["alignment"] = alignment(loaded["full"], loaded["retain"], tok, world)
    path = world_dir(preset, seed) / "quality.json"
    path.write_text(json.dumps(report, indent=1))
    return report


def print_quality(report: dict) -> None:
    cols = [f"{s}_{k}" for s in SPLITS for k in ("hit_rate", "entity_logprob")]
    print(f"quality of tiny world {report['preset']} (seed {report['seed']}): entity hit rate / entity log-prob")
    print("model".ljust(10) + "".join(f"{s:>22}" for s in SPLITS))
    for m in report["models"]:
        cells = "".join(f"{m[f'{s}_hit_rate']:>13.2f} / {m[f'{s}_entity_logprob']:>6.2f}" for s in SPLITS)
        print(m["model"].ljust(10) + cells)
    if "alignment" in report:
        a = report["alignment"]
        print(f"alignment: mean S1 delta on retain / forget questions over KE layers = {a['ratio']:.3f} "
              f"(target <= 0.3); per layer, forget {a['forget_s1_delta_per_layer']}, "
              f"retain (noise) {a['retain_s1_delta_per_layer']}")
