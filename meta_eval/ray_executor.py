"""Ray executor: one Ray task per (model, setting), on one machine or a cluster.

The driver connects (or starts a local cluster sized to the machine), checks the resources the
flags ask for, submits each stage's tasks and waits for them, showing done / running / failed /
retried on a tqdm bar. A task whose worker dies (killed, out of memory, preempted) is retried by
Ray up to `max_retries` times and resumes from the store; a bad-input error comes back as a record
(never retried); any other exception fails the task without a retry. Workers get the caller's
`UDS_*` / `HF_*` environment, so they find the same world, caches and hub settings; on a multi-node
cluster `$UDS_HOME` (or the sweep's folder) must be on a filesystem every node sees.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Callable, Sequence

from meta_eval.tasks import DONE, ERROR, Task, TaskRecord, attempt_path, run_task
from uds_core.errors import UdsInputError

ENV_PREFIXES = ("UDS_", "HF_", "TRANSFORMERS_", "TOKENIZERS_", "PYTHONHASHSEED", "CUBLAS_")
CONNECT_TIMEOUT_S = 5.0


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise UdsInputError(f"--executor ray needs Ray ({exc}): pip install 'uds[ray]'") from exc
    return ray


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """A HOST:PORT address must accept a TCP connection (ray.init would otherwise wait a minute)."""
    host, _, port = address.rpartition(":")
    host = host.removeprefix("ray://")
    if not host or not port.isdigit():
        raise UdsInputError(f"--address {address!r}: expected auto or HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise UdsInputError(f"--address {address}: no Ray cluster reachable there ({exc})") from exc


def worker_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)}


class RayExecutor:
    def __init__(self, address: str | None, gpus_per_task: float = 0, cpus_per_task: float = 1,
                 max_retries: int = 2, attempts_dir: Path | None = None,
                 task_fn: Callable[[Task, Path | None], TaskRecord] = run_task):
        self.ray = ray = import_ray()
        if address and address != "auto":
            check_reachable(address)
        self.started = not ray.is_initialized()
        if self.started:
            init = dict(runtime_env={"env_vars": worker_env()}, include_dashboard=False, log_to_driver=False,
                        configure_logging=False)
            try:
                ray.init(address=address, **init) if address else ray.init(**init)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise UdsInputError(f"--address {address}: cannot join a Ray cluster ({exc})") from exc
        self._check_resources(gpus_per_task, cpus_per_task)
        self.attempts_dir = attempts_dir
        self._all: list[TaskRecord] = []   # records of the stages run so far (the bar's counts)
        self.remote = ray.remote(task_fn).options(num_gpus=gpus_per_task, num_cpus=cpus_per_task,
                                                   max_retries=max_retries, retry_exceptions=False)

    def _check_resources(self, gpus: float, cpus: float) -> None:
        have = self.ray.cluster_resources()
        for name, want in (("GPU", gpus), ("CPU", cpus)):
            if want > have.get(name, 0):
                self.close()
                raise UdsInputError(f"--{name.lower()}s-per-task {want:g}: the Ray cluster has "
                                    f"{have.get(name, 0):g} {name}(s)")

    def close(self) -> None:
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()

    def _running(self, labels: set[str]) -> int:
        """Tasks started (an attempt file exists) and not finished."""
        if self.attempts_dir is None:
            return 0
        return sum(attempt_path(self.attempts_dir, label).is_file() for label in labels)

    def _record(self, task: Task, ref) -> TaskRecord:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:   # the task raised, or its worker died too often
            cause = getattr(exc, "cause", None) or exc
            attempts = self._attempts(task.label)
            text = f"{type(cause).__name__}: {cause}".strip().splitlines()
            return TaskRecord(task.label, ERROR, text[-1] if text else "", 0.0, attempts)

    def _attempts(self, label: str) -> int:
        if self.attempts_dir is None:
            return 1
        path = attempt_path(self.attempts_dir, label)
        return len(path.read_text().split()) if path.is_file() else 0

    def run_stage(self, tasks: Sequence[Task], bar, log: Callable[[str], None]) -> list[TaskRecord]:
        refs = {self.remote.remote(t, self.attempts_dir): t for t in tasks}
        records, open_labels = [], {t.label for t in tasks}
        pending = list(refs)
        while pending:
            ready, pending = self.ray.wait(pending, num_returns=1, timeout=1.0)
            if ready and pending:   # take everything else that is ready too, without waiting
                more, pending = self.ray.wait(pending, num_returns=len(pending), timeout=0)
                ready += more
            for ref in ready:
                rec = self._record(refs[ref], ref)
                records.append(rec)
                open_labels.discard(rec.label)
                bar.update(1)
                if rec.status != DONE:
                    log(f"{rec.label}: {rec.status}: {rec.message}")
            failed = sum(r.failed for r in self._all + records)
            retried = sum(r.attempts > 1 for r in self._all + records)
            bar.set_postfix(running=self._running(open_labels), failed=failed, retried=retried, refresh=False)
        return records

    def run(self, stages: Sequence[Sequence[Task]], log: Callable[[str], None]) -> list[TaskRecord]:
        from tqdm.auto import tqdm

        self._all = []
        total = sum(len(s) for s in stages)
        t0 = time.time()
        with tqdm(total=total, desc="tasks", unit="task", mininterval=0.5) as bar:   # the caller closes
            for stage in stages:
                self._all += self.run_stage(stage, bar, log)
        log(f"ray: {total} task(s) in {time.time() - t0:.1f} s")
        return self._all
