"""Bits per parameter against the step budget, and whether a grid has reached its plateau
(spec-probes §1.2).

With a constant LR after warm-up, the first s steps of a run trained to budget B are exactly the
run to budget s, so the memorised bits recorded at each evaluation (a run's `curve`) give every
smaller budget without retraining. Capacity of a size at step s = max over dataset sizes N of the
bits at s; alpha(s) = the through-origin fit of those capacities on params, with the
least-squares interval of `fit.fit_alpha_ci`.

With cooldown branches (`TrainBudget.cooldown`), each run also records `branches`: the bits of
the run of budget s finished by a linear decay of the LR to 0. Every function here reads either
the constant-LR `curve` (key "curve") or those finished runs (key "branches"), so both α(s)
curves come from the same code.
"""

from __future__ import annotations

from uds_analyses.capacity.fit import fit_alpha_ci
from uds_analyses.capacity.models import TrainBudget, still_rising, window_gain

CAP_SHARE = 0.95   # bits >= this share of the data's bits: the data, not the model, bounds the run


def budgets_of(budget: TrainBudget) -> list[int]:
    """The step budgets alpha is reported at: B/8, B/4, B/2, B (B = max_steps), distinct, >= 1."""
    b = budget.max_steps
    return sorted({max(1, b // 8), max(1, b // 4), max(1, b // 2), b})


def mem_at(row: dict, step: int, key: str = "curve") -> float | None:
    """Memorised bits of a run at `step`: its last point of `row[key]` at or before `step`. A run
    its rule stopped earlier (solved / plateau) keeps its last value, since the rule judged it
    converged; None before the first point or past the end of a run that ran out of budget."""
    curve = row.get(key) or []
    if not curve:
        return None
    seen = [m for s, m in curve if s <= step]
    if not seen or (curve[-1][0] < step and row["stop"] == "max_steps"):
        return None
    return seen[-1]


def capacities_at(rows: list[dict], step: int, key: str = "curve") -> list[dict]:
    """Per size (in row order): capacity at `step` = max over N of `mem_at`, its N, bits/param, and
    whether the run holding it is capped (bits >= CAP_SHARE of its data's bits)."""
    out = []
    for size in dict.fromkeys(r["size"] for r in rows):
        at = [(mem_at(r, step, key), r) for r in rows if r["size"] == size]
        at = [(m, r) for m, r in at if m is not None]
        if not at:
            continue
        m, r = max(at, key=lambda p: p[0])
        out.append({"size": size, "params": r["params"], "capacity_bits": m, "at_n": r["n"],
                    "bits_per_param": m / r["params"], "capped": m >= CAP_SHARE * r["data_bits"]})
    return out


def alpha_vs_steps(rows: list[dict], steps: list[int], level: float = 0.95, key: str = "curve") -> list[dict]:
    """alpha(s) for each s in `steps` with at least two sizes measured: fit, interval, per size."""
    out = []
    for s in steps:
        caps = capacities_at(rows, s, key)
        if len(caps) < 2:
            continue
        fit = fit_alpha_ci([c["params"] for c in caps], [c["capacity_bits"] for c in caps], level)
        out.append({"step": s, **fit.to_dict(), "level": level, "sizes": caps})
    return out


def _rising(row: dict, budget: TrainBudget, key: str, half: int) -> bool:
    """Whether a run's bits still grow: on the constant-LR curve the plateau rule's test over its
    last window; on the finished runs (branches) by >= plateau_tol from budget B/2 to B."""
    if key == "curve":
        return bool(row["rising"] if "rising" in row else still_rising(row["curve"], budget))
    branches = row.get(key) or []
    if row["stop"] != "max_steps":   # the rule judged it converged (its last branch is at the stop)
        return False
    gain = window_gain(branches, branches[-1][0] - half) if branches else None
    return gain is not None and gain >= budget.plateau_tol


def grid_at_plateau(alpha_steps: list[dict], rows: list[dict], budget: TrainBudget, key: str = "curve") -> dict:
    """The grid's verdict. At plateau when both hold: (a) alpha(B) - alpha(B/2) lies within the
    half-width of alpha(B)'s interval, and (b) no run holding a size's capacity at B is still
    rising (`_rising`). (b) guards against a wide interval (few sizes) passing (a) by itself."""
    last, half = alpha_steps[-1], alpha_steps[-2]
    delta = last["alpha"] - half["alpha"]
    halfwidth = last["high"] - last["alpha"]
    holders = {(c["size"], c["at_n"]) for c in last["sizes"]}
    rising = [f"{r['size']}/{r['n']}" for r in rows if (r["size"], r["n"]) in holders
              and _rising(r, budget, key, half["step"])]
    within = abs(delta) <= halfwidth
    return {"from_step": half["step"], "to_step": last["step"], "delta_alpha": delta, "ci_halfwidth": halfwidth,
            "delta_within_ci": within, "rising_capacity_runs": rising, "at_plateau": within and not rising}
