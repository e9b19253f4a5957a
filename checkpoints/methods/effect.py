"""The measured effect of unlearning: one row per zoo model (method, setting, epochs) with its
forget / retain / holdout entity hit rates (greedy chat answers, from `quality.json`), the change
against the full model, and the seconds its training took."""

from __future__ import annotations

import json

from checkpoints.catalogue import recipes
from checkpoints.world.presets import get_preset
from checkpoints.world.recipes import Recipe
from uds_core.paths import world_dir

SPLITS = ("forget", "retain", "holdout")


def setting_of(name: str, method: str) -> str:
    """'npo_lr5e-4_b01_a1_ep5' -> 'lr5e-4 b01 a1' (the name without method and epoch)."""
    body = name[len(method) + 1:] if name.startswith(method + "_") else name
    parts = body.split("_")
    return " ".join(p for p in parts if not (p.startswith("ep") and p[2:].isdigit())) or "-"


def effect_rows(preset: str, seed: int, quality: dict | None = None) -> list[dict]:
    """Rows for every measured model of the zoo, in zoo order: name, kind, method, setting,
    epochs, `<split>_hit`, `d_<split>` (minus full's) and `train_seconds` (None if unknown)."""
    root = world_dir(preset, seed)
    if quality is None:
        path = root / "quality.json"
        quality = json.loads(path.read_text()) if path.is_file() else {"models": []}
    measured = {m["model"]: m for m in quality["models"]}
    full = measured.get("full", {})
    rows = []
    for r in recipes(get_preset(preset)):
        if r.name not in measured:
            continue
        q, meta = measured[r.name], root / "models" / r.name / "recipe.json"
        method = _method_label(r)
        seconds = json.loads(meta.read_text()).get("train_seconds") if meta.is_file() else None
        row = {"name": r.name, "kind": r.kind, "method": method,
               "setting": setting_of(r.name, method) if r.kind in ("unlearned", "pool") else "-",
               "epochs": r.epoch, "train_seconds": seconds}
        for s in SPLITS:
            row[f"{s}_hit"] = q[f"{s}_hit_rate"]
            row[f"d_{s}"] = q[f"{s}_hit_rate"] - full[f"{s}_hit_rate"] if full else None
        rows.append(row)
    return rows


def _method_label(r: Recipe) -> str:
    """The method of an unlearned model, the variant of a pool model, the kind of the others."""
    return {"unlearned": r.method, "pool": r.hparams.get("variant", r.method)}.get(r.kind, r.kind)


def format_effect(rows: list[dict], title: str) -> str:
    """A plain-text table of `effect_rows` (hit rates in [0, 1]; d = change against full)."""
    head = f"{'kind':<10}{'method':<11}{'setting':<22}{'ep':>3}  {'forget':>6} {'retain':>6} {'holdout':>7}" \
           f"  {'d_forget':>8} {'d_retain':>8} {'train_s':>7}"
    lines = [title, head]
    for r in rows:
        d = "".join(f" {r[f'd_{s}']:>8.2f}" if r[f"d_{s}"] is not None else f" {'':>8}" for s in ("forget", "retain"))
        secs = f"{r['train_seconds']:>7.0f}" if r["train_seconds"] is not None else f"{'':>7}"
        lines.append(f"{r['kind']:<10}{r['method']:<11}{r['setting']:<22}{r['epochs'] or '':>3}  "
                     f"{r['forget_hit']:>6.2f} {r['retain_hit']:>6.2f} {r['holdout_hit']:>7.2f} {d} {secs}")
    return "\n".join(lines)


def print_effect(preset: str, seed: int, quality: dict | None = None) -> None:
    title = (f"effect table of tiny world {preset} (seed {seed}): entity hit rate of greedy chat answers; "
             f"d_* = change against full")
    print(format_effect(effect_rows(preset, seed, quality), title))
