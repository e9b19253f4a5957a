"""The task list without Ray: shards cover the plan once, the S1 task runs alone first, bad input
and broken tasks become failure records (exit status 1), a rerun schedules only what is missing."""

from __future__ import annotations

import json

import pytest

from meta_eval.measure import Job, plan_jobs, s1_job
from meta_eval.perturb import ORIG
from meta_eval.population import Member
from meta_eval.tasks import (DONE, ERROR, INPUT_ERROR, METRIC_ERRORS, LocalExecutor, Task, TaskRecord,
                             failure_table, pending, report, shard, stages)
from tests.meta_eval_fixtures import FakeMeasurer, fake_command, fake_zoo
from uds.cli import main
from uds_core.errors import UdsInputError


class StoreMeasurer(FakeMeasurer):
    """Writes value 1.0 per key; `behaviour[name]` makes a model raise or leave a metric out."""

    def __init__(self, root, behaviour=None):
        super().__init__(root)
        self.behaviour = behaviour or {}

    def run(self, job):
        self.runs.append((job.setting, job.member.name, job.keys))
        how = self.behaviour.get(job.member.name)
        if how == "input":
            raise UdsInputError(f"{job.member.name}: bad data")
        if how == "crash":
            raise RuntimeError("boom")
        entry = self.store.entry(job.setting, job.member.name, "S")
        for k in job.keys:
            if how == "metric" and k == "es":
                entry["errors"][k] = "ValueError: nan"
            else:
                entry["values"][k] = 1.0
        self.store.write(job.setting, job.member.name, entry)
        return entry


def _tasks(m, jobs):
    return [Task(None, j) for j in jobs]


def test_shards_partition_the_plan():
    jobs = plan_jobs(fake_zoo(), ["es"])
    parts = [shard(jobs, k, 3) for k in range(3)]
    assert sorted(map(id, sum(parts, []))) == sorted(map(id, jobs))     # every job once
    assert [len(p) for p in parts] == [7, 7, 7]


def test_s1_job_is_the_retain_models_uds():
    zoo = fake_zoo()
    job = s1_job(zoo, ["es", "uds"])
    assert (job.member.name, job.setting, job.keys) == ("retain", ORIG, ("uds",))
    jobs = plan_jobs(zoo, ["es", "uds"])
    planned = s1_job(zoo, ["es", "uds"], jobs)                   # the plan's own retain job, not an extra one
    assert planned in jobs and planned.member.name == "retain" and planned.setting == ORIG
    assert s1_job(zoo, ["es"]) is None
    assert stages([], [1, 2]) == [[1, 2]] and stages([0], [1]) == [[0], [1]]


def test_local_executor_records_and_exit_status(tmp_path):
    zoo = fake_zoo()
    m = StoreMeasurer(tmp_path, {"u0": "input", "u1": "crash", "u2": "metric"})
    jobs = [Job(member, ORIG, ("es", "prob")) for member in zoo.members if member.name in ("u0", "u1", "u2", "u3")]
    ex = LocalExecutor({None: m})
    records = ex.run(stages([], _tasks(m, jobs)), lambda s: None)
    status = {r.label: r.status for r in records}
    assert status == {"orig/u0": INPUT_ERROR, "orig/u1": ERROR, "orig/u2": METRIC_ERRORS, "orig/u3": DONE}
    assert "u0: bad data" in {r.label: r.message for r in records}["orig/u0"]
    table = failure_table(records)
    assert table.count("\n") == 2 + 3 - 1 and "RuntimeError: boom" in table
    assert report(records, "test", lambda s: None) == 1
    assert report([TaskRecord("x", DONE)], "test", lambda s: None) == 0
    # what finished is kept: a rerun schedules only the three failed tasks, and for u2 only es is missing
    todo = pending(m, jobs)
    assert [j.member.name for j in todo] == ["u0", "u1", "u2"]
    assert m.missing(todo[2]) == ["es"]


def test_meta_eval_rerun_runs_only_missing_tasks(tmp_path, monkeypatch):
    m = StoreMeasurer(tmp_path / "store")
    run, out = fake_command(monkeypatch, m), tmp_path / "out"
    assert run(out, "--metrics", "es,uds") == 0
    first = list(m.runs)
    assert first[0][:2] == (ORIG, "retain") and "uds" in first[0][2]   # the S1 task, alone and first
    assert len(first) == 12 + 4 + 5
    (tmp_path / "store" / "nf4" / "u1.json").unlink()
    (tmp_path / "store" / "orig" / "P0.json").unlink()
    assert run(out, "--metrics", "es,uds") == 0
    assert sorted((s, n) for s, n, _ in m.runs[len(first):]) == [("nf4", "u1"), (ORIG, "P0")]
    assert json.loads((out / "meta_eval.json").read_text())["settings"]["tasks_run"] == 2


def test_failed_task_gives_exit_1_and_keeps_the_rest(tmp_path, monkeypatch, capsys):
    m = StoreMeasurer(tmp_path / "store", {"u2": "crash"})
    assert fake_command(monkeypatch, m)(tmp_path / "o", "--metrics", "es") == 1
    err = capsys.readouterr().err
    assert "| orig/u2 | error | 1 | RuntimeError: boom |" in err and "| nf4/u2 | error |" in err
    assert len(list((tmp_path / "store").rglob("*.json"))) == 21 - 3   # u2: orig, nf4, relearn


@pytest.mark.parametrize("argv, needle", [
    (["--executor", "local", "--address", "auto"], "--address applies to --executor ray"),
    (["--max-retries", "-1"], "must be >= 0"),
])
def test_bad_executor_flags(argv, needle, capsys, tmp_path):
    models = tmp_path / "m.txt"
    models.write_text("tiny:test/full\n")
    assert main(["sweep", "--models", str(models), "--out", str(tmp_path / "o"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_sweep_bad_model_list(tmp_path, capsys):
    models = tmp_path / "m.txt"
    models.write_text("# two models\ntiny:test/full\n./no/such/model\n")
    assert main(["sweep", "--models", str(models), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "entry 2 (./no/such/model)" in err[0]
    assert main(["sweep", "--models", str(tmp_path / "none.txt"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["sweep", "--models", str(models), "--what", "scores", "--out", str(tmp_path / "o")]) == 2
    assert "--what" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_gpus_per_task_without_gpus_locally(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("torch.cuda.device_count", lambda: 0)
    models = tmp_path / "m.txt"
    models.write_text("tiny:test/full\n")
    assert main(["sweep", "--models", str(models), "--out", str(tmp_path / "o"), "--gpus-per-task", "1"]) == 2
    assert "--gpus-per-task 1: this machine has 0 GPU(s)" in capsys.readouterr().err


def test_ray_missing_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ray", None)          # `import ray` raises ImportError
    models = tmp_path / "m.txt"
    models.write_text("tiny:test/full\n")
    assert main(["sweep", "--models", str(models), "--out", str(tmp_path / "o"), "--executor", "ray"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "uds[ray]" in err[0]


def test_members_of_unknown_kind_are_not_planned():
    zoo = fake_zoo()
    from dataclasses import replace

    odd = replace(zoo, members=zoo.members + (Member("lm", "z/lm", "lmlm", None, None),))
    assert {j.member.name for j in plan_jobs(odd, ["es"])} == {j.member.name for j in plan_jobs(zoo, ["es"])}
