"""docs/smol_meta_eval.md's blocks and the README's campaign sentence, from the meta_eval.json
`uds meta-eval --from-campaign` writes (with spec §5.5's filters and with `--no-filters`).

Every number comes from that file (its `campaign` and `versus_published` sections, and the
standard faithfulness / robustness / overall entries); the published values from
`meta_eval.published` (spec §5.7). A statistic the campaign cannot state yet shows what it needs
("needs 1 more N") in place of a number.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from uds_analyses.doc_tables.markdown import fixed, table
from uds_core.errors import UdsInputError

PLOTS = (("pn_histograms.png", "P/N histograms per metric (raw values)", True),
         ("pn_variant_histograms.png", "P/N histograms per metric, stacked by pool variant", True),
         ("quantization_scatter.png", "before vs after NF4 quantisation, per unlearned model", False),
         ("relearning_scatter.png", "before vs after relearning, per unlearned model and retain", False))


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def _ours(value: float | None, need: str | None, digits: int = 3) -> str:
    """Our value, or what it needs (italic) where the campaign cannot state it yet."""
    if need is not None and value is None:
        return f"*{need}*"
    return fixed(value, digits)


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def status_block(path: Path) -> str:
    """How far the campaign is: units, pool members, unlearned models per setting, references,
    and the files left out with why."""
    c = _doc(path)["campaign"]
    cov, un = c["coverage"], c["coverage"]["unlearned"]
    state = ("**The campaign is complete.**" if cov["complete"] else
             f"**The campaign is partial: {cov['units']} of {cov['units_total']} (model, setting) units are "
             "measured.** "
             "Every statistic below that needs more data says what it needs instead of a number; the numbers "
             "that are shown rest on the counts in this table and will move as the campaign goes on.")
    rows = [["pool members, P (knowledge present)", str(cov["pool"]["P"]["measured"]), str(cov["pool"]["P"]["total"])],
            ["pool members, N (knowledge absent)", str(cov["pool"]["N"]["measured"]), str(cov["pool"]["N"]["total"])],
            ["pool members, P and N", str(cov["pool_measured"]), str(cov["pool_total"])],
            ["unlearned models as built", str(un["orig"]["measured"]), str(un["orig"]["total"])],
            ["unlearned models NF4-quantised", str(un["nf4"]["measured"]), str(un["nf4"]["total"])],
            ["unlearned models relearned", str(un["relearn"]["measured"]), str(un["relearn"]["total"])],
            ["unlearned models in all three settings", str(cov["unlearned_all_settings"]), str(un["orig"]["total"])]]
    rows += [[f"`{job}`", _yes(done), ""] for job, done in cov["references"].items()]
    rows.append(["(model, setting) units", str(cov["units"]), str(cov["units_total"])])
    out = state + "\n\n" + table(["measured (valid files)", "n", "of"], rows)
    left = c["left_out"]
    out += f"\n{len(left)} file(s) of the campaign folder left out (not valid){':' if left else '.'}\n"
    out += "".join(f"- `{x['path']}`: {x['why']}\n" for x in left)
    return out + _compute_line(c.get("compute"))


def _compute_line(compute: dict | None) -> str:
    """The CPU time the valid files record (training of the builds, metrics of the measurements)."""
    if not compute:
        return ""
    b, m = compute["builds"], compute["measurements"]
    threads = " or ".join(str(t) for t in compute["threads"]) or "?"
    return (f"\nTime the files record: {b['n']} builds, {b['seconds'] / 3600:.1f} h of training; {m['n']} "
            f"measurements, {m['seconds'] / 3600:.1f} h of metrics ({', '.join(compute['cpus']) or 'CPU not recorded'}"
            f", {threads} torch thread(s); `uds campaign status` gives the median per kind and an ETA).\n")


def anchors_block(path: Path) -> str:
    """Which anchor builds (full, retain) the assembled measurements used, and the spread of UDS
    of models re-scored with a rebuilt pair."""
    c = _doc(path)["campaign"]
    rows = [[f"`{a['id']}`", f"`{(a['full'] or '')[:12]}`", f"`{(a['retain'] or '')[:12]}`", str(a["measurements"]),
             ", ".join(f"{s} {n}" for s, n in sorted(a["by_setting"].items())), _yes(a["recorded"])]
            for a in c["anchors"]]
    out = table(["anchor build", "full", "retain", "measurements", "by setting", "in anchors/"], rows)
    spread = [[f"`{s['anchor_build']}`", f"`{m['model']}`",
               f"`{m['committed_with']}`" if m.get("committed_with") else "n/a",
               fixed(m["uds_committed"], 6), fixed(m["uds_here"], 6),
               "n/a" if m["abs_diff"] is None else f"{m['abs_diff']:.1e}"] for s in c["spread"] for m in s["models"]]
    if spread:
        out += ("\nSpread (`spread/`): UDS of measured models re-scored with a rebuilt anchor pair (each model is "
                "trained again on that machine too).\n\n")
        out += table(["rebuilt anchors", "model", "committed with", "UDS as committed", "UDS with the rebuilt anchors",
                      "abs. ΔUDS"], spread)
    else:
        out += "\nNo spread file: the anchors were not rebuilt while measurements existed.\n"
    return out


def _pub(published: dict, key: str, field: str) -> str:
    row = published.get(key)
    return fixed(row[field]) if row else "—"


def results_block(path: Path) -> str:
    """Per metric (spec §5.7's order): ours with the published value in brackets."""
    d = _doc(path)
    faith, rob, overall, needs = d["faithfulness"], d["robustness"], d["overall"], d["campaign"]["needs"]
    un = d["campaign"]["coverage"]["unlearned"]["orig"]
    published = d["versus_published"]["published"]
    order = [k for k in published if k in faith] + [k for k in faith if k not in published]
    _pair = lambda ours, k, field: f"{ours} ({_pub(published, k, field)})"  # noqa: E731
    rows = []
    for k in order:
        f, r, n = faith[k], rob[k], needs[k]
        ci = f" [{f['ci95'][0]:.3f}, {f['ci95'][1]:.3f}]" if f.get("ci95") else ""
        auc = _ours(f["auc_roc"], n["faithfulness"]) + (ci if f["auc_roc"] is not None else "")
        rows.append([k, f"{f['n_p']} / {f['n_n']}", _pair(auc, k, "faithfulness"),
                     _pair(_ours(f["p_mean"], n["p_mean"]), k, "p_mean"),
                     _pair(_ours(f["n_mean"], n["n_mean"]), k, "n_mean"),
                     _pair(_ours(r["quantization"], n["q"]), k, "q"), _pair(_ours(r["relearning"], n["r"]), k, "r"),
                     _pair(_ours(r["agg"], n["robustness"]), k, "robustness"),
                     _pair(_ours(overall[k], n["overall"]), k, "overall"),
                     f"{r['n_kept']} / {un['measured']} / {un['total']}"])
    return table(["metric", "P / N members", "faithfulness AUC [95 % CI]", "P mean", "N mean", "Q (NF4)",
                  "R (relearn)", "robustness", "overall", "kept / measured / in the zoo"], rows)


def filters_block(path: Path) -> str:
    """Per metric, spec §5.5's two rules on the unlearned models measured as built: the threshold
    rule in the filter source's raw units, how many pass each rule, and how many pass both."""
    d = _doc(path)
    rows = []
    for key, r in d["robustness"].items():
        f = r.get("filters")
        if f is None:
            continue
        rule = f["threshold_rule"]
        text = f"`{rule['metric']}` {'≥' if rule['op'] == '>=' else '≤'} {rule['value']:.3f}" if rule else \
            "none (pools too small: every model passes)"
        rows.append([key, text, str(f["measured"]), str(f["utility_pass"]), str(f["threshold_pass"]), str(r["n_kept"])])
    return table(["metric", "knowledge-absent rule (filter source, raw value)", "unlearned, measured as built",
                  "pass utility_rel ≥ 0.8", "pass the rule", "kept (both)"], rows)


def spearman_block(path: Path) -> str:
    """Spearman's rho of our faithfulness and overall rankings against spec §5.7's, and the ranks."""
    vs = _doc(path)["versus_published"]
    lines = []
    for field, name in (("faithfulness", "faithfulness AUC"), ("overall", "overall")):
        a = vs[field]
        said = (f"ρ = {a['rho']:.3f} (two-sided p = {a['p']:.3g}) over {a['n']} metrics" if a["rho"] is not None
                else f"*{a['needs']}*")
        lines.append(f"- ranking by {name}, ours against {vs['source']}: {said}\n")
    keys = list(dict.fromkeys(k for f in ("faithfulness", "overall") for k in vs[f]["ranks"]))
    if not keys:
        return "".join(lines)
    rank = lambda f, k, i: f"{vs[f]['ranks'][k][i]:g}" if k in vs[f]["ranks"] else "—"  # noqa: E731
    rows = [[k, rank("faithfulness", k, 0), rank("faithfulness", k, 1), rank("overall", k, 0), rank("overall", k, 1)]
            for k in keys]
    return "".join(lines) + "\n" + table(["metric", "AUC rank, ours", "AUC rank, published", "overall rank, ours",
                                          "overall rank, published"], rows)


def _pair_names(d: dict) -> list[str]:
    return list(next(iter(d["campaign"]["variants"].values()))["aucs"])


def variants_block(path: Path) -> str:
    """Per metric: the AUC of each P variant against each N variant, and the pairs it confuses most."""
    d = _doc(path)
    pairs, least = _pair_names(d), d["campaign"]["min_pool"]
    rows = []
    for k, v in d["campaign"]["variants"].items():
        cells = [fixed(a["auc_roc"]) if a["auc_roc"] is not None else
                 f"*needs +{max(0, least - a['n_p'])} / +{max(0, least - a['n_n'])}*" for a in v["aucs"].values()]
        rows.append([k] + cells + [_confused_cell(v["confused"], v["aucs"])])
    return table(["metric"] + [p.replace("|", " vs ") for p in pairs] + ["confused most"], rows)


def _confused_cell(confused: list[str], aucs: dict) -> str:
    """The pair(s) at the lowest AUC (below 1) with that AUC; "none" when every pair is separated."""
    if not confused:
        return "none" if any(a["auc_roc"] is not None for a in aucs.values()) else "—"
    low = fixed(aucs[confused[0]]["auc_roc"])
    if len(confused) > 2:
        return f"{len(confused)} pairs at {low}"
    return f"{', '.join(p.replace('|', ' vs ') for p in confused)} ({low})"


def variant_means_block(path: Path) -> str:
    """Per metric: the raw mean of each pool variant (members measured in brackets)."""
    d = _doc(path)
    variants = list(next(iter(d["campaign"]["variants"].values()))["means"])
    rows = [[k] + [f"{fixed(m['mean'])} ({m['n']})" if m["mean"] is not None else "*needs 1*"
                   for m in v["means"].values()] for k, v in d["campaign"]["variants"].items()]
    return table(["metric"] + variants, rows)


def knowledge_block(path: Path) -> str:
    """The knowledge check by variant, then per built pool member (and full / retain)."""
    kn = _doc(path)["campaign"]["knowledge"]
    by = [[v, s["pool"], f"{s['n']} of {s['of']}",
           "*needs 1*" if s["mean"] is None else f"{s['mean']:.3f} [{s['min']:.3f}, {s['max']:.3f}]",
           fixed(s["paraphrased_mean"])] for v, s in kn["by_variant"].items()]
    out = table(["variant", "pool", "built", "forget questions: mean [min, max]", "paraphrased: mean"], by)
    rows = [[f"`{r['model']}`", r["pool"] or r["kind"], r["variant"], "" if r["lr"] is None else f"{r['lr']:g}",
             "" if r["epochs"] is None else str(r["epochs"]), fixed(r["forget_questions"]),
             fixed(r["paraphrased_questions"]), _yes(r["measured"])]
            for r in sorted(kn["members"], key=lambda r: (r["kind"] == "pool", r["variant"], r["lr"] or 0.0,
                                                          r["epochs"] or 0, r["model"]))]
    return (out + "\n" + _above_n_lines(kn["by_variant"]) + "\n"
            + table(["model", "pool", "variant", "lr", "epochs", "forget questions", "paraphrased", "measured"], rows))


def _above_n_lines(by_variant: dict) -> str:
    """Per P variant: how many built members carry detectable forget knowledge, read as answering
    more forget questions than every built N member, and by how many questions."""
    lines = []
    for v, s in by_variant.items():
        if s["pool"] != "P" or not s["n"]:
            continue
        if s.get("above_n") is None:
            lines.append(f"- `{v}`: *needs a built N member to compare with*")
            continue
        of = f" of {s['n_questions']}" if s.get("n_questions") else ""
        margins = ", ".join(f"{m:+d}" for m in s["margins"])
        lines.append(f"- `{v}`: {s['above_n']} of {s['n']} built members answer more forget questions than every "
                     f"built N member (the best N member: {s['n_max']:.3f}); margins over it: {margins} "
                     f"questions{of}")
    return "\n".join(lines) + "\n" if lines else ""


def plots_block(path: Path) -> str:
    """The figures beside the meta_eval.json (paths relative to the checkout's docs/, where the page
    is): the histograms shown, the scatters linked."""
    root = next(p for p in path.resolve().parents if (p / "docs").is_dir())
    rel = Path(os.path.relpath(path.resolve().parent, root / "docs")).as_posix()
    out = ""
    for name, text, shown in PLOTS:
        if (path.parent / name).is_file():
            out += f"{'!' if shown else ''}[{text}]({rel}/{name})\n\n"
    return out


# the campaign snapshot and its no-filters twin sit side by side under results/smol/
FILTERED, UNFILTERED = "campaign_meta_eval", "campaign_meta_eval_no_filters"


def _pair(path: Path) -> tuple[dict, dict]:
    """(filtered, unfiltered) snapshots beside `path` (either one's meta_eval.json)."""
    folder = path.parents[1]
    return _doc(folder / FILTERED / "meta_eval.json"), _doc(folder / UNFILTERED / "meta_eval.json")


def overall_ranks(doc: dict) -> dict[str, int]:
    """Each metric's rank (1 = best) in the order `uds meta-eval` prints its summary in (the
    document's `ranking`, written beside summary.md)."""
    if "ranking" not in doc:
        raise UdsInputError("meta_eval.json has no `ranking`: assemble it again with `uds meta-eval --from-campaign`")
    return {k: i for i, k in enumerate(doc["ranking"], 1)}


def filters_effect_block(path: Path) -> str:
    """Per metric, ordered by overall with spec §5.5's filters: Q, R and overall over the unlearned
    models the filters keep, beside the same over every measured unlearned model."""
    on, off = _pair(path)
    rank_on, rank_off = overall_ranks(on), overall_ranks(off)
    rows = []
    for k in rank_on:
        a, b = on["robustness"][k], off["robustness"][k]
        rows.append([k, fixed(on["faithfulness"][k]["auc_roc"]), str(a["n_kept"]), fixed(a["quantization"]),
                     fixed(a["relearning"]), fixed(on["overall"][k]), str(rank_on[k]), str(b["n_kept"]),
                     fixed(b["quantization"]), fixed(b["relearning"]), fixed(off["overall"][k]), str(rank_off[k])])
    return table(["metric", "faithfulness AUC", "kept", "Q", "R", "overall", "rank", "all", "Q, all", "R, all",
                  "overall, all", "rank, all"], rows)


def _at_top(faith: dict, key: str) -> int:
    """How many metrics share `key`'s faithfulness AUC (to the 3 decimals shown)."""
    auc = faith[key]["auc_roc"]
    return 0 if auc is None else sum(f["auc_roc"] is not None and round(f["auc_roc"], 3) == round(auc, 3)
                                     for f in faith.values())


def readme_block(path: Path) -> str:
    """The campaign's result for the README: coverage, UDS's faithfulness and overall with and
    without the filters (and how many models its robustness rests on), and rank agreement with the
    published table."""
    on, off = _pair(path)
    cov, vs, n_keys = on["campaign"]["coverage"], on["versus_published"], len(on["overall"])
    state = "complete" if cov["complete"] else "partial, the numbers below move as it goes on"
    auc, pub = fixed(on["faithfulness"]["uds"]["auc_roc"]), vs["published"].get("uds", {})
    r_on, r_off = on["robustness"]["uds"], off["robustness"]["uds"]
    rank_on, rank_off = overall_ranks(on)["uds"], overall_ranks(off)["uds"]
    rho = lambda a: "n/a" if a["rho"] is None else f"{a['rho']:.3f}"  # noqa: E731
    return (f"Campaign {state}: {cov['units']} of {cov['units_total']} (model, setting) units; "
            f"{cov['pool']['P']['measured']} P / {cov['pool']['N']['measured']} N pool members. UDS separates them "
            f"with faithfulness AUC {auc} (spec §5.7: {fixed(pub.get('faithfulness'))}; "
            f"{_at_top(on['faithfulness'], 'uds')} of the {n_keys} metrics reach {auc} on these pools). "
            f"With spec §5.5's filters its overall is {fixed(on['overall']['uds'])}, rank {rank_on} of {n_keys}, "
            f"but its Q and R rest on the {r_on['n_kept']} of {cov['unlearned']['orig']['measured']} unlearned "
            f"models the filters keep; over all {r_off['n_kept']} (no filters) Q {fixed(r_off['quantization'])}, "
            f"R {fixed(r_off['relearning'])}, overall {fixed(off['overall']['uds'])}, rank {rank_off} of {n_keys}. "
            f"Rank agreement with the published table (Spearman ρ over {vs['faithfulness'].get('n')} metrics): "
            f"{rho(vs['faithfulness'])} by faithfulness AUC, {rho(vs['overall'])} by overall. "
            + _reproduce_line(on["campaign"]["spread"]) + "\n")


def _reproduce_line(spread: list[dict]) -> str:
    """How exactly the numbers come back: exactly from the files; within the re-scored spread of UDS
    when models are measured again on rebuilt anchors."""
    diffs = [m["abs_diff"] for s in spread for m in s["models"] if m["abs_diff"] is not None]
    again = (f"measured again on another machine (rebuilt full and retain), UDS moved by at most {max(diffs):.1e} "
             f"({len(diffs)} model(s) re-scored)" if diffs else "no model was re-scored on rebuilt anchors")
    return f"`uds meta-eval --from-campaign` re-assembles these numbers exactly from the committed files; {again}."
