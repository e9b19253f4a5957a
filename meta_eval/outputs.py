"""What both ways of `uds meta-eval` write and read alike: the key list, the values `uds report`
draws from and the plots (measuring a zoo; assembling a campaign's files, `campaign.outputs`)."""

from __future__ import annotations

from pathlib import Path

from uds_core.errors import UdsInputError
from uds_core.numbers import finite_or_none


def parse_keys(text: str) -> list[str]:
    from metrics.registry import META_KEYS, PROBE_META_KEYS

    names = [k.strip() for k in text.split(",") if k.strip()]
    # `all` is the meta-evaluated keys (META_KEYS); it combines with named extras (`all,mem_bits`)
    keys = list(dict.fromkeys(k for n in names for k in (META_KEYS if n == "all" else (n,))))
    valid = META_KEYS + PROBE_META_KEYS
    bad = [k for k in keys if k not in valid]
    if bad or not keys:
        raise UdsInputError(f"unknown metric {', '.join(bad) or repr(text)}; valid: all, {', '.join(valid)}")
    return keys


def report_values(zoo, values: dict, keys: list[str]) -> tuple[dict, dict]:
    """What `uds report` draws its P/N histograms and robustness scatters from: every member's
    kind / method / pool, and the raw values of the judged keys per setting and model."""
    members = {m.name: {"kind": m.kind, "method": m.method, "pool": m.pool} for m in zoo.members}
    by_setting: dict[str, dict] = {}
    for (setting, name), vals in values.items():
        by_setting.setdefault(setting, {})[name] = {k: finite_or_none(vals.get(k)) for k in keys}
    return members, by_setting


def write_plots(out: Path, doc: dict, zoo, values: dict, keys: list[str]) -> list[Path]:
    from meta_eval import plots
    from meta_eval.perturb import NF4, ORIG, RELEARN
    from meta_eval.population import POOL, RETAIN, UNLEARNED

    pools = {k: tuple([values.get((ORIG, m.name), {}).get(k) for m in zoo.of_kind(POOL) if m.pool == lab]
                      for lab in ("P", "N")) for k in keys}
    auc = {k: doc["faithfulness"][k]["auc_roc"] for k in keys}
    paths = [plots.pn_histograms(out / "pn_histograms.png", pools, auc)]
    retain = zoo.member(RETAIN).name
    for setting, fname, score, title in ((NF4, "quantization_scatter.png", "quantization", "NF4 quantisation"),
                                         (RELEARN, "relearning_scatter.png", "relearning", "relearning")):
        points = {k: [(values.get((ORIG, m.name), {}).get(k), values.get((setting, m.name), {}).get(k),
                       m.name in doc["robustness"][k]["kept"]) for m in zoo.of_kind(UNLEARNED)] for k in keys}
        ret = {k: (values.get((ORIG, retain), {}).get(k), values.get((RELEARN, retain), {}).get(k))
               for k in keys} if setting == RELEARN else None
        qr = {k: doc["robustness"][k][score] for k in keys}
        paths.append(plots.before_after(out / fname, f"{title}: raw value before vs after", points, qr,
                                        "Q" if setting == NF4 else "R", ret))
    return paths
