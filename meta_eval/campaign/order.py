"""The order in which a campaign takes its zoo's members: anchors first, then the pool members and
unlearned models interleaved so that a partial campaign already has both pools and every method."""

from __future__ import annotations

from typing import Sequence

from meta_eval.population import FULL, POOL, RETAIN, UNLEARNED, Member, Zoo


def campaign_order(zoo: Zoo) -> list[Member]:
    """Anchors first (full, retain), then pool members and unlearned models merged in proportion
    (each queue keeps its zoo order, the unlearned one by learning-rate rank: every method's
    middle rate first), so that any prefix of the campaign holds both pools and every method."""
    anchors = [m for m in zoo.members if m.kind in (FULL, RETAIN)]
    return anchors + merge_queues([_spread_pool_order(zoo.of_kind(POOL)), _rate_rank_order(zoo.of_kind(UNLEARNED))])


def merge_queues(queues: Sequence[Sequence]) -> list:
    """The items of every queue, each queue in its own order, merged in proportion (item i of a
    queue of n at i / n; ties: the earlier queue first). Empty queues are skipped."""
    queues = [q for q in queues if q]
    merged = sorted(((i / len(q), qi, i) for qi, q in enumerate(queues) for i in range(len(q))))
    return [queues[qi][i] for _, qi, i in merged]


def _rate_rank_order(members: Sequence[Member]) -> list[Member]:
    """Each method's models by rank of their position in the zoo: rank 1 (the middle of three
    learning rates) of every method, then rank 0, then rank 2, ..."""
    by_method: dict[str | None, list[Member]] = {}
    for m in members:
        by_method.setdefault(m.method, []).append(m)
    depth = max((len(v) for v in by_method.values()), default=0)
    ranks = ([1, 0] + list(range(2, depth))) if depth > 1 else list(range(depth))
    return [v[r] for r in ranks for v in by_method.values() if r < len(v)]


def _spread_pool_order(members: Sequence[Member]) -> list[Member]:
    """Pool members point by point (a point = one learning rate and epoch count), the points in
    an order that spreads over the grid (0, 5, 2, 7, ...), P and N variants alternating inside."""
    points: dict[str, list[Member]] = {}
    for m in members:
        points.setdefault(m.name.split("_", 2)[-1], []).append(m)
    keys = list(points)
    step = len(keys) // 2 or 1
    order = [keys[(i * step + i // 2) % len(keys)] if len(keys) > 2 else keys[i] for i in range(len(keys))]
    order = list(dict.fromkeys(order)) + [k for k in keys if k not in order]
    out = []
    for key in order:
        ps = [m for m in points[key] if m.pool == "P"]
        ns = [m for m in points[key] if m.pool == "N"]
        out += [m for pair in zip(ps, ns) for m in pair] + ps[len(ns):] + ns[len(ps):]
    return out
