"""One task list for every way of running measurements: serial, `--shard K/N`, Ray.

A task is one (model, setting) `Job` plus the `MeasurerSpec` that measures it; it writes into the
content-addressed `MeasurementStore`, which is the source of truth: a task whose values are all
stored is not scheduled again, so a rerun resumes. UDS's S1 half (full vs retain) is filled into
the S1 cache by one task that runs alone before the fan-out (`stages`); the others read it there.
Executors (`LocalExecutor` here, `meta_eval.ray_executor.RayExecutor`) run the stages and return
one `TaskRecord` per task; failures end in `failure_table` and exit status 1.
"""

from __future__ import annotations

import os
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol, Sequence

from uds_core.paths import safe_name
from meta_eval.measure import Job, Measurer, MeasurerSpec
from uds_core.errors import UdsInputError

DONE, INPUT_ERROR, ERROR, METRIC_ERRORS = "done", "input_error", "error", "metric_errors"


@dataclass(frozen=True)
class Task:
    spec: MeasurerSpec
    job: Job

    @property
    def label(self) -> str:
        return f"{self.job.setting}/{self.job.member.name}"


@dataclass
class TaskRecord:
    """How one task ended: DONE, INPUT_ERROR (bad input, never retried), ERROR (an exception or a
    worker that died more often than --max-retries allows) or METRIC_ERRORS (the task ran, some
    metric raised; the store keeps the rest and a rerun retries those)."""
    label: str
    status: str
    message: str = ""
    seconds: float = 0.0
    attempts: int = 1

    @property
    def failed(self) -> bool:
        return self.status != DONE


class Executor(Protocol):
    def run(self, stages: Sequence[Sequence[Task]], log: Callable[[str], None]) -> list[TaskRecord]: ...

    def close(self) -> None: ...


# --- planning ------------------------------------------------------------------------------

def pending(measurer: Measurer, jobs: Sequence[Job]) -> list[Job]:
    """Jobs with at least one key missing from the store under the current stamp."""
    return [j for j in jobs if measurer.missing(j)]


def shard(jobs: Sequence[Job], k: int, n: int) -> list[Job]:
    """Every n-th job from k: the same slices whichever process computes them (the full plan is
    cut before the store is read, so shards of a job array never overlap)."""
    return list(jobs[k::n])


def stages(first: Sequence[Task], rest: Sequence[Task]) -> list[list[Task]]:
    """[the S1 tasks, the rest], empty stages dropped. The S1 tasks (`measure.s1_job`) run alone
    and finish before the fan-out; the retain model's own job then finds its UDS stored."""
    return [list(s) for s in (first, rest) if s]


# --- one task --------------------------------------------------------------------------------

_MEASURERS: dict[bytes, Measurer] = {}   # per process: a worker keeps its tokenizer, data and anchors


def measurer_for(spec: MeasurerSpec) -> Measurer:
    key = pickle.dumps(spec)
    if key not in _MEASURERS:
        _MEASURERS[key] = spec.build(log=lambda s: print(s, file=sys.stderr))
    return _MEASURERS[key]


def attempt_path(folder: Path, label: str) -> Path:
    return folder / (safe_name(label) + ".pids")


def _count_attempt(folder: Path | None, label: str) -> int:
    """Append this process's pid to the task's attempt file (what the driver counts as running
    and retried); returns the attempt number."""
    if folder is None:
        return 1
    path = attempt_path(folder, label)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(f"{os.getpid()}\n")
    return len(path.read_text().split())


def run_job(measurer: Measurer, job: Job, label: str, attempts_dir: Path | None = None) -> TaskRecord:
    """Measure one job into the store. Bad input comes back as a record (retrying cannot fix it);
    any other exception propagates (the executor records it, Ray's retries are for dead workers)."""
    attempt = _count_attempt(attempts_dir, label)
    t0 = time.time()
    try:
        measurer.run(job)
    except UdsInputError as exc:
        return TaskRecord(label, INPUT_ERROR, str(exc), round(time.time() - t0, 3), attempt)
    seconds = round(time.time() - t0, 3)
    missing = measurer.missing(job)
    if not missing:
        return TaskRecord(label, DONE, "", seconds, attempt)
    errors = measurer.store.entry(job.setting, job.member.name, measurer.stamp(job.member, job.setting))["errors"]
    return TaskRecord(label, METRIC_ERRORS, "; ".join(f"{k}: {errors.get(k, 'not stored')}" for k in missing),
                      seconds, attempt)


def run_task(task: Task, attempts_dir: Path | None = None) -> TaskRecord:
    """The body of one remote task: the process's Measurer for the task's spec, then the job."""
    return run_job(measurer_for(task.spec), task.job, task.label, attempts_dir)


# --- executors -------------------------------------------------------------------------------

class LocalExecutor:
    """Serial, in this process (the behaviour before executors existed). `measurers` maps a spec
    to an already-built Measurer (the driver's), so nothing is loaded twice."""

    def __init__(self, measurers: dict[MeasurerSpec, Measurer] | None = None):
        self.measurers = measurers or {}

    def _measurer(self, spec: MeasurerSpec) -> Measurer:
        return self.measurers.get(spec) or measurer_for(spec)

    def run(self, stages: Sequence[Sequence[Task]], log: Callable[[str], None]) -> list[TaskRecord]:
        tasks = [t for s in stages for t in s]
        records = []
        for i, task in enumerate(tasks, 1):
            try:
                rec = run_job(self._measurer(task.spec), task.job, task.label)
            except Exception as exc:  # any: one broken task must not lose the others
                rec = TaskRecord(task.label, ERROR, f"{type(exc).__name__}: {exc}")
            records.append(rec)
            log(f"[{i}/{len(tasks)}] {task.label}: {rec.status} in {rec.seconds:.1f} s")
        return records

    def close(self) -> None:
        """Nothing to release (the measurers belong to the caller)."""


def failure_table(records: Sequence[TaskRecord]) -> str:
    """Markdown table of the failed tasks ('' when none failed)."""
    bad = [r for r in records if r.failed]
    if not bad:
        return ""
    lines = ["| task | status | attempts | message |", "|---|---|---|---|"]
    lines += [f"| {r.label} | {r.status} | {r.attempts} | {r.message.splitlines()[0] if r.message else ''} |"
              for r in bad]
    return "\n".join(lines)


def summary_line(records: Sequence[TaskRecord]) -> str:
    failed = sum(r.failed for r in records)
    retried = sum(r.attempts > 1 for r in records)
    return f"{len(records)} task(s): {len(records) - failed} done, {failed} failed, {retried} retried"


def report(records: Sequence[TaskRecord], command: str, log: Callable[[str], None]) -> int:
    """Summary line and failure table on `log`; the exit status (1 when a task failed)."""
    log(f"{command}: {summary_line(records)}")
    table = failure_table(records)
    if table:
        log("failed tasks (finished work is kept in the store; a rerun measures only what is missing):\n" + table)
    return 1 if table else 0
