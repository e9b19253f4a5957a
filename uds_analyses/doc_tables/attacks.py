"""docs/smol_attacks.md's blocks: the attack campaign's protocol (from its protocol.json) and its
result (from the snapshot `uds attack --from-campaign` writes, result.json). Files only: a block
whose file does not exist yet says so and how it comes."""

from __future__ import annotations

import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Callable

from uds_analyses.doc_tables.markdown import table

ASSEMBLE = ("uds attack --from-campaign results/smol/attack_campaign --legacy results/smol/campaign "
            "--out results/smol/attack_result")


def _fmt(v, digits: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}"


def _ci(r: dict) -> str:
    if r.get("rho") is None:
        return f"n/a (n = {r['n']})"
    ci = r.get("ci95")
    return f"{r['rho']:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")


def _snapshot(render: Callable[[dict], str]) -> Callable[[Path], str]:
    """A renderer of result.json that says, while it does not exist, that no unit is assembled yet."""
    def block(path: Path) -> str:
        if not path.is_file():
            return (f"No result yet: the attack campaign has no assembled unit. Once units are committed, "
                    f"`{ASSEMBLE}` writes {path.name} and `python benchmarks/doc_tables.py` this block.\n")
        return render(json.loads(path.read_text()))
    return block


def _status(doc: dict) -> str:
    c = doc["campaign"]
    left = f"{len(c['left_out'])} file(s) left out (not valid)." if c["left_out"] else "No file left out."
    interim = (" **Interim**: the campaign is not finished, so every table below covers only the models measured "
               "so far and will change." if c["units"] < c["units_total"] else "")
    return (f"{c['units']} of {c['units_total']} units measured (valid files assembled). {left}{interim}\n"
            + _provenance(doc.get("provenance")))


def _provenance(pv: dict | None) -> str:
    """On which CPUs the units ran, and what scoring again under rebuilt anchors changed."""
    if not pv:
        return ""
    where = ", ".join(f"{cpu} ({n})" for cpu, n in sorted(pv["cpus"].items(), key=lambda kv: -kv[1]))
    lines = [f"\nMeasured on: {where} measurement files."]
    for aid, b in pv["anchor_builds"].items():
        if b["rescored"]:
            worst = sorted(b["largest_abs_diff"].items(), key=lambda kv: -kv[1])
            top = ", ".join(f"`{k}` {v:.1e}" for k, v in worst[:3])
            lines.append(f" Anchors rebuilt on {b['cpu']} (`{aid[:12]}`): {b['rescored']} measured models scored "
                         f"again under them, largest |difference| {top}"
                         + (f" (`uds` {b['largest_abs_diff']['uds']:.1e})" if "uds" in b["largest_abs_diff"]
                            and all(k != "uds" for k, _ in worst[:3]) else "") + ".")
    return "".join(lines) + "\n"


def _rho(doc: dict) -> str:
    attacks = doc["attacks"]
    rows = [[f"`{k}`", _ci(doc["rho_strongest"][k]), str(doc["rho_strongest"][k]["n"])]
            + [_ci(doc["rho_by_attack"][a][k]).split(" [")[0] for a in attacks] for k in doc["keys"]]
    return table(["metric", "rho with the strongest attack [95 % CI]", "models"] + [f"`{a}`" for a in attacks], rows)


def _auc(doc: dict) -> str:
    vs_c, vs_l = doc["auc_suppressed_vs_controls"], doc.get("auc_suppressed_vs_legacy_n") or {}

    def cell(f: dict | None) -> str:
        if not f or f["auc_roc"] is None:
            return "n/a"
        ci = f["ci95"]
        return f"{f['auc_roc']:.3f} [{ci[0]:.3f}, {ci[1]:.3f}] ({f['n_p']} / {f['n_n']})"
    rows = [[f"`{k}`", cell(vs_c.get(k)), cell(vs_l.get(k))] for k in doc["keys"]]
    return table(["metric", "suppressed vs N controls (rebuilt here)", "suppressed vs the meta-evaluation's N pool"],
                 rows)


def _labels(doc: dict) -> str:
    lc = doc["label_check"]
    names = {"suppressed": "suppressed (S)", "parents": "their P parents", "controls": "N controls"}
    rows = [[names[g], str(len(lc["members"][g])), _fmt(lc["means"][g]["plain"]), _fmt(lc["means"][g]["relearn"])]
            for g in ("suppressed", "parents", "controls")]
    return table(["members", "n", "plain: share answered with the entity", "relearn: held-out half"], rows)


def _recovered(doc: dict) -> str:
    rec = doc["recovered"]
    retain = rec["retain"] or {}
    rows = [["retain", *(_fmt(retain.get(a)) for a in doc["attacks"]), "—"]]
    for model, above in sorted(rec["above_retain"].items()):
        if model == "retain":
            continue
        best = rec["strongest"].get(model)
        rows.append([f"`{model}`", *("n/a" if above.get(a) is None else f"{above[a]:+.2f}" for a in doc["attacks"]),
                     "n/a" if best is None else f"`{best['attack']}` {best['above_retain']:+.2f}"])
    return table(["model", *(f"`{a}`" for a in doc["attacks"]), "strongest"], rows)


def _spread(doc: dict) -> str:
    sp = doc["spread_vs_legacy"]
    if not sp["models"]:
        return "No model measured in both campaigns yet.\n"
    same = sum(m["same_build"] for m in sp["models"].values())
    rows = [[f"`{k}`", str(v["n"]), _fmt(v["max"], 4), _fmt(v["median"], 4)] for k, v in sp["keys"].items()]
    return (f"{len(sp['models'])} models measured as built in both campaigns; {same} of them rebuilt bit for bit "
            "(the same fingerprint).\n\n" + table(["metric", "models", "largest |rebuilt - committed|", "median"],
                                                  rows))


def _unlearned(doc: dict) -> list[str]:
    """The unlearned models: every attacked model that is neither an anchor nor in the label check."""
    pools = {m for group in doc["label_check"]["members"].values() for m in group}
    return sorted(m for m in doc["recovered"]["strongest"] if m not in pools | {"full", "retain"})


def _predictors(doc: dict) -> list[str]:
    """Which metrics predict the strongest attack, where UDS ranks, and whether the intervals settle it."""
    rs = doc["rho_strongest"]
    ranked = sorted((k for k in doc["keys"] if rs[k].get("rho") is not None), key=lambda k: -rs[k]["rho"])
    if not ranked:
        return ["No metric has a rank correlation yet (too few unlearned models measured)."]
    top = ranked[0]
    uds = ""
    if "uds" in ranked:
        rank = ranked.index("uds") + 1
        uds = f"; `uds` ranks {rank} of {len(ranked)}" + (f" with {_ci(rs['uds'])}" if rank > 3 else "")
    reach = [k for k in ranked[1:] if rs[k].get("ci95") and rs[k]["ci95"][1] >= rs[top]["rho"]]
    above0 = [k for k in ranked if rs[k].get("ci95") and rs[k]["ci95"][0] > 0]
    return [f"- **Predicting the strongest attack** (over {rs[top]['n']} unlearned models): "
            + ", ".join(f"`{k}` {_ci(rs[k])}" for k in ranked[:3]) + uds + ".",
            f"- {len(above0)} of {len(ranked)} metrics have an interval above 0; {len(reach)} other metrics' "
            f"intervals reach `{top}`'s rho, so these models do not settle the order among those."]


def _strongest_attacks(doc: dict) -> list[str]:
    """How often each attack is the strongest on an unlearned model, and what it recovers there."""
    best = [b for m in _unlearned(doc) if (b := doc["recovered"]["strongest"].get(m))]
    if not best:
        return []
    counts = Counter(b["attack"] for b in best)
    gains = [b["above_retain"] for b in best]
    return ["- **The strongest attack** per unlearned model: "
            + ", ".join(f"`{a}` for {n}" for a, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
            + f"; what it recovers above the retain model: median {statistics.median(gains):+.2f}, largest "
            f"{max(gains):+.2f} (the share of forget questions answered with the entity)."]


def _label(doc: dict) -> list[str]:
    """The suppressed pool's label against the N controls: plain answers, then relearning."""
    means = doc["label_check"]["means"]
    s, n = means["suppressed"], means["controls"]
    if None in (s["plain"], n["plain"], s["relearn"], n["relearn"]):
        return []
    side = "at or below" if s["plain"] <= n["plain"] else "above"
    return [f"- **The suppressed pool's label**: its plain answers name the entity for {s['plain']:.3f} of the "
            f"questions, {side} the N controls' {n['plain']:.3f}; relearning on one half brings the other back to "
            f"{s['relearn']:.3f} against the controls' {n['relearn']:.3f}."]


def _fooled(doc: dict) -> list[str]:
    """How many metrics separate the suppressed pool from the N controls, and which read it as empty."""
    auc = {k: v["auc_roc"] for k, v in doc["auc_suppressed_vs_controls"].items() if v and v["auc_roc"] is not None}
    if not auc:
        return []
    perfect = [k for k in doc["keys"] if auc.get(k) == 1.0]
    fooled = [k for k in doc["keys"] if k in auc and auc[k] <= 0.5]
    uds = f"; `uds` {auc['uds']:.3f}" if "uds" in auc and "uds" not in perfect else ""
    below = ("; at or below chance, i.e. they read the refusing models as knowing no more than the controls: "
             + ", ".join(f"`{k}` {auc[k]:.3f}" for k in fooled)) if fooled else ""
    return [f"- **Suppressed against N controls**: {len(perfect)} of {len(auc)} metrics separate them perfectly "
            f"(AUC 1){uds}{below}."]


def _findings(doc: dict) -> str:
    """The page's answer in sentences: which metrics predict the strongest attack, where UDS stands,
    which attack is strongest, whether the suppressed pool's label holds, and which metrics it fools."""
    lines = _predictors(doc)
    if len(lines) == 1:   # no rank correlation yet: nothing else is worth a sentence either
        return lines[0] + "\n"
    return "\n".join(lines + _strongest_attacks(doc) + _label(doc) + _fooled(doc)) + "\n"

status_block = _snapshot(_status)
rho_block = _snapshot(_rho)
auc_block = _snapshot(_auc)
labels_block = _snapshot(_labels)
recovered_block = _snapshot(_recovered)
spread_block = _snapshot(_spread)
findings_block = _snapshot(_findings)


def protocol_block(path: Path) -> str:
    """The attack campaign's protocol: its units, the attacks and their recipes, the suppressed pool."""
    p = json.loads(path.read_text())
    attack = p["settings"]["attack"]
    kinds: dict[str, int] = {}
    for m in p["members"].values():
        label = m["kind"] + (f" ({m['pool']})" if m["pool"] else "")
        kinds[label] = kinds.get(label, 0) + 1
    units: dict[str, int] = {}
    for job in p["jobs"]:
        units[job.split("/")[0]] = units.get(job.split("/")[0], 0) + 1
    rows = [[f"`{n}`", json.dumps(r, sort_keys=True)] for n, r in attack["attacks"].items()]
    s = attack["settings"]
    return ("Members: " + ", ".join(f"{n} {k}" for k, n in kinds.items()) + "; units: "
            + ", ".join(f"{n} {u}" for u, n in units.items()) + f" ({len(p['jobs'])} in all). Attack settings: "
            f"seed {s['seed']}, answers of at most {s['max_new_tokens']} new tokens, relearning at lr "
            f"{s['relearn_lr']:g} for {s['relearn_epochs']} epochs (batch {s['relearn_batch']}), "
            f"{s['fewshot_k']} few-shot examples. Recipe digests of scheme {p['recipe_scheme']}; measuring code "
            f"`{p['measure_code']}`; fixed at commit `{(p.get('fixed_at') or {}).get('commit')}`.\n\n"
            + table(["attack", "recipe (as protocol.json records it)"], rows))
