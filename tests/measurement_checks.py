"""Checks shared by the tests of the fast measurement paths: one measurement on both
paths, and the comparison of the two."""

from __future__ import annotations

from typing import Callable, Sequence

from metrics.context import EvalContext

TOL = 1e-6   # metric values: both paths within this


def metric_runs(make_ctx: Callable[[bool], EvalContext], keys: Sequence[str]) -> dict[bool, tuple[dict, dict]]:
    """(results, generations by work key) of `keys` on the straightforward and the fast path."""
    from metrics.registry import evaluate

    out = {}
    for fast in (False, True):
        ctx = make_ctx(fast)
        results = evaluate(ctx, list(keys))
        gens = {k: [g.ids for g in ctx.work.peek(k)] for k in ctx.work.keys() if k.kind == "gen"}
        out[fast] = (results, gens)
    return out


def assert_same_measurement(runs: dict[bool, tuple[dict, dict]]) -> None:
    """Every value within TOL (per item 1e-5), every generation token for token."""
    (slow, gens_slow), (fast, gens_fast) = runs[False], runs[True]
    assert list(slow) == list(fast)
    for key in slow:
        a, b = slow[key], fast[key]
        if a.value is None or b.value is None:
            assert a.value is None and b.value is None, key
            continue
        assert abs(a.value - b.value) <= TOL, (key, a.value, b.value)
        for x, y in zip(a.per_example or [], b.per_example or []):
            assert (x is None) == (y is None) and (x is None or abs(x - y) <= 1e-5), key
    assert gens_slow and gens_slow == gens_fast
