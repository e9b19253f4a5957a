"""The capacity experiment (spec-probes §1.2): a grid of model sizes x dataset sizes on uniform
random sequences; memorised bits per run, capacity per size, bits per parameter, membership
inference on the same runs.

Dataset sizes are multiples of each size's expected capacity in sequences, `3.6 * params /
(S log2 V)` (the source's average), so every size is swept from below to above it. A run whose
memorised bits reach `CAP_SHARE` of its data's bits is "capped": its data, not the model, bounds it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from uds_analyses.capacity.models import (ModelSize, TrainBudget, build_model, n_params, sequence_nll_nats,
                                      still_rising, train_to_plateau, uniform_sequences, window_gain)
from uds_analyses.capacity.steps import CAP_SHARE, alpha_vs_steps, budgets_of, grid_at_plateau
from metrics import mem_bits as mb
from metrics.chance import f1_chance_counts
from uds_analyses.capacity.fit import best_threshold_f1, fit_capacity, fit_sigmoid_law

PUBLISHED_ALPHA = {"fp32": 3.83, "bf16": 3.51}
EXPECTED_ALPHA = 3.6
FRESH_SEED_OFFSET = 1_000_003   # fresh (non-member) sequences come from another seed


def is_capped(mem_bits: float, data_bits: float) -> bool:
    """Whether a run stored at least `CAP_SHARE` of its dataset's bits (both in bits)."""
    return mem_bits >= CAP_SHARE * data_bits


@dataclass(frozen=True)
class Grid:
    sizes: tuple[ModelSize, ...]
    multiples: tuple[float, ...]     # dataset sizes in units of the expected capacity
    vocab: int = 64
    seq_len: int = 32
    budget: TrainBudget = field(default_factory=TrainBudget)
    seed: int = 0
    n_fresh: int = 512               # non-members for the MIA (at most this many members too)
    threads: int = 1
    device: str = "cpu"              # where models train (cuda: same batches, same recipe)

    def dataset_sizes(self, params: int) -> list[int]:
        per_seq = mb.uniform_bits(self.seq_len, self.vocab)
        return sorted({max(8, round(m * EXPECTED_ALPHA * params / per_seq)) for m in self.multiples})

    def to_dict(self) -> dict:
        d = asdict(self)
        d["sizes"] = [asdict(s) | {"name": s.name} for s in self.sizes]
        return d


SIZES = (ModelSize(16, 2), ModelSize(24, 2), ModelSize(32, 2), ModelSize(32, 4), ModelSize(48, 2))
GRIDS = {
    "default": Grid(SIZES, (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)),
    "quick": Grid(SIZES[:2], (0.5, 2.0, 8.0), budget=TrainBudget(max_steps=600, eval_every=100,
                                                                 plateau_window=300)),
    # constant LR tail and denser dataset sizes above the expected capacity (from 1.5x, where the
    # data holds more bits per parameter than the published capacity), each budget also finished by a
    # cooldown of a fifth of its steps: the GPU-sized run to the plateau
    "plateau": Grid(SIZES, (0.5, 1.0, 1.5, 2.0, 3.0, 4.0),
                    budget=TrainBudget(max_steps=64000, eval_every=1000, plateau_window=8000, schedule="constant",
                                       cooldown=0.2)),
}


def run_cell(grid: Grid, size: ModelSize, n: int) -> dict:
    """Train one model on `n` uniform sequences; its row: params, mem bits, MIA F1, steps, time."""
    t0, c0 = time.time(), time.process_time()
    x = uniform_sequences(n, grid.seq_len, grid.vocab, seed=grid.seed * 7919 + n)
    model = build_model(size, grid.vocab, grid.seq_len, seed=grid.seed).to(grid.device)
    mem_of = lambda nll: mb.dataset_mem_bits(mb.bits_from_mean_nll(nll, 1), grid.seq_len, grid.vocab)  # noqa: E731
    branch_at = budgets_of(grid.budget) if grid.budget.cooldown > 0 else ()
    log = train_to_plateau(model, x, grid.budget, seed=grid.seed, mem_of=mem_of, branch_at=branch_at)
    bos = model.config.bos_token_id
    nll = log.nll.numpy()   # the final weights' evaluation (no second pass over the set)
    fresh = uniform_sequences(grid.n_fresh, grid.seq_len, grid.vocab, seed=grid.seed * 7919 + n + FRESH_SEED_OFFSET)
    fresh_nll = sequence_nll_nats(model, fresh, bos, bf16=grid.budget.bf16).numpy()
    members = nll[:grid.n_fresh]
    f1, thr = best_threshold_f1(members, fresh_nll)
    params = n_params(model)
    mem = mem_of(nll)
    data_bits = n * mb.uniform_bits(grid.seq_len, grid.vocab)
    return {"size": size.name, "hidden": size.hidden, "layers": size.layers, "params": params, "n": n,
            "seq_len": grid.seq_len, "vocab": grid.vocab, "data_bits": data_bits,
            "mem_bits": mem, "bits_per_param": mem / params, "capped": is_capped(mem, data_bits),
            "schedule": grid.budget.schedule, "steps": log.steps, "stop": log.stop,
            "last_window_gain": window_gain(log.curve, grid.budget.plateau_window),
            "rising": still_rising(log.curve, grid.budget),
            "mia_f1": f1, "mia_f1_chance": f1_chance_counts(len(members), len(fresh_nll)),
            "mia_members": len(members), "mia_nonmembers": len(fresh_nll), "mia_threshold_bits": thr / mb.LN2,
            "seconds": round(time.time() - t0, 2),
            "cpu_seconds": round(time.process_time() - c0, 2), "curve": log.curve,
            **({"cooldown": grid.budget.cooldown, "branches": log.branches} if branch_at else {})}


def run_grid(grid: Grid, progress: Callable[[dict], None] = lambda row: None,
             done: list[dict] = ()) -> list[dict]:
    """Every (size, dataset size) cell in order, smallest model first; `progress(row)` after each
    newly trained cell. Cells with a row in `done` (an interrupted run of the same grid) are kept,
    not retrained."""
    import torch

    torch.set_num_threads(grid.threads)
    finished = {(r["size"], r["n"]): r for r in done}
    rows = []
    for size in grid.sizes:
        params = n_params(build_model(size, grid.vocab, grid.seq_len, seed=grid.seed))
        for n in grid.dataset_sizes(params):
            if (size.name, n) in finished:
                rows.append(finished[(size.name, n)])
                continue
            rows.append(run_cell(grid, size, n))
            progress(rows[-1])
    return rows


def mia_f1_chance(row: dict, n_fresh: int = Grid.n_fresh) -> float:
    """Chance F1 of a run's MIA (all predicted member) from its class counts; rows written before
    the counts were recorded get them from the grid's rule: min(N, n_fresh) members, n_fresh fresh."""
    members = row.get("mia_members", min(row["n"], n_fresh))
    return f1_chance_counts(members, row.get("mia_nonmembers", n_fresh))


def summarise(rows: list[dict], precision: str = "fp32", budget: TrainBudget | None = None) -> dict:
    """Capacity per size (max of mem over N), the alpha fits, and the sigmoid law fitted to the MIA.
    With a constant-schedule `budget`: alpha at B/8, B/4, B/2, B from the runs' curves and the
    grid's plateau verdict (`uds_analyses.capacity.steps`)."""
    sizes = list(dict.fromkeys(r["size"] for r in rows))
    per_size = []
    for s in sizes:
        mine = [r for r in rows if r["size"] == s]
        best = max(mine, key=lambda r: r["mem_bits"])
        per_size.append({"size": s, "hidden": best["hidden"], "layers": best["layers"], "params": best["params"],
                         "capacity_bits": best["mem_bits"], "at_n": best["n"],
                         "bits_per_param": best["mem_bits"] / best["params"],
                         "capped": is_capped(best["mem_bits"], best["data_bits"]) if "data_bits" in best else None,
                         "plateau_runs": sum(r["stop"] != "max_steps" for r in mine), "runs": len(mine)})
    out = {"precision": precision, "published_alpha": PUBLISHED_ALPHA.get(precision), "sizes": per_size,
           "seconds": round(sum(r["seconds"] for r in rows), 1),
           "cpu_seconds": round(sum(r.get("cpu_seconds", 0.0) for r in rows), 1)}
    if len({p["params"] for p in per_size}) >= 2:
        out["fit"] = fit_capacity([p["params"] for p in per_size], [p["capacity_bits"] for p in per_size]).to_dict()
    if budget is not None:
        out["schedule"] = budget.schedule
    if budget is not None and budget.schedule == "constant" and len(per_size) >= 2:
        out["alpha_steps"] = alpha_vs_steps(rows, budgets_of(budget))
        if len(out["alpha_steps"]) >= 2:      # the verdict compares B with B/2
            out["at_plateau"] = grid_at_plateau(out["alpha_steps"], rows, budget)
        if budget.cooldown > 0:               # the same from the runs finished by their cooldowns
            out["alpha_steps_cooled"] = alpha_vs_steps(rows, budgets_of(budget), key="branches")
            if len(out["alpha_steps_cooled"]) >= 2:
                out["at_plateau_cooled"] = grid_at_plateau(out["alpha_steps_cooled"], rows, budget, key="branches")
    cap = {p["size"]: p["capacity_bits"] for p in per_size}
    ratio = np.array([cap[r["size"]] / r["n"] for r in rows])
    f1 = np.array([r["mia_f1"] for r in rows])
    out["mia"] = [{"size": r["size"], "n": r["n"], "capacity_over_n": q, "f1": v, "f1_chance": mia_f1_chance(r)}
                  for r, q, v in zip(rows, ratio, f1)]
    if len(rows) >= 4:
        try:
            out["sigmoid_law"] = fit_sigmoid_law(ratio, f1).to_dict()
        except RuntimeError as e:   # curve_fit found no optimum: report it, the rest stands
            out["sigmoid_law"] = {"error": str(e)}
    return out
