"""The report's data model: what the readers found in the given paths, one object per result."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from uds_core.curves import Curve


@dataclass
class ScoreRun:
    """One `uds score` folder. `examples`: the examples.jsonl records (per-layer lists of length
    `layers`), each with `question` / `answer` / `entity` added where the data file was found."""
    name: str
    source: Path
    summary: dict
    examples: list[dict]


@dataclass
class MetricsRun:
    """One `uds metrics` metrics.json (`kind` "metrics"; `name` a checkpoint spec), or one
    Open-Unlearning TOFU_SUMMARY.json (`kind` "ou"; `name` a model name): key -> value (None = undefined)."""
    name: str
    source: Path
    metrics: dict[str, float | None]
    kind: str = "metrics"


@dataclass
class RowsFile:
    """Per-model records of one file: a leaderboard or benchmark table (`kind` "leaderboard"; each
    record has `model`), the reference's published table (`kind` "published": the
    `{"models": [...], "full_utility": {...}}` layout of spec §6.2, its fields mapped to raw keys) or
    a zoo build manifest (`kind` "build"; `name`, `kind`, `hparams`, `train`, `train_seconds`).
    `full_utility`: U_full per epoch group where the file states it (spec §6.2)."""
    source: Path
    rows: list[dict]
    kind: str = "leaderboard"
    full_utility: dict[str, float] = field(default_factory=dict)


@dataclass
class MetaEval:
    """One `uds meta-eval` meta_eval.json, with its folder's plots (PNG paths) when present."""
    source: Path
    doc: dict
    images: dict[str, Path] = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)   # results.json beside it (benchmark rows)


@dataclass
class ProbeRun:
    """One `uds probe` summary.json (models -> levels -> rates)."""
    source: Path
    doc: dict
    image: Path | None = None


@dataclass
class AuditRun:
    """One `uds audit` summary.json (variants, cells)."""
    source: Path
    doc: dict
    image: Path | None = None


@dataclass
class Results:
    """Everything found, plus (path, reason) for every file or folder that was passed over."""
    scores: list[ScoreRun] = field(default_factory=list)
    metrics: list[MetricsRun] = field(default_factory=list)
    tables: list[RowsFile] = field(default_factory=list)    # leaderboard / benchmark rows, build manifests
    meta: list[MetaEval] = field(default_factory=list)
    probes: list[ProbeRun] = field(default_factory=list)
    audits: list[AuditRun] = field(default_factory=list)
    curves: list[Curve] = field(default_factory=list)      # curve files of training callbacks
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)       # the paths given, in order (precedence)

    def empty(self) -> bool:
        return not (self.scores or self.metrics or self.tables or self.meta or self.probes or self.audits
                    or self.curves)

    def n_rows(self) -> int:
        """Records in all leaderboard files and build manifests."""
        return sum(len(t.rows) for t in self.tables)
