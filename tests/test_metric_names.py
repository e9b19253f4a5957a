"""Every registered metric names itself: a label and an orientation in its registration, read from a
registry that loads without the metric stack (so `uds report` and `uds leaderboard` take them from
it and start fast)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "scipy", "sklearn", "rouge_score")


def test_the_registry_loads_without_the_metric_stack():
    code = ("import sys\nimport metrics.registry as r\n"
            f"print(len(r.REGISTRY), ','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    n, heavy = (out.stdout.strip().split(" ") + [""])[:2]
    assert int(n) >= 40 and heavy == ""        # 19 baselines, UDS, 9 utility values, fluency, model utility, probes


def test_every_registered_metric_has_a_label_and_an_orientation():
    from metrics.registry import REGISTRY
    from metrics.spec import ORIENTATIONS

    labels = {}
    for key, spec in REGISTRY.items():
        assert spec.label.strip() and spec.label != key, key          # a name for readers, not the raw key
        assert spec.orientation in ORIENTATIONS, key
        labels.setdefault(spec.label, []).append(key)
    assert {lab: keys for lab, keys in labels.items() if len(keys) > 1} == {}     # no two metrics print alike


def test_register_refuses_a_metric_without_a_label():
    from metrics.result import MetricResult
    from metrics.spec import KNOWLEDGE, MetricSpec, register

    bare = MetricSpec("unnamed_probe_metric", "memorization", KNOWLEDGE, (), lambda c: MetricResult(0.0), "x")
    with pytest.raises(ValueError, match="no label"):
        register([bare], rank=99)
    odd = MetricSpec("odd_probe_metric", "memorization", "sideways", (), lambda c: MetricResult(0.0), "x", label="Odd")
    with pytest.raises(ValueError, match="orientation"):
        register([odd], rank=99)


def test_every_registered_metric_is_named_alike_wherever_it_is_shown():
    """The names table, the report's columns and `uds leaderboard`'s html header give each registered
    metric its registration's label and orientation; none falls into the report's group "other"."""
    from uds_leaderboard.render import to_html
    from meta_eval.names import DIRECTIONS, name_of
    from metrics.registry import REGISTRY
    from uds.site.columns import column

    page = to_html([{"model": "m", "method": "npo", **{k: 0.5 for k in REGISTRY}}])
    for key, spec in REGISTRY.items():
        n = name_of(key)
        assert (n.label, n.direction) == (spec.label, spec.orientation), key
        assert n.sentence == DIRECTIONS[spec.orientation]
        c = column(key)
        assert (c["label"], c["direction"]) == (spec.label, spec.orientation), key
        assert c["group"] != "other" and c["lower_is_better"] == (spec.orientation == "knowledge"), key
    for key in ("mem_bits", "verbatim_rate"):          # registry columns outside the benchmark: by label
        assert f">{REGISTRY[key].label}<br><small>{key}</small></th>" in page


def test_the_aggregates_are_named_by_spec_6_1():
    from meta_eval.benchmark import AGGREGATE_KEYS
    from meta_eval.names import name_of
    from uds.site.columns import column

    for key in AGGREGATE_KEYS + ("overall_no_uds",):
        assert name_of(key) is not None and name_of(key).direction in ("erasure", "utility", "better"), key
    assert [column(k)["label"] for k in ("uds", "mem", "privacy", "utility_rel", "overall")] == \
        ["UDS", "Mem", "Privacy", "Utility", "Overall"]
    assert column("lr")["direction"] is None and column("lr")["group"] == "training"
    assert column("something_new")["group"] == "other" and column("something_new")["label"] == "something_new"
