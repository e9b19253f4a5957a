"""UDS as a registry metric (SPEC.md 2, 5.2): the engine with the evaluated model as the S2
source and the full/retain anchors as references. Erasure orientation (1 = as erased as retain).
Under parity `reference` the engine patches the post-final-norm state into the last layer, as
`uds score --parity reference` (`--reference-last-layer`) does.

S1 (retain -> full) depends only on the anchors and the inputs: it comes from the same on-disk
S1 cache as `uds score` (same key), and is kept in the context so a run computes it once.
"""

from __future__ import annotations

from metrics.context import EvalContext
from metrics.result import MetricResult
from metrics.work import WorkKey
from uds import engine, s1_cache
from uds.engine import EngineSettings
from uds.fingerprint import model_fingerprint


def _s1(ctx: EvalContext, settings: EngineSettings):
    """The anchors' S1 scores for the context's items: memo, else disk cache, else computed."""
    full, retain = ctx.models.get("full"), ctx.models.get("retain")
    items = ctx.uds_items()[0]

    def make():
        param = next(full.parameters())
        fps = {"full": model_fingerprint(full), "retain": model_fingerprint(retain)}
        key = s1_cache.s1_key(fps, list(ctx.uds_records), items, settings, param.dtype, ctx.settings.device, full)
        cached = s1_cache.load_s1(key, items)
        if cached is None:
            cached = engine.score_pair(full, retain, items, settings, ctx.pad_id)
            s1_cache.save_s1(key, items, cached)
        return cached
    return ctx.work.memo(WorkKey("s1", (ctx.models.spec("full"), ctx.models.spec("retain")), (settings,)), make)


def uds_result(ctx: EvalContext) -> MetricResult:
    """Mean UDS over scored items (SPEC 2.5), per-item values (None = no KE layer or skipped)."""
    items, skipped = ctx.uds_items()
    # parity reference: the reference's last-layer quirk (`uds score --parity reference`)
    settings = EngineSettings(batch_size=ctx.settings.batch_size, reference_last_layer=ctx.settings.reference)
    result = engine.compute_uds(ctx.models.get("full"), ctx.models.get("retain"), ctx.models.get("model"),
                                items, settings, skipped=skipped, s1=_s1(ctx, settings), pad_id=ctx.pad_id)
    per_item = {it.idx: v for it, v in zip(result.items, result.uds)}
    return MetricResult(result.mean, [per_item.get(r["idx"]) for r in ctx.uds_records],
                        {"n_scored": sum(v is not None for v in result.uds), "n_skipped": len(skipped)})
