"""The registered probe metrics (spec-probes §2.6): `verbatim_rate` (prefix level) and
`semantic_acc`, on the forget documents, knowledge orientation (higher = more remembered).

The corpus is the evaluation data's forget items (targets, grouped by author) with the holdout
items as distractors (matched against, not probed); greedy + 5 samples at T = 0.3, seed 0, the
the spec's defaults. The probe rows are computed once per model per run (the context's work cache).
Registered through the entry point `uds.metrics` (pyproject.toml), as any family defined outside
`metrics.families` is.
"""

from __future__ import annotations

from metrics.spec import KNOWLEDGE, MODEL, MetricSpec, Use, register
from metrics.result import MetricResult
from metrics.work import WorkKey

METRIC_LEVEL = "prefix"


def probe_rows(ctx, role: str) -> list[dict]:
    """Prefix-level probe rows of the role's model on the forget documents (memoised)."""
    # the probe (torch, transformers): imported when the metric runs, not when it registers
    from uds_analyses.probe.corpus import qa_corpus
    from uds_analyses.probe.refusal import RefusalDetector, default_phrases
    from uds_analyses.probe.run import ProbeSettings, probe_model

    spec = ctx.models.spec(role)

    def make() -> list[dict]:
        s = ctx.settings
        passages = qa_corpus(list(ctx.split("forget")), {"holdout": list(ctx.splits.get("holdout") or [])},
                             "forget")
        settings = ProbeSettings(levels=(METRIC_LEVEL,), probe_distractors=False, batch_size=s.batch_size,
                                 system_prompt=s.system_prompt, device=s.device, progress=s.progress)
        return probe_model(ctx.models.get(role), ctx.tokenizer, passages, settings,
                           RefusalDetector(default_phrases()), desc=f"{spec} probe")
    return ctx.work.memo(WorkKey("probe", (spec,), (METRIC_LEVEL,)), make)


def _per_passage(rows: list[dict], key: str) -> list[float | None]:
    """Mean of `key` over each passage's samples, in passage order (None where undefined)."""
    by: dict[int, list[bool]] = {}
    for r in rows:
        if r["level"] == METRIC_LEVEL and not r["reprobe"]:
            by.setdefault(r["passage"], [])
            if r[key] is not None:
                by[r["passage"]].append(bool(r[key]))
    return [sum(v) / len(v) if v else None for _, v in sorted(by.items())]


def _result(values: list[float | None]) -> MetricResult:
    vals = [v for v in values if v is not None]
    return MetricResult(sum(vals) / len(vals) if vals else None, values)


def verbatim_rate(ctx, role: str = "model") -> MetricResult:
    """Share of prefix-level outputs (greedy + samples) that reproduce their forget passage."""
    return _result(_per_passage(probe_rows(ctx, role), "verbatim"))


def semantic_acc(ctx, role: str = "model") -> MetricResult:
    """Share of QA answers (greedy + samples) that contain the forget item's gold entity."""
    return _result(_per_passage(probe_rows(ctx, role), "semantic"))


register([
    MetricSpec("verbatim_rate", "memorization", KNOWLEDGE, (Use("probe", (MODEL,), "forget", (METRIC_LEVEL,)),),
               verbatim_rate,
               "share of prefix-level outputs (greedy + 5 samples, T 0.3) reproducing the forget passage "
               "(character LCS >= 50, distractor-attributed; spec-probes §2.4)", group="probe",
               label="Verbatim rate"),
    MetricSpec("semantic_acc", "memorization", KNOWLEDGE, (Use("probe", (MODEL,), "forget", (METRIC_LEVEL,)),),
               semantic_acc,
               "share of QA answers (greedy + 5 samples, T 0.3) containing the forget item's entity", group="probe",
               label="Semantic accuracy"),
], rank=80)
