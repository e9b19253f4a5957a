"""What one metric returns: its value, per-item values and extra information."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class MetricResult:
    value: float | None                  # None when the metric is undefined for this model
    per_example: list | None = None      # per-item values (None entries = item skipped)
    info: dict = field(default_factory=dict)   # e.g. {"fluency_source": ...}
