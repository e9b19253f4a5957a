"""Reading benchmark results for `uds leaderboard`: three input forms, one record shape.

A record is {"model", "method", "epoch", <raw metric keys of docs/design.md>}. Forms:

1. A folder of per-model folders. A model folder holds any of: `metrics.json` (`uds metrics`),
   `summary.json` (`uds score`: its `uds`), Open-Unlearning's `TOFU_SUMMARY.json` /
   `TOFU_EVAL.json`, and optionally `meta.json` ({"method", "epoch"} overriding the guess).
   Folders are found up to three levels deep; the folder name is the model name.
2. One JSON file: a list of records with the raw keys plus `model`, `method`, `epoch`
   (what `uds meta-eval` writes as `results.json`).
3. The reference's published `method_results.json` ({"models": [...], "full_utility": {...}}),
   whose `one_minus_*` and `s_loss`/`s_zlib`/`s_mink`/`s_minkpp` fields map back to raw keys.

Open-Unlearning key mapping (OU metric name -> key here); missing OU names leave the key empty:
extraction_strength -> es, exact_memorization -> em, forget_Q_A_Prob -> prob, forget_Q_A_PARA_Prob
-> paraprob, forget_Q_A_ROUGE -> rouge, forget_Q_A_PARA_ROUGE -> para_rouge, mia_loss, mia_zlib,
mia_min_k -> the same keys, mia_min_k_plus_plus -> mia_min_kpp, retain_Q_A_Prob -> retain_q_prob,
retain_Q_A_ROUGE -> retain_q_rouge, retain_Truth_Ratio -> retain_truth_ratio,
ra_Q_A_Prob_normalised -> ra_q_prob, ra_Q_A_ROUGE -> ra_q_rouge, ra_Truth_Ratio -> ra_truth_ratio,
wf_* likewise, model_utility -> model_utility, forget_Q_A_gibberish -> fluency.
truth_ratio (the p_para / (p_para + p_pert) variant Mem uses) is rebuilt from TOFU_EVAL.json's
per-item `forget_truth_ratio` values r = p_pert / p_para as mean 1 / (1 + r); the summary's
aggregate is OU's min(r, 1/r) and is not used. Not produced by OU's own TOFU evaluation:
jailbreak_rouge, cka, logit_lens, fisher_masked_*, uds; runs with the uds plug-in (uds.ou) hold
them as `uds` and `uds_<key>` (-> <key>, any registry key, over OU's own mapping of the same key);
otherwise uds is taken from a `summary.json` in the same folder. s_mia_* are derived from mia_* with
the retain record's AUCs (spec §4.4) whenever a
record lacks them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from uds_leaderboard.rows import fill_s_mia
from uds_core.errors import UdsInputError

MODEL_FILES = ("metrics.json", "summary.json", "TOFU_SUMMARY.json", "TOFU_EVAL.json")
MAX_DEPTH = 3

OU_KEYS: dict[str, str] = {
    "extraction_strength": "es", "exact_memorization": "em", "forget_Q_A_Prob": "prob",
    "forget_Q_A_PARA_Prob": "paraprob", "forget_Q_A_ROUGE": "rouge", "forget_Q_A_PARA_ROUGE": "para_rouge",
    "mia_loss": "mia_loss", "mia_zlib": "mia_zlib", "mia_min_k": "mia_min_k", "mia_min_k_plus_plus": "mia_min_kpp",
    "retain_Q_A_Prob": "retain_q_prob", "retain_Q_A_ROUGE": "retain_q_rouge",
    "retain_Truth_Ratio": "retain_truth_ratio",
    "ra_Q_A_Prob_normalised": "ra_q_prob", "ra_Q_A_ROUGE": "ra_q_rouge", "ra_Truth_Ratio": "ra_truth_ratio",
    "wf_Q_A_Prob_normalised": "wf_q_prob", "wf_Q_A_ROUGE": "wf_q_rouge", "wf_Truth_Ratio": "wf_truth_ratio",
    "model_utility": "model_utility", "forget_Q_A_gibberish": "fluency",
}
OU_TRUTH_RATIO = ("forget_truth_ratio", "forget_Truth_Ratio")
PLUGIN_PREFIX = "uds_"   # metric names the uds plug-in gives in OU results: uds, uds_<registry key>

# method_results.json field -> (raw key, transform)
PUBLISHED_KEYS: dict[str, tuple[str, bool]] = {
    "one_minus_es": ("es", True), "one_minus_em": ("em", True), "one_minus_paraprob": ("paraprob", True),
    "one_minus_truth": ("truth_ratio", True), "s_loss": ("s_mia_loss", False), "s_zlib": ("s_mia_zlib", False),
    "s_mink": ("s_mia_min_k", False), "s_minkpp": ("s_mia_min_kpp", False),
}


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UdsInputError(f"cannot read {path}: {exc}") from exc


def describe(name: str) -> tuple[str, int | None]:
    """(method, epoch) of a model name: registry alias, "full"/"retain", else `<method>_..._ep<N>`.
    References get no epoch unless the name has one."""
    from checkpoints.ou_checkpoints import BY_ALIAS

    if name in BY_ALIAS:
        c = BY_ALIAS[name]
        # a reference evaluated once serves every epoch group (leaderboard_rows.full_utility_by_group)
        return c.method, None if c.kind == "reference" else c.epoch
    m = re.search(r"(?:_ep|epoch)(\d+)$", name)
    epoch = int(m.group(1)) if m else None
    if name in ("full", "retain"):
        return name, epoch
    return name.split("_")[0].lower(), epoch


# --- per-model folders --------------------------------------------------------------------------

def plugin_values(flat: dict) -> dict:
    """Registry key -> value of the uds plug-in's entries of an OU summary (`uds`, `uds_<key>`)."""
    out = {}
    for name, value in flat.items():
        key = name if name == "uds" else (name[len(PLUGIN_PREFIX):] if name.startswith(PLUGIN_PREFIX) else None)
        if key is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if key != "uds":
            from metrics.registry import REGISTRY   # the metric stack: only for `uds_<key>` entries

            if key not in REGISTRY:
                continue
        out[key] = float(value)
    return out


def summary_values(flat: dict) -> dict:
    """Key -> value of an OU summary ({OU metric name: agg_value}): OU's names mapped (OU_KEYS),
    then the plug-in's entries."""
    out = {key: float(flat[ou]) for ou, key in OU_KEYS.items()
           if isinstance(flat.get(ou), (int, float)) and not isinstance(flat.get(ou), bool)}
    return out | plugin_values(flat)


def is_ou_summary(doc: object) -> bool:
    """A TOFU_SUMMARY.json-like document: a flat object holding at least two of OU's metric names."""
    return isinstance(doc, dict) and sum(ou in doc for ou in OU_KEYS) >= 2


def _ou_values(folder: Path) -> dict:
    summary = folder / "TOFU_SUMMARY.json"
    evals = _read_json(folder / "TOFU_EVAL.json") if (folder / "TOFU_EVAL.json").is_file() else {}
    flat = _read_json(summary) if summary.is_file() else {
        k: v.get("agg_value") for k, v in evals.items() if isinstance(v, dict)}
    out = summary_values(flat)
    for name in OU_TRUTH_RATIO:
        per_item = (evals.get(name) or {}).get("value_by_index") if isinstance(evals.get(name), dict) else None
        if per_item:
            ratios = [v["truth_ratio"] for v in per_item.values() if isinstance(v, dict) and "truth_ratio" in v]
            if ratios:
                out["truth_ratio"] = sum(1.0 / (1.0 + r) for r in ratios) / len(ratios)
                break
    return out


def folder_record(folder: Path) -> dict:
    """The record of one model folder (any subset of MODEL_FILES)."""
    values: dict = {}
    if any((folder / f).is_file() for f in ("TOFU_SUMMARY.json", "TOFU_EVAL.json")):
        values.update(_ou_values(folder))
    if (folder / "metrics.json").is_file():
        values.update({k: v for k, v in (_read_json(folder / "metrics.json").get("metrics") or {}).items()})
    if (folder / "summary.json").is_file():
        uds = _read_json(folder / "summary.json").get("uds")
        if uds is not None:
            values["uds"] = uds
    method, epoch = describe(folder.name)
    meta = _read_json(folder / "meta.json") if (folder / "meta.json").is_file() else {}
    return {"model": meta.get("model", folder.name), "method": meta.get("method", method),
            "epoch": meta.get("epoch", epoch), **values}


def model_folders(root: Path) -> list[Path]:
    """Folders under `root` (itself included) holding a model file, up to MAX_DEPTH levels down."""
    found, frontier = [], [root]
    for _ in range(MAX_DEPTH + 1):
        nxt = []
        for d in frontier:
            if any((d / f).is_file() for f in MODEL_FILES):
                found.append(d)
            else:
                nxt += sorted(p for p in d.iterdir() if p.is_dir())
        frontier = nxt
    return found


# --- files --------------------------------------------------------------------------------------

def published_record(row: dict) -> dict:
    """A method_results.json row with its stored 1-x and s_* fields mapped back to raw keys."""
    rec = {k: v for k, v in row.items() if k not in PUBLISHED_KEYS}
    for field, (key, one_minus) in PUBLISHED_KEYS.items():
        if row.get(field) is not None:
            rec[key] = 1.0 - row[field] if one_minus else row[field]
    return rec


def load_results(path: str | Path) -> tuple[list[dict], dict[str, float]]:
    """(records, explicit full utility per epoch group) from any of the three input forms."""
    p = Path(path)
    if p.is_dir():
        folders = model_folders(p)
        if not folders:
            raise UdsInputError(f"no model folder under {p} (looked for {', '.join(MODEL_FILES)})")
        return fill_s_mia([folder_record(f) for f in folders]), {}
    if not p.is_file():
        raise UdsInputError(f"results not found: {p}")
    doc = _read_json(p)
    if isinstance(doc, dict) and isinstance(doc.get("models"), list):
        return fill_s_mia([published_record(r) for r in doc["models"]]), dict(doc.get("full_utility") or {})
    if isinstance(doc, list) and all(isinstance(r, dict) and "model" in r for r in doc):
        return fill_s_mia([dict(r) for r in doc]), {}
    raise UdsInputError(f"{p}: expected a JSON list of per-model records with a 'model' field, "
                        "or a method_results.json-style object with 'models'")
