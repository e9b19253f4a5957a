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

