"""How good is a tiny world? Entity recall of its models, measured (`quality.json`).

For each model and split (forget, retain, holdout): the greedy-decoding entity hit rate (the
normalised entity string found in the model's greedy chat answer) and the mean teacher-forced
log-prob of the entity tokens in the raw UDS format (nats per token).
"""

from __future__ import annotations

import json

import numpy as np
from transformers import LlamaForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from checkpoints.catalogue import recipes
from checkpoints.world.build import is_built
from checkpoints.world.matching import entity_hit
from checkpoints.world.presets import get_preset
from checkpoints.world.store import ensure_tokenizer, load_world, model_dir
from uds_core.gen_options import GenOptions
from uds_core.generation import greedy_generate
from uds_core.chat import chat_prompt_ids
from uds_core.engine import EngineSettings, chunks, forward_scores, make_batch, score_pair
from uds_core.formula import TAU
from uds_core.prompts import prepare_items
from uds_core.paths import world_dir

SPLITS = ("forget", "retain", "holdout")


def greedy_answers(model: PreTrainedModel, tok: PreTrainedTokenizerBase, questions: list[str],
                   max_new_tokens: int = 40, batch_size: int = 32) -> list[str]:
    """Greedy chat answers (the output metrics' generation path), cut at eos."""
    prompts = [chat_prompt_ids(tok, q) for q in questions]
    gens = greedy_generate(model, tok, prompts, GenOptions(batch_size, max_new_tokens, progress=False))
    return [g.text for g in gens]


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
    retain_d = s1_deltas(full, retain, tok, annotated(world.retain_eval))
    f_mean, r_mean = forget.mean(axis=0), retain_d.mean(axis=0)
    ke = f_mean > tau
    ratio = float(r_mean[ke].mean() / f_mean[ke].mean()) if ke.any() else float("nan")
    return {"ratio": ratio, "ke_layers": np.flatnonzero(ke).tolist(),
            "forget_s1_delta_per_layer": f_mean.round(4).tolist(),
            "retain_s1_delta_per_layer": r_mean.round(4).tolist()}


def with_tail_entity(item: dict, n_words: int = 2) -> dict:
    """The item itself if annotated; else a copy whose entity is the answer's last `n_words`
    words (trailing punctuation left in the continuation). TOFU annotates only forget10, so the
    retain and holdout splits of the `tofu` world are scored on this stand-in span."""
    if item.get("entity"):
        return item
    words = item["answer"].rstrip().rstrip(".!?\"'").split()
    if len(words) <= n_words:
        return item
    entity = " ".join(words[-n_words:])
    cut = item["answer"].rfind(entity)
    return item | {"prefix": item["answer"][:cut].rstrip(), "entity": entity}


def annotated(items: list[dict]) -> list[dict]:
    """Items with an entity span, the tail stand-in where the data has none."""
    return [it for it in map(with_tail_entity, items) if it.get("entity")]


def model_quality(model: PreTrainedModel, tok: PreTrainedTokenizerBase, world) -> dict:
    row = {}
    for split in SPLITS:
        items = annotated(getattr(world, split))
        # long enough for the longest answer to reach its entity (TOFU answers run to ~80 tokens)
        budget = min(200, max(len(tok.encode(it["answer"], add_special_tokens=False)) for it in items) + 8)
        answers = greedy_answers(model, tok, [it["question"] for it in items], max_new_tokens=budget)
        row[f"{split}_hit_rate"] = sum(entity_hit(a, it["entity"]) for a, it in zip(answers, items)) / len(items)
        row[f"{split}_entity_logprob"] = entity_logprob(model, tok, items)
    return row


def measure_quality(preset: str, seed: int, names: tuple[str, ...] | None = None) -> dict:
    """Measure the named (built) models, by default every built model of the zoo, write
    `quality.json` in the world folder and return it. A model measured before and not rebuilt
    since (same `recipe.json` time stamp) keeps its row, so a rebuild measures only new models."""
    path = world_dir(preset, seed) / "quality.json"
    previous = json.loads(path.read_text()) if path.is_file() else {}
    old = {m["model"]: m for m in previous.get("models", [])}
    world, tok = load_world(preset, seed), ensure_tokenizer(preset, seed)
    models = []
    preset_obj = get_preset(preset)
    by_name = {r.name: r for r in recipes(preset_obj)}
    for name in names or list(by_name):
        folder = model_dir(preset, seed, name)
        if name not in by_name or not is_built(preset_obj, seed, by_name[name]):
            continue   # not built, or built by another recipe (stale): nothing to report
        stamp = (folder / "recipe.json").stat().st_mtime_ns
        if old.get(name, {}).get("built_ns") == stamp:
            models.append(old[name])
            continue
        model = LlamaForCausalLM.from_pretrained(folder).eval()
        models.append({"model": name, "built_ns": stamp} | model_quality(model, tok, world))
    report = {"preset": preset, "seed": seed, "models": models}
    stamps = {m["model"]: m.get("built_ns") for m in models}
    if "full" in stamps and "retain" in stamps:
        report["alignment"] = _alignment_of(preset, seed, [stamps["full"], stamps["retain"]],
                                            previous.get("alignment"), tok, world)
    path.write_text(json.dumps(report, indent=1))
    return report


def _alignment_of(preset: str, seed: int, key: list, previous: dict | None, tok, world) -> dict:
    """`alignment` of the built full and retain models; the previous one if neither was rebuilt."""
    if previous and previous.get("built_ns") == key:
        return previous
    full, retain = (LlamaForCausalLM.from_pretrained(model_dir(preset, seed, n)).eval() for n in ("full", "retain"))
    return alignment(full, retain, tok, world) | {"built_ns": key}


def print_quality(report: dict) -> None:
    print(f"quality of tiny world {report['preset']} (seed {report['seed']}): entity hit rate / entity log-prob")
    width = max([10] + [len(m["model"]) + 1 for m in report["models"]])
    print("model".ljust(width) + "".join(f"{s:>22}" for s in SPLITS))
    for m in report["models"]:
        cells = "".join(f"{m[f'{s}_hit_rate']:>13.2f} / {m[f'{s}_entity_logprob']:>6.2f}" for s in SPLITS)
        print(m["model"].ljust(width) + cells)
    if "alignment" in report:
        a = report["alignment"]
        print(f"alignment: mean S1 delta on retain / forget questions over KE layers = {a['ratio']:.3f} "
              f"(target <= 0.3); per layer, forget {a['forget_s1_delta_per_layer']}, "
              f"retain (noise) {a['retain_s1_delta_per_layer']}")
