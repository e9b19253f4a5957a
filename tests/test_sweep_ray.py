"""`--executor ray` on a real local Ray cluster (2 CPUs, started here on 127.0.0.1) and the `test`
zoo: the Ray run's numbers equal the serial run's, a worker killed mid-task is retried without
changing them, a rerun measures only what is missing, bad executor input exits 2 before any task.
Skipped when Ray (the `uds[ray]` extra) is not installed."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'uds[ray]')")

from meta_eval.population import tiny_zoo as TINY_ZOO  # noqa: E402
from uds.cli import main  # noqa: E402

MODELS = ["tiny:test/npo_lr2e-4_b01_a1_ep5", "tiny:test/rmu_lr2e-4_l2_s10_ep5"]
KILLED = "orig/rmu_lr2e-4_l2_s10_ep5"
CHEAP = ["--what", "score,metrics", "--metrics", "es,prob", "--batch-size", "8", "--max-new-tokens", "8"]


POOLS = ["pos_full_lr3e-3_ep12", "neg_retain_lr3e-3_ep12"]


@pytest.fixture(scope="module")
def built_models(test_world) -> None:
    """The models the sweeps measure, built before any worker starts (a fresh clone has only base,
    full and retain); the bad-input tests stop before any task, so they go without."""
    from checkpoints.world.build import build_world

    build_world("test", 0, progress=False, names=[m.split("/")[1] for m in MODELS] + POOLS)


@pytest.fixture(scope="module")
def ray_cluster(test_world):
    """A fresh 2-CPU cluster for this module; shut down after it so other tests see no Ray."""
    if ray.is_initialized():
        ray.shutdown()
    env = {k: v for k, v in os.environ.items() if k.startswith(("UDS_", "HF_"))}
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1",
             runtime_env={"env_vars": env})
    yield
    ray.shutdown()


@pytest.fixture
def models_file(tmp_path) -> Path:
    path = tmp_path / "models.txt"
    path.write_text("\n".join(MODELS) + "\n")
    return path


def _sweep(models: Path, out: Path, *extra: str) -> dict:
    assert main(["sweep", "--models", str(models), "--out", str(out), *CHEAP, *extra]) == 0
    return json.loads((out / "sweep.json").read_text())


def _kill_first_attempt(out: Path, label: str, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the worker that starts `label` (its pid is the first line of the attempt file)."""
    name = label.replace("/", "_") + ".pids"
    while not stop.is_set():
        for path in out.glob(f"runs/*/{name}"):
            pids = path.read_text().split()
            if pids:
                os.kill(int(pids[0]), signal.SIGKILL)
                killed.append(int(pids[0]))
                return
        time.sleep(0.01)


@pytest.mark.slow   # a Ray cluster started and a worker killed: over a minute
def test_ray_sweep_equals_serial_survives_a_killed_worker_and_resumes(built_models, ray_cluster, models_file,
                                                                      tmp_path):
    serial = _sweep(models_file, tmp_path / "serial")
    killed, stop = [], threading.Event()
    killer = threading.Thread(target=_kill_first_attempt, args=(tmp_path / "ray", KILLED, killed, stop))
    killer.start()
    try:
        on_ray = _sweep(models_file, tmp_path / "ray", "--executor", "ray", "--max-retries", "2")
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 1
    pids = next((tmp_path / "ray").glob("runs/*/orig_rmu_lr2e-4_l2_s10_ep5.pids")).read_text().split()
    assert len(pids) == 2 and int(pids[0]) == killed[0]              # retried once, in another worker
    assert on_ray["settings"]["tasks_run"] == 3 and not on_ray["settings"]["failed_tasks"]
    values = lambda doc: {r["model"]: r["values"] for r in doc["models"]}  # noqa: E731
    assert values(on_ray) == values(serial)                         # number for number
    assert all(v is not None for row in values(serial).values() for v in row.values())
    # a rerun after losing one model's values measures that one only (S1 comes from the store)
    (tmp_path / "ray" / "store" / "orig" / "npo_lr2e-4_b01_a1_ep5.json").unlink()
    again = _sweep(models_file, tmp_path / "ray", "--executor", "ray")
    assert again["settings"]["tasks_run"] == 1 and values(again) == values(serial)


def _small_zoo(text: str):
    """The `test` zoo cut to full, retain, one unlearned model and one P and one N pool model."""
    zoo = TINY_ZOO(text)
    keep = {"full", "retain", "npo_lr2e-4_b01_a1_ep5", *POOLS}
    return replace(zoo, members=tuple(m for m in zoo.members if m.name in keep))


@pytest.mark.slow   # the default run keeps the executor's plumbing (tests/test_sweep_tasks.py)
def test_ray_meta_eval_equals_serial(built_models, ray_cluster, tmp_path, monkeypatch):
    """meta_eval.json numbers of a 5-model cut of the test zoo (8 tasks: orig, nf4, relearn), utility
    and fluency left out of the plan to keep it short (hence --no-filters)."""
    monkeypatch.setattr("meta_eval.population.tiny_zoo", _small_zoo)
    monkeypatch.setattr("meta_eval.measure.BENCHMARK_EXTRA", ())
    monkeypatch.setattr("uds.commands.meta_eval.write_plots", lambda *a: None)
    docs = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        assert main(["meta-eval", "--zoo", "tiny:test", "--built-only", "--metrics", "es,prob", "--no-filters",
                     "--max-new-tokens", "8", "--cache", str(tmp_path / f"cache-{executor}"), "--out", str(out),
                     "--executor", executor]) == 0
        docs[executor] = json.loads((out / "meta_eval.json").read_text())
    assert docs["ray"]["settings"]["tasks_run"] == docs["local"]["settings"]["tasks_run"] == 8
    for section in ("faithfulness", "robustness", "overall"):
        assert docs["ray"][section] == docs["local"][section]
    assert docs["local"]["robustness"]["es"]["quantization"] is not None


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("flags, needle", [
    (["--address", f"127.0.0.1:{_closed_port()}"], "no Ray cluster reachable"),
    (["--gpus-per-task", "1"], "--gpus-per-task 1: the Ray cluster has 0 GPU(s)"),
])
def test_bad_ray_input_exits_2_before_any_task(ray_cluster, tmp_path, capsys, flags, needle):
    models_file = tmp_path / "models.txt"   # a model the test world has built: the sweep checks that first
    models_file.write_text("tiny:test/retain\n")
    out = tmp_path / "o"
    assert main(["sweep", "--models", str(models_file), "--out", str(out), "--executor", "ray", *flags]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and needle in err[0], err
    assert not (out / "store").exists()
    assert ray.is_initialized()                                     # the caller's cluster is left alone


@pytest.mark.slow
def test_acceptance_tiny_test_zoo_ray_equals_serial(tmp_path):
    """`uds meta-eval --zoo tiny:test --executor ray` equals the serial run on every faithfulness,
    robustness and overall number (every meta-evaluated metric, the whole built zoo)."""
    docs = {}
    for executor in ("local", "ray"):
        out = tmp_path / executor
        code = main(["meta-eval", "--zoo", "tiny:test", "--built-only", "--cache", str(tmp_path / f"c-{executor}"),
                     "--out", str(out), "--executor", executor])
        assert code == 0
        docs[executor] = json.loads((out / "meta_eval.json").read_text())
    print({e: d["settings"]["wall_seconds"] for e, d in docs.items()})   # seen with -s
    for section in ("faithfulness", "robustness", "overall"):
        assert docs["ray"][section] == docs["local"][section]
