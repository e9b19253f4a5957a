"""`uds meta-eval --from-campaign DIR`, below the command line: the meta-evaluation assembled from
a campaign's committed files alone (no model is loaded, nothing is measured).

Writes what `uds meta-eval` writes (`meta_eval.json` with the `campaign` and `versus_published`
sections added, `results.json`, `summary.md`, `pn_histograms.png`, `quantization_scatter.png`,
`relearning_scatter.png`) and `pn_variant_histograms.png`. A file that cannot be used is said on
stderr in one line (path and why) and left out.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from uds_core import atomic
from uds_core.errors import UdsInputError
from uds_core.parity import SPEC
from meta_eval.outputs import parse_keys, report_values, write_plots


def campaign_keys(text: str, protocol: dict) -> list[str]:
    """The keys of `--metrics` (`text`), each one the campaign measured."""
    keys = parse_keys(text)
    missing = [k for k in keys if k not in protocol["keys"]]
    if missing:
        raise UdsInputError(f"the campaign did not measure {', '.join(missing)} "
                            f"(its keys: {', '.join(protocol['keys'])})")
    return keys


def settings_of(data, zoo, folder: Path, robustness: str, filters: bool) -> dict:
    """The document's `settings`: deterministic (no clock, no machine), so that the same files
    always give the same document."""
    from meta_eval.perturb import NF4, RELEARN
    from meta_eval.population import FULL, POOL, RETAIN, UNLEARNED
    from meta_eval.robustness import EPS

    p = data.protocol
    fluency = {d.get("fluency_source") for d in data.measurements.values() if d.get("kind") != POOL} - {None}
    return {"zoo": f"{p['zoo']} (campaign {folder})", "campaign": str(folder),
            "models": {k: len(zoo.of_kind(k)) for k in (UNLEARNED, POOL, FULL, RETAIN)},
            "robustness_form": robustness, "filters": filters, "eps": EPS, "parity": SPEC,
            NF4: p["settings"].get(NF4), RELEARN: p["settings"].get(RELEARN), "metric_settings": p["metric_settings"],
            "left_out": sorted(m.name for m in data.members if m.name not in data.measured_names),
            "fluency_source": sorted(fluency)}


def notes_of(doc: dict) -> list[str]:
    c = doc["campaign"]["coverage"]
    u = c["unlearned"]
    state = "complete" if c["complete"] else "PARTIAL: statistics marked n/a need more measurements"
    return [f"campaign {doc['campaign']['folder']} ({doc['campaign']['zoo']}): {state}",
            f"{c['units']} of {c['units_total']} (model, setting) units measured; pool members {c['pool_measured']} "
            f"of {c['pool_total']}; unlearned models as built {u['orig']['measured']}, NF4 {u['nf4']['measured']}, "
            f"relearned {u['relearn']['measured']} of {u['orig']['total']}",
            f"{len(doc['campaign']['left_out'])} file(s) left out (not valid)"]


def write_outputs(out: Path, doc: dict, rows: list[dict], zoo, values: dict, keys: list[str]) -> str:
    from meta_eval import plots
    from meta_eval.pool_variants import by_variant
    from meta_eval.perturb import ORIG
    from meta_eval.summary import summary_markdown

    out.mkdir(parents=True, exist_ok=True)
    atomic.write_json(out / "meta_eval.json", doc, indent=1, allow_nan=False)
    atomic.write_json(out / "results.json", rows, indent=1, allow_nan=False)
    md = summary_markdown(doc, f"Meta-evaluation of campaign {doc['campaign']['zoo']}", notes_of(doc))
    atomic.write_text(out / "summary.md", md)
    write_plots(out, doc, zoo, values, keys)
    groups = by_variant(zoo.members)
    pools = {k: {v: [values.get((ORIG, n), {}).get(k) for n in names] for v, names in groups.items()} for k in keys}
    plots.pn_variant_histograms(out / "pn_variant_histograms.png", pools,
                                {k: doc["faithfulness"][k]["auc_roc"] for k in keys})
    return md


def run_from_campaign(folder: Path, keys_text: str, robustness: str, filters: bool, out: Path | None,
                      default_out: Path, log: Callable[[str], None]) -> int:
    """Assemble the campaign in `folder` into `out` (default `default_out`/<zoo>-campaign); prints
    the summary and the document's path."""
    from meta_eval.campaign.assemble import assemble_campaign
    from meta_eval.campaign.read import campaign_zoo, read_campaign

    t0 = time.time()
    data = read_campaign(Path(folder), log=log)
    keys = campaign_keys(keys_text, data.protocol)
    doc, rows = assemble_campaign(data, keys, form=robustness, use_filters=filters)
    zoo = campaign_zoo(data, data.measured_names)
    doc["settings"] = settings_of(data, zoo, Path(folder), robustness, filters)
    doc["members"], doc["values"] = report_values(zoo, data.values, keys)
    out = Path(out) if out else default_out / f"{zoo.slug}-campaign"
    md = write_outputs(out, doc, rows, zoo, data.values, keys)
    print(md)
    print(out / "meta_eval.json")
    log(f"meta-eval: assembled from {len(data.values)} measurement files in {time.time() - t0:.1f} s "
        f"({len(data.left_out)} left out)")
    return 0
