"""Capacity against the step budget: the constant-LR schedule by hand, alpha(s) and the
grid's plateau verdict from planted curves, the cap flag, the interval by hand, and a tiny real
grid through the command checked against a second computation from its own files."""

from __future__ import annotations

import argparse
import csv
import json

import numpy as np
import pytest
import torch

from uds_analyses.capacity.fit import fit_alpha_ci
from uds_analyses.capacity.grid import is_capped, summarise
from uds_analyses.capacity.models import (ModelSize, TrainBudget, build_model, constant_lr_factor, make_scheduler,
                                      sequence_nll_nats, train_to_plateau, uniform_sequences, with_bos)
from uds_analyses.capacity.steps import alpha_vs_steps, budgets_of, capacities_at, grid_at_plateau, mem_at
from tests.checks import assert_one_line_error


def _lrs(schedule: str) -> list[float]:
    """LR of each of 8 optimizer steps of a real training loop (warm-up 4, peak 0.01)."""
    torch.set_num_threads(1)
    x = uniform_sequences(4, 4, 8, seed=0)
    model = build_model(ModelSize(8, 1, heads=2), 8, 4, seed=0)
    budget = TrainBudget(max_steps=8, lr=0.01, warmup=4, eval_every=8, schedule=schedule)
    return train_to_plateau(model, x, budget, 0, mem_of=lambda nll: 0.0).lrs


def test_constant_schedule_lrs_by_hand():
    # warm-up k/4 of 0.01 after k scheduler steps (the first step runs at 0, as in the cosine
    # schedule), then 0.01 to the end
    assert _lrs("constant") == pytest.approx([0.0, 0.0025, 0.005, 0.0075, 0.01, 0.01, 0.01, 0.01])
    # cosine after the same warm-up: 0.01 * (1 + cos(pi * j / 4)) / 2 for j = 0..3
    assert _lrs("cosine") == pytest.approx([0.0, 0.0025, 0.005, 0.0075, 0.01, 0.0085355339, 0.005, 0.0014644661])
    assert [constant_lr_factor(k, 0) for k in (0, 5)] == [1.0, 1.0]


def test_unknown_schedule_is_refused():
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="unknown schedule 'linear'"):
        make_scheduler(opt, TrainBudget(schedule="linear"))


def test_alpha_ci_by_hand():
    # params (1, 2), capacity (1, 3): alpha = 7/5 = 1.4, residuals (-0.4, 0.2), SS 0.2, df 1,
    # se = sqrt(0.2 / 1 / 5) = 0.2, t(0.975, 1) = 12.7062
    f = fit_alpha_ci([1.0, 2.0], [1.0, 3.0])
    assert (f.alpha, f.se, f.df) == pytest.approx((1.4, 0.2, 1))
    assert (f.low, f.high) == pytest.approx((1.4 - 12.7062 * 0.2, 1.4 + 12.7062 * 0.2), abs=1e-4)
    g = fit_alpha_ci([1000.0, 3000.0, 5000.0], [3500.0, 10500.0, 17500.0])       # on a line: no width
    assert (g.alpha, g.se, g.low, g.high) == pytest.approx((3.5, 0.0, 3.5, 3.5))


STEPS = list(range(100, 801, 100))


def _rows(c: float, s0: float, params=(1000, 3000), shape=lambda s, s0: min(1.0, s / s0), scale=(1.0, 1.0),
          stop="max_steps") -> list[dict]:
    """Two dataset sizes per size: the larger stores c * params * shape(s), the smaller half that."""
    rows = []
    for p, k in zip(params, scale):
        for n, share in ((10, 0.5), (40, 1.0)):
            curve = [(s, share * k * c * p * shape(s, s0)) for s in STEPS]
            rows.append({"size": f"p{p}", "params": p, "n": n, "data_bits": 1e9, "stop": stop, "curve": curve})
    return rows


def test_alpha_vs_steps_from_planted_curves():
    budget = TrainBudget(max_steps=800)
    assert budgets_of(budget) == [100, 200, 400, 800]
    got = alpha_vs_steps(_rows(3.5, 400.0), budgets_of(budget))
    # mem = 3.5 * params * min(1, s / 400) at the larger N: alpha(s) = 3.5 * min(1, s / 400), exactly
    assert [a["alpha"] for a in got] == pytest.approx([0.875, 1.75, 3.5, 3.5])
    assert all(a["se"] == pytest.approx(0.0, abs=1e-12) for a in got)
    assert all(c["at_n"] == 40 and not c["capped"] for a in got for c in a["sizes"])


def test_mem_at_reads_the_last_evaluation_and_carries_converged_runs():
    row = {"curve": [(100, 5.0), (200, 7.0), (300, 7.01)], "stop": "plateau"}
    assert [mem_at(row, s) for s in (50, 100, 250, 300, 800)] == [None, 5.0, 7.0, 7.01, 7.01]
    assert mem_at({**row, "stop": "max_steps"}, 800) is None       # a budget that ended before 800
    assert mem_at({**row, "stop": "solved"}, 800) == 7.01


def test_plateau_verdict_on_planted_curves():
    budget = TrainBudget(max_steps=800, plateau_window=400, plateau_tol=0.01)
    flat = _rows(3.5, 200.0)            # saturated from step 200: alpha(800) = alpha(400), nothing rising
    v = grid_at_plateau(alpha_vs_steps(flat, budgets_of(budget)), flat, budget)
    assert v["at_plateau"] and v["delta_alpha"] == pytest.approx(0.0) and v["rising_capacity_runs"] == []
    slow = _rows(3.5, 1600.0)           # still linear: alpha 0.875 at 400, 1.75 at 800, interval of width 0
    v = grid_at_plateau(alpha_vs_steps(slow, budgets_of(budget)), slow, budget)
    assert not v["at_plateau"] and v["delta_alpha"] == pytest.approx(0.875) and not v["delta_within_ci"]
    assert v["rising_capacity_runs"] == ["p1000/40", "p3000/40"]
    # sizes scattered about the line (x0.5, x1.5, x1): a wide interval lets alpha(B) - alpha(B/2) pass,
    # but the capacity runs grew 2 % over the last 400 steps (0.98 -> 1): not at plateau
    creep = _rows(3.5, 0.0, params=(1000, 2000, 3000), scale=(0.5, 1.5, 1.0),
                  shape=lambda s, s0: 0.98 + 0.02 * (s >= 800))
    v = grid_at_plateau(alpha_vs_steps(creep, budgets_of(budget)), creep, budget)
    assert v["delta_within_ci"] and not v["at_plateau"] and len(v["rising_capacity_runs"]) == 3
    # the run's own flag, when recorded, is what counts
    assert grid_at_plateau(alpha_vs_steps(creep, budgets_of(budget)), [r | {"rising": False} for r in creep],
                           budget)["at_plateau"]


def test_cap_flag_by_hand():
    assert is_capped(950.0, 1000.0) and not is_capped(949.9, 1000.0)
    rows = [{"size": "a", "params": 100, "n": 2, "data_bits": 384.0, "stop": "solved", "curve": [(10, 370.0)]},
            {"size": "a", "params": 100, "n": 8, "data_bits": 1536.0, "stop": "max_steps", "curve": [(10, 360.0)]}]
    cap = capacities_at(rows, 10)[0]
    # 370 >= 0.95 * 384 = 364.8: the max over N sits on a run its data bounds
    assert cap["capacity_bits"] == 370.0 and cap["at_n"] == 2 and cap["capped"]


def test_summary_names_capped_sizes_and_the_schedule():
    rows = [{"size": "a", "hidden": 8, "layers": 1, "params": 100, "n": n, "data_bits": d, "mem_bits": m,
             "stop": "max_steps", "mia_f1": 1.0, "seconds": 1.0, "curve": [(10, m)]}
            for n, d, m in ((2, 384.0, 370.0), (8, 1536.0, 360.0))]
    rows += [r | {"size": "b", "params": 200, "mem_bits": 2 * r["mem_bits"], "data_bits": 10 * r["data_bits"],
                  "curve": [(10, 2 * r["mem_bits"])]} for r in rows]
    out = summarise(rows, budget=TrainBudget(max_steps=10, schedule="constant"))
    assert [s["capped"] for s in out["sizes"]] == [True, False] and out["schedule"] == "constant"
    assert [a["step"] for a in out["alpha_steps"]] == [10] and "at_plateau" not in out   # one budget only
    assert "alpha_steps" not in summarise(rows, budget=TrainBudget(max_steps=10))          # cosine: no curve


def _args(**kw) -> argparse.Namespace:
    base = dict(grid="default", quick=False, max_steps=None, eval_every=None, schedule=None, multiples=None,
                device="cpu", bf16=False, vocab=None, seq_len=None, threads=None, seed=0, cooldown=None,
                plateau_window=None)
    return argparse.Namespace(**base | kw)


def test_committed_grids_keep_the_cosine_default():
    from uds_analyses.capacity.models import SCHEDULES
    from uds.commands.capacity import SCHEDULES as CLI_SCHEDULES, make_grid

    assert CLI_SCHEDULES == SCHEDULES      # the command spells them without importing torch

    for name in ("default", "quick"):
        _, grid = make_grid(_args(grid=name))
        assert grid.budget.schedule == "cosine" and grid.device == "cpu"
    _, grid = make_grid(_args(quick=True, schedule="constant", multiples="1.5,3", eval_every=50, plateau_window=900))
    assert (grid.budget.schedule, grid.multiples, grid.budget.eval_every) == ("constant", (1.5, 3.0), 50)
    assert grid.budget.plateau_window == 900 and make_grid(_args(quick=True))[1].budget.plateau_window == 300


@pytest.mark.parametrize("args, needle", [
    (["--multiples", "1,x"], "--multiples must be comma-separated numbers"),
    (["--multiples", "1,0"], "--multiples must be positive"),
    (["--eval-every", "0"], "--eval-every must be at least 1"),
    (["--plateau-window", "0"], "--plateau-window must be at least 1"),
    (["--device", "tpu"], "unknown device 'tpu'"),
    (["--cooldown", "0.2"], "--cooldown branches a constant-LR run: it needs --schedule constant"),
    (["--schedule", "constant", "--cooldown", "1.5"], "--cooldown must be a fraction between 0 and 1"),
])
def test_bad_step_options_are_one_line_errors(args, needle, uds, tmp_path):
    assert_one_line_error(uds("capacity", "--quick", *args, "--out", str(tmp_path)), needle)


def test_tiny_constant_grid_end_to_end(uds, tmp_path):
    """2 sizes x 2 dataset sizes, 40 steps, scored every 5: files, the schedule recorded, per-run
    plateau fields, and alpha(s) recomputed here from the curves in summary.json."""
    proc = uds("capacity", "--quick", "--schedule", "constant", "--max-steps", "40", "--eval-every", "5",
               "--multiples", "0.5,2", "--cooldown", "0.2", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["grid"]["budget"]["schedule"] == "constant" and doc["summary"]["schedule"] == "constant"
    assert (tmp_path / "alpha_vs_steps.png").stat().st_size > 0
    runs = list(csv.DictReader(open(tmp_path / "runs.csv")))
    assert len(runs) == 4 and {r["schedule"] for r in runs} == {"constant"}
    # the quick grid's plateau window (300 steps) is longer than these runs: "still rising" is unknown
    assert all(r["stop"] in ("solved", "plateau", "max_steps") and r["rising"] == "" for r in runs)
    steps = doc["summary"]["alpha_steps"]
    assert [a["step"] for a in steps] == [5, 10, 20, 40]
    params = {r["size"]: float(r["params"]) for r in runs}
    for a in steps:     # a second computation: max over N of the curve at s, slope through the origin
        cap = {s: max(m for key, c in doc["curves"].items() if key.startswith(s + "/")
                      for st, m in c if st == a["step"]) for s in params}
        x, y = np.array([params[s] for s in cap]), np.array(list(cap.values()))
        assert a["alpha"] == pytest.approx(float((x * y).sum() / (x * x).sum()), rel=1e-12)
        assert a["low"] <= a["alpha"] <= a["high"]
    # every run went to the budget (40 steps is far from any stopping rule), so alpha at B is the
    # ordinary fit of the final bits
    assert all(r["stop"] == "max_steps" for r in runs)
    assert steps[-1]["alpha"] == pytest.approx(doc["summary"]["fit"]["alpha"], rel=1e-12)
    assert set(doc["summary"]["at_plateau"]) >= {"at_plateau", "delta_alpha", "ci_halfwidth", "rising_capacity_runs"}
    # the cooled alpha(s): the same fit over the branches written beside the curves
    cooled = doc["summary"]["alpha_steps_cooled"]
    assert [a["step"] for a in cooled] == [5, 10, 20, 40] and "at_plateau_cooled" in doc["summary"]
    for a in cooled:
        cap = {s: max(m for key, b in doc["branches"].items() if key.startswith(s + "/")
                      for st, m in b if st == a["step"]) for s in params}
        x, y = np.array([params[s] for s in cap]), np.array(list(cap.values()))
        assert a["alpha"] == pytest.approx(float((x * y).sum() / (x * x).sum()), rel=1e-12)
    assert all(float(r["cooled_mem_bits"]) == doc["branches"][f"{r['size']}/{r['n']}"][-1][1] for r in runs)


def _bits_by_hand(model, x, bos: int) -> float:
    """Memorised bits of the set against the uniform code, written out: S log2 V - NLL bits per
    sequence, summed (the runs' `mem_of` for one token per position)."""
    nll = sequence_nll_nats(model, x, bos)
    return float((x.shape[1] * np.log2(model.config.vocab_size - 1) - nll.numpy() / np.log(2)).sum())


def _step_by_hand(model, opt, x, g, bos: int) -> None:
    rows = torch.randint(0, x.shape[0], (x.shape[0],), generator=g)
    ids = with_bos(x[rows], bos)
    logp = torch.log_softmax(model(input_ids=ids).logits[:, :-1].float(), -1)
    loss = -logp.gather(-1, ids[:, 1:, None]).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_cooldown_branch_equals_a_run_finished_by_hand_and_leaves_the_run_alone():
    """Branches at steps 4 and 8 of an 8-step constant run (cooldown 0.5: 2 and 4 steps). A second
    loop written here trains a twin to step 4 (warm-up 2: LRs 0, 0.005, 0.01, 0.01), then decays
    its LR 0.01 -> 0.005 over 2 steps on batches from seed * 1_000_003 + 4: the same bits. The main
    run's curve and weights equal those of a run without branches."""
    torch.set_num_threads(1)
    x = uniform_sequences(6, 5, 8, seed=3)
    size, lr = ModelSize(8, 1, heads=2), 0.01
    budget = TrainBudget(max_steps=8, lr=lr, warmup=2, batch_size=6, eval_every=4, schedule="constant",
                         plateau_window=100, cooldown=0.5)
    mem_of = lambda nll: float((5 * np.log2(8) - nll.numpy() / np.log(2)).sum())  # noqa: E731
    model = build_model(size, 8, 5, seed=0)
    log = train_to_plateau(model, x, budget, seed=7, mem_of=mem_of, branch_at={4, 8})
    plain = build_model(size, 8, 5, seed=0)
    log0 = train_to_plateau(plain, x, TrainBudget(**{**budget.to_dict(), "cooldown": 0.0}), seed=7, mem_of=mem_of,
                            branch_at={4, 8})
    assert log.curve == log0.curve and log0.branches == []
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), plain.state_dict().values()))
    assert [s for s, _ in log.branches] == [4, 8]

    twin = build_model(size, 8, 5, seed=0)
    twin.train()
    opt = torch.optim.AdamW(twin.parameters(), lr=lr, weight_decay=0.0)
    g = torch.Generator().manual_seed(7)
    for step_lr in (0.0, 0.005, 0.01, 0.01):
        opt.param_groups[0]["lr"] = step_lr
        _step_by_hand(twin, opt, x, g, 8)
    g_branch = torch.Generator().manual_seed(7 * 1_000_003 + 4)
    for step_lr in (0.01, 0.005):
        opt.param_groups[0]["lr"] = step_lr
        _step_by_hand(twin, opt, x, g_branch, 8)
    assert log.branches[0][1] == pytest.approx(_bits_by_hand(twin, x, 8), rel=1e-5)
    assert log.branches[0][1] != pytest.approx(log.curve[0][1], rel=1e-3)   # the cooldown did train


def test_alpha_and_verdict_read_the_branches():
    """Planted: constant-LR curves saturate at 3 bits/param from step 200, the finished runs at
    3.5 from step 400: each key gives its own alpha(s) and verdict."""
    budget = TrainBudget(max_steps=800, plateau_window=400, plateau_tol=0.01)
    rows = _rows(3.0, 200.0)
    cooled = _rows(3.5, 400.0)
    for r, c in zip(rows, cooled):
        r["branches"] = [(s, m) for s, m in c["curve"] if s in budgets_of(budget)]
    assert [a["alpha"] for a in alpha_vs_steps(rows, budgets_of(budget))] == pytest.approx([1.5, 3.0, 3.0, 3.0])
    got = alpha_vs_steps(rows, budgets_of(budget), key="branches")
    assert [a["alpha"] for a in got] == pytest.approx([0.875, 1.75, 3.5, 3.5])
    assert grid_at_plateau(got, rows, budget, key="branches")["at_plateau"]
    # finished runs still growing 20 % from B/2 to B: rising, whatever the constant-LR flag says
    for r in rows:
        r["branches"][-1] = (800, r["branches"][-1][1] * 1.25)
        r["rising"] = False
    v = grid_at_plateau(alpha_vs_steps(rows, budgets_of(budget), key="branches"), rows, budget, key="branches")
    assert not v["at_plateau"] and v["rising_capacity_runs"] == ["p1000/40", "p3000/40"]
    # a run the rule stopped (its last branch at the stop) is carried to later budgets, not rising
    stopped = {"stop": "plateau", "branches": [(100, 5.0), (300, 6.0)], "curve": [(300, 5.5)]}
    assert [mem_at(stopped, s, "branches") for s in (50, 100, 200, 800)] == [None, 5.0, 5.0, 6.0]
    assert mem_at({"stop": "max_steps", "curve": [(100, 1.0)]}, 100, "branches") is None
