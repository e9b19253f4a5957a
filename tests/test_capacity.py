"""The capacity experiment (spec-probes §1.2): fits and the MIA by hand, code lengths against a
second implementation, a short training run that memorises a handful of sequences, the command's
bad input, and (slow) the quick grid end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from uds_analyses.capacity.models import (ModelSize, TrainBudget, _plateaued, build_model, n_params, sequence_nll_nats,
                                  train_to_plateau, uniform_sequences)
from metrics import mem_bits as mb
from uds_analyses.capacity.grid import GRIDS, run_cell, summarise
from uds_analyses.capacity.fit import best_threshold_f1, fit_capacity, fit_sigmoid_law, sigmoid_law
from tests.checks import assert_one_line_error


def test_fit_recovers_an_exact_line():
    p = np.array([6e3, 13e3, 23e3, 43e3, 49e3])
    f = fit_capacity(p, 3.6 * p)
    assert f.alpha == pytest.approx(3.6) and f.r2_origin == pytest.approx(1.0) and f.r2 == pytest.approx(1.0)
    assert f.intercept == pytest.approx(0.0, abs=1e-6)
    g = fit_capacity(p, 2.0 * p + 1000.0)           # an offset: the free fit finds it, the origin fit cannot
    assert g.slope == pytest.approx(2.0) and g.intercept == pytest.approx(1000.0)
    assert g.alpha == pytest.approx(float((p * (2 * p + 1000)).sum() / (p * p).sum()))


def test_best_threshold_f1_by_hand():
    # members 1, 2, 3 and fresh 2.5, 4, 5: "member if NLL <= 3" catches 3 members and 1 fresh
    # (P 3/4, R 1, F1 6/7); "<= 2" gives P 1, R 2/3, F1 4/5; the best is 6/7 at 3.
    f1, thr = best_threshold_f1([1.0, 2.0, 3.0], [2.5, 4.0, 5.0])
    assert f1 == pytest.approx(6 / 7) and thr == pytest.approx(3.0)
    assert best_threshold_f1([1.0, 2.0], [3.0, 4.0])[0] == pytest.approx(1.0)


def test_sigmoid_law_fit_recovers_its_constants():
    ratio = np.geomspace(1, 400, 25)
    truth = (0.9, 0.03, -1.5)
    fit = fit_sigmoid_law(ratio, sigmoid_law(ratio, *truth))
    assert (fit.c1, fit.c2, fit.c3) == pytest.approx(truth, rel=1e-3) and fit.rmse < 1e-6
    # the printed constants put the sigmoid at ~0 here (c3 = -33): F1 = 1/2 everywhere
    assert np.allclose(sigmoid_law(ratio, 1.34, -0.034, -33.14), 0.5, atol=1e-9)


def test_plateau_rule():
    budget = TrainBudget(plateau_window=1000, plateau_tol=0.01)
    assert not _plateaued([(250, 10.0), (500, 50.0)], budget)                 # no point 1000 steps back
    assert _plateaued([(1000, 100.0), (2000, 100.5)], budget)                # +0.5 % over 1000 steps
    assert not _plateaued([(1000, 100.0), (2000, 102.0)], budget)            # +2 %


def test_params_counted_once_with_tied_embeddings():
    h, layers, v = 16, 2, 64
    model = build_model(ModelSize(h, layers), v, 32, seed=0)
    per_layer = 4 * h * h + 3 * h * (2 * h) + 2 * h                         # q k v o, gate up down, 2 norms
    assert n_params(model) == (v + 1) * h + layers * per_layer + h


@torch.no_grad()
def test_sequence_code_length_matches_token_by_token():
    v = 64
    model = build_model(ModelSize(16, 1), v, 8, seed=1).eval()
    x = uniform_sequences(3, 8, v, seed=2)
    got = sequence_nll_nats(model, x, bos=v).numpy()
    for i in range(3):
        ids = [v] + x[i].tolist()
        logits = [model(input_ids=torch.tensor([ids[:t]])).logits[0, -1].double() for t in range(1, len(ids))]
        want = -sum(float(torch.log_softmax(lg, -1)[ids[t]]) for t, lg in enumerate(logits, 1))
        assert got[i] == pytest.approx(want, rel=1e-5)
    assert (x >= 0).all() and (x < v).all() and torch.equal(x, uniform_sequences(3, 8, v, seed=2))


def test_a_few_sequences_are_memorised():
    torch.set_num_threads(1)
    v, s, n = 16, 8, 4
    x = uniform_sequences(n, s, v, seed=3)
    model = build_model(ModelSize(16, 1), v, s, seed=0)
    mem_of = lambda nll: mb.dataset_mem_bits(mb.bits_from_mean_nll(nll, 1), s, v)  # noqa: E731
    before = mem_of(sequence_nll_nats(model, x, bos=v))
    budget = TrainBudget(max_steps=300, lr=1e-2, warmup=10, eval_every=50, solved_bits=4.0)
    log = train_to_plateau(model, x, budget, 0, mem_of)
    nll_bits = sequence_nll_nats(model, x, bos=v).numpy() / math.log(2)
    after = mem_of(sequence_nll_nats(model, x, bos=v))
    total = n * mb.uniform_bits(s, v)                                       # 128 bits in the data
    assert before < 0.1 * total and 0.8 * total < after <= total
    # stopped at the first evaluation where the mean code length fell under 4 bits a sequence
    assert log.stop == "solved" and log.steps < 300 and nll_bits.mean() < 4.0
    assert log.curve[-1][1] == pytest.approx(after) and after == pytest.approx(total - nll_bits.sum())


def test_summary_takes_the_max_over_n_and_fits_it():
    rows = [{"size": s, "hidden": h, "layers": 2, "params": p, "n": n, "mem_bits": m, "stop": "max_steps",
             "mia_f1": f, "seconds": 1.0}
            for s, h, p, cap in (("a", 16, 1000, 3000.0), ("b", 24, 2000, 6000.0))
            for n, m, f in ((10, cap / 2, 1.0), (40, cap, 0.8), (160, cap * 0.9, 0.6))]
    out = summarise(rows)
    assert [s["capacity_bits"] for s in out["sizes"]] == [3000.0, 6000.0]
    assert out["fit"]["alpha"] == pytest.approx(3.0) and out["fit"]["r2_origin"] == pytest.approx(1.0)
    assert out["mia"][0]["capacity_over_n"] == 300.0


# --- the command line ---------------------------------------------------------------------------

@pytest.mark.parametrize("args, needle", [
    (["--grid", "huge"], "unknown grid 'huge'"),
    (["--quick", "--max-steps", "0"], "--max-steps must be at least 1"),
    (["--quick", "--vocab", "1"], "--vocab must be at least 2"),
])
def test_bad_numbers_are_one_line_errors(args, needle, uds, tmp_path):
    assert_one_line_error(uds("capacity", *args, "--out", str(tmp_path)), needle)


def test_empty_or_malformed_runs_file(uds, tmp_path):
    empty = tmp_path / "runs.jsonl"
    empty.write_text("\n")
    assert_one_line_error(uds("capacity", "--from-runs", str(empty), "--out", str(tmp_path / "o")), "holds no runs")
    empty.write_text('{"size": "a"}\n')
    assert_one_line_error(uds("capacity", "--from-runs", str(empty), "--out", str(tmp_path / "o")), "line 1")


@pytest.mark.slow
def test_quick_grid_end_to_end(uds, tmp_path):
    """The --quick grid (2 sizes x 3 dataset sizes, 600 steps at most): files, a positive alpha,
    memorisation below the data's entropy, and a summary rebuilt from runs.jsonl alone."""
    proc = uds("capacity", "--quick", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["summary"]["fit"]["alpha"] > 0 and len(doc["summary"]["sizes"]) == 2
    for f in ("runs.csv", "runs.jsonl", "mem_vs_n.png", "capacity_vs_params.png", "mia_f1.png"):
        assert (tmp_path / f).is_file()
    rows = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(0 < r["mem_bits"] <= r["data_bits"] for r in rows)
    again = uds("capacity", "--quick", "--from-runs", str(tmp_path / "runs.jsonl"), "--out", str(tmp_path / "re"))
    assert again.returncode == 0
    redo = json.loads((tmp_path / "re" / "summary.json").read_text())["summary"]["fit"]
    assert redo["alpha"] == doc["summary"]["fit"]["alpha"]


def test_run_cell_row_is_consistent():
    grid = GRIDS["quick"]
    from dataclasses import replace

    small = replace(grid, n_fresh=16, budget=TrainBudget(max_steps=20, eval_every=10))
    row = run_cell(small, ModelSize(16, 1), 16)
    assert row["data_bits"] == 16 * 32 * math.log2(64) and 0 <= row["mem_bits"] <= row["data_bits"]
    assert row["bits_per_param"] == pytest.approx(row["mem_bits"] / row["params"]) and 0.5 <= row["mia_f1"] <= 1
    assert [s for s, _ in row["curve"]] == [10, 20]


def test_an_interrupted_grid_resumes_and_a_changed_grid_starts_over(uds, tmp_path):
    """Rerunning the same command keeps the runs already in runs.jsonl (their recorded times are
    untouched) and trains the rest to the same numbers; another budget retrains everything."""
    args = ("capacity", "--quick", "--max-steps", "3", "--out", str(tmp_path))
    assert uds(*args).returncode == 0
    first = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    kept = [{**r, "seconds": 1e6} for r in first[:2]]    # marks what must not be retrained
    (tmp_path / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    proc = uds(*args)
    assert proc.returncode == 0 and "resuming: 2 finished runs" in proc.stderr
    again = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert [r["seconds"] for r in again[:2]] == [1e6, 1e6]
    assert [(r["size"], r["n"], r["mem_bits"]) for r in again] == [(r["size"], r["n"], r["mem_bits"]) for r in first]
    assert uds(*args[:-3], "4", "--out", str(tmp_path)).returncode == 0
    changed = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert len(changed) == len(first) and all(r["steps"] == 4 and r["seconds"] < 1e6 for r in changed)
