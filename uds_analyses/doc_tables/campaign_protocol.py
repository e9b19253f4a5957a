"""docs/smol_meta_eval.md's protocol block: the campaign's models and settings, from protocol.json.

protocol.json fixes each member by its recipe's digest, not its text. The block renders the
recipes of the preset's catalogue, but only after checking that each one has the digest
protocol.json records for it: a recipe that changed in the code since the protocol was fixed is
bad input here (the page states the recorded protocol or nothing). Beside each row, the grid the spec
5.1 / 7.2 publishes for Llama-3.2-1B, taken from the Open-Unlearning checkpoint registry.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Callable, Iterable

from checkpoints.catalogue import recipes
from checkpoints.methods.zoo_recipes import lr_token
from checkpoints.ou_checkpoints import POOLS, UNLEARNED
from checkpoints.world.recipe_digest import legacy_recipe_digest, recipe_digest
from checkpoints.world.encode import BOTH_FORMS, forms_words
from checkpoints.world.presets import get_preset
from checkpoints.world.recipes import Recipe
from uds_analyses.doc_tables.markdown import table
from uds_core.errors import UdsInputError

ANCHORS = ("full", "retain")
# Unlearned recipes' words for their data, the same for every preset; the words enter the recipe
# digests that fix a campaign's protocol, so they stay as recorded and the block states the forms
# the trainer really uses (`Preset.forms`, which `train_unlearned` passes on).
RECORDED_FORMS = "(chat + raw forms)"
# spec §5.1's pool variant names, in the order of checkpoints.methods.pools.POOL_VARIANTS
SPEC_VARIANTS = {"pos_full": "full", "pos_bio": "retain90_forget10_bio", "pos_para": "retain90_forget10_para",
                 "neg_retain": "retain90", "neg_pert": "retain90_forget10_pert", "neg_bio": "retain90_celeb10_bio"}


def _values(xs: Iterable, fmt: Callable[[float], str] = lambda x: f"{x:g}") -> str:
    """Distinct values, in increasing order, comma-separated (numbers through `fmt`)."""
    distinct = sorted(set(xs))
    return ", ".join(fmt(x) if isinstance(x, (int, float)) else str(x) for x in distinct) or "—"


def _coefficients(rs: list[Recipe], skip: tuple[str, ...] = ("pool", "variant")) -> str:
    names = dict.fromkeys(k for r in rs for k in r.hparams if k not in skip)
    return "; ".join(f"{k} {_values(r.hparams[k] for r in rs)}" for k in names) or "—"


def checked_recipes(protocol: dict) -> dict[str, Recipe]:
    """The catalogue recipe of every protocol member, each checked against its recorded digest (of
    the protocol's scheme: version-1 protocols recorded scheme-1 digests)."""
    preset = get_preset(protocol["preset"])
    catalogue = {r.name: r for r in recipes(preset)}
    if protocol.get("version") == 1:
        digest = lambda r: legacy_recipe_digest(preset, r)  # noqa: E731
    else:
        digest = lambda r: recipe_digest(preset, r, seed=int(protocol["seed"]))  # noqa: E731
    missing = [n for n in protocol["recipes"] if n not in catalogue]
    changed = [n for n, d in protocol["recipes"].items() if n in catalogue and digest(catalogue[n]) != d]
    if missing or changed:
        raise UdsInputError(
            f"protocol.json of {protocol['zoo']}: the code's catalogue does not hold the recorded protocol "
            f"(not in the catalogue: {', '.join(missing) or 'none'}; another recipe than the recorded digest: "
            f"{', '.join(changed) or 'none'}); the protocol block states only the recorded protocol")
    return {n: catalogue[n] for n in protocol["recipes"]}


def trained_on(r: Recipe, forms: tuple[str, ...]) -> str:
    """The recipe's data in words, with an unlearned recipe's recorded forms replaced by `forms`
    (marked *) where the preset trains in other encodings than the words say."""
    if r.kind != "unlearned" or RECORDED_FORMS not in r.data or tuple(forms) == BOTH_FORMS:
        return r.data
    return r.data.replace(RECORDED_FORMS, f"({forms_words(forms)}*)")


def _groups(members: dict, rs: dict[str, Recipe], order: list[str]) -> list[tuple[str, list[Recipe]]]:
    """(label, recipes): the anchors, the pool variants, the unlearning methods, each in catalogue
    order (`order`: the catalogue's names)."""
    out: dict[str, list[Recipe]] = {}
    for name in sorted(members, key=order.index):
        r, m = rs[name], members[name]
        label = name if name in ANCHORS else (f"{r.hparams['variant']} ({m['pool']})" if m["kind"] == "pool"
                                               else m["method"])
        out.setdefault(label, []).append(r)
    rank = {"full": 0, "retain": 0, "pool": 1, "unlearned": 2}
    return sorted(out.items(), key=lambda kv: rank[kv[1][0].kind])   # stable: catalogue order within a rank


def _published(label: str, rs: list[Recipe]) -> str:
    """the spec's grid for the same row: learning rates / epochs / coefficients / models."""
    if label in ANCHORS:
        return "—"
    if rs[0].kind == "pool":
        variant = rs[0].hparams["variant"]
        prefix = f"{variant.split('_')[0]}_{SPEC_VARIANTS[variant]}_lr"   # e.g. pos_retain90_forget10_bio_lr
        spec = [c for c in POOLS if c.alias.startswith(prefix)]
        coeff = "—"
    else:
        spec = [c for c in UNLEARNED if c.method == label]
        names = dict.fromkeys(k for c in spec for k, _ in c.hparams if k != "lr")
        coeff = "; ".join(f"{k} {_values(dict(c.hparams)[k] for c in spec)}" for k in names) or "—"
    lrs = _values((dict(c.hparams)["lr"] for c in spec), lr_token)
    return f"{lrs} / {_values(c.epoch for c in spec)} / {coeff} / {len(spec)}"


def models_table(protocol: dict, rs: dict[str, Recipe]) -> str:
    """One row per anchor, pool variant and unlearning method: the values its recipes take."""
    rows = []
    preset = get_preset(protocol["preset"])
    order = [r.name for r in recipes(preset)]
    for label, group in _groups(protocol["members"], rs, order):
        t = [r.train for r in group]
        rows.append([f"`{label}`", str(len(group)), group[0].parent or "—",
                     _values(trained_on(r, preset.forms) for r in group),
                     _values((x.lr for x in t), lr_token), _values(x.epochs for x in t),
                     _values(x.batch_size for x in t), _coefficients(group), _values(x.seed for x in t),
                     _values(round(x.warmup_ratio, 4) for x in t), _values(x.weight_decay for x in t),
                     _published(label, group)])
    head = ["models", "n", "from", "trained on", "learning rate", "epochs", "batch", "coefficients", "data seed",
            "warm-up (of all steps)", "weight decay",
            "spec §7 for Llama-3.2-1B: learning rate / epochs / coefficients / n"]
    return table(head, rows)


def _flat(d: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in d.items():
        out += _flat(v, f"{prefix}{k}.") if isinstance(v, dict) else [f"{prefix}{k} {v}"]
    return out


def protocol_block(path: Path) -> str:
    """The models of the campaign (grouped, beside the spec's grids) and the settings protocol.json fixes."""
    protocol = json.loads(path.read_text())
    rs = checked_recipes(protocol)
    settings, keys, members = protocol["settings"], protocol["keys"], protocol["members"]
    extra = {j: [k for k in ks if k not in keys] for j, ks in protocol["jobs"].items()}
    with_extra = [j for j, ks in extra.items() if ks]
    kinds = Counter(members[j.split("/", 1)[1]]["kind"] for j in with_extra)
    forms = get_preset(protocol["preset"]).forms
    marked = [r.name for r in rs.values() if trained_on(r, forms) != r.data]
    note = ([f"\\* The {len(marked)} unlearned recipes record their data as \"forget QA {RECORDED_FORMS}\", the "
             f"words of every preset (they enter the recipe digests, so they stay); this preset encodes the forget "
             f"and retain QA in the {forms_words(forms)} only, as the column says.", ""] if marked else [])
    lines = [models_table(protocol, rs).rstrip("\n"), "", *note,
             f"All {len(rs)} recipes above have the digests `protocol.json` records for their models (checked when "
             f"this block is rendered). The {len(protocol['jobs'])} (model, setting) jobs each measure the "
             f"{len(keys)} metrics; {len(with_extra)} of them (setting "
             f"{', '.join(sorted({j.split('/')[0] for j in with_extra}))}: "
             f"{', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}) also "
             f"{', '.join(f'`{k}`' for k in dict.fromkeys(k for j in with_extra for k in extra[j]))}.", ""]
    for name, label in (("nf4", "NF4 quantisation"), ("relearn", "relearning")):
        lines.append(f"- {label}: " + "; ".join(_flat(settings.get(name, {}))))
    lines.append("- metric settings: " + "; ".join(_flat(protocol["metric_settings"])))
    check = protocol["knowledge_check"]
    lines.append(f"- knowledge check: greedy answers of at most {check['max_new_tokens']} new tokens to "
                 + " and ".join(w.replace("_", " ") for w in check["wordings"]))
    return "\n".join(lines) + "\n"
