"""UDS as a registry metric (spec §2, 5.2): the engine with the evaluated model as the S2
source and the full/retain anchors as references. Erasure orientation (1 = as erased as retain).
Under parity `reference` the engine patches the post-final-norm state into the last layer, as
`uds score --parity reference` (`--reference-last-layer`) does.

S1 (retain -> full) depends only on the anchors and the inputs: it comes from the same on-disk
S1 cache as `uds score` (`uds_core.s1_cache.cached_uds`), and is kept in the context's work cache so a
run that measures many models reads it once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from uds_core.formula import TAU
from metrics.result import MetricResult
from metrics.spec import ERASURE, FULL, MODEL, RETAIN, MetricSpec, Use, register
from metrics.work import WorkKey

if TYPE_CHECKING:
    from metrics.context import EvalContext


def uds_result(ctx: EvalContext) -> MetricResult:
    """Mean UDS over scored items (spec §2.5), per-item values (None = no KE layer or skipped)."""
    # the engine (torch): imported when the metric runs, not when it registers
    from uds_core.engine import EngineSettings, UdsModels
    from uds_core.prompts import Examples
    from uds_core.s1_cache import CacheUse, cached_uds

    items, skipped = ctx.uds_items()
    # parity reference: the reference's last-layer quirk (`uds score --parity reference`)
    settings = EngineSettings(batch_size=ctx.settings.batch_size, reference_last_layer=ctx.settings.reference)
    full = ctx.models.get(FULL)
    memo = WorkKey("s1", (ctx.models.spec(FULL), ctx.models.spec(RETAIN)), (settings,))
    models = UdsModels(full, ctx.models.get(RETAIN), ctx.models.get(MODEL))
    examples = Examples(items, skipped, ctx.uds_records, ctx.pad_id)
    cache = CacheUse(next(full.parameters()).dtype, ctx.settings.device)
    run = cached_uds(models, examples, settings, cache, tau=TAU, s1=ctx.work.peek(memo))
    ctx.work.memo(memo, lambda: run.result.s1)
    result = run.result
    per_item = {it.idx: v for it, v in zip(result.items, result.uds)}
    return MetricResult(result.mean, [per_item.get(r["idx"]) for r in ctx.uds_records],
                        {"n_scored": sum(v is not None for v in result.uds), "n_skipped": len(skipped)})


register([
    MetricSpec("uds", "representation", ERASURE, (Use("uds", (MODEL, FULL, RETAIN)),), uds_result,
               "Unlearning Depth Score: S2 (model -> full) over S1 (retain -> full) patching damage", group="uds",
               label="UDS"),
], rank=60)
