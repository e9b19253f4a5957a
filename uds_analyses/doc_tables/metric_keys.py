"""docs/design.md's metric keys: every registered metric, rendered from the registry itself
(`metrics.registry`), so the page lists a new metric as soon as its family file registers it and
`python benchmarks/doc_tables.py` is run (`--check` and tests/test_doc_tables.py fail until then)."""

from __future__ import annotations

from pathlib import Path

from uds_analyses.doc_tables.markdown import table


def _keys(keys: tuple[str, ...]) -> str:
    return "`" + " ".join(keys) + "`"


def metric_keys_block(_source: Path) -> str:
    """The key lists of the registry's groups, with their counts, then one row per registered
    metric: key, label, group, category, orientation and the module that registers it. `_source`
    (metrics/registry.py) is named for the reader; the registry is read by importing it."""
    from metrics.registry import BASELINE_KEYS, BASELINE_METRICS, META_KEYS, PROBE_META_KEYS, REGISTRY, keys_of

    settings = {m: sum(REGISTRY[k].metric == m for k in BASELINE_KEYS) for m in BASELINE_METRICS}
    variants = "".join(f"; `{m}_*` is one metric measured at {n} settings" for m, n in settings.items() if n > 1)
    text = (f"- the {len(META_KEYS)} meta-evaluated keys: the {len(BASELINE_METRICS)} baseline metrics "
            f"({len(BASELINE_KEYS)} keys{variants}) and UDS: {_keys(META_KEYS)} ([spec §4](spec.md#4));\n"
            f"- utility keys: {_keys(keys_of('utility'))} ([spec §4.6](spec.md#4.6));\n"
            f"- probe metrics ([spec-probes](spec-probes.md)): {_keys(PROBE_META_KEYS)}, meta-evaluated when "
            f"named (not among the {len(META_KEYS)});\n"
            f"- diagnostics, computed when named: {_keys(keys_of('diagnostic'))}.\n\n")
    rows = [[f"`{k}`", s.label, s.group, s.category, s.orientation, f"`{s.compute.__module__}`"]
            for k, s in REGISTRY.items()]
    return text + table(["key", "label", "group", "category", "orientation", "registered by"], rows)
