"""The executor flags of `uds meta-eval` and `uds sweep` (docs/cluster.md): parsing, checks that
fail before any task, the metric device under Ray, and the executor they ask for."""

from __future__ import annotations

import argparse
from pathlib import Path

from meta_eval.ray_executor import RayExecutor
from meta_eval.tasks import Executor, LocalExecutor
from uds_core.errors import UdsInputError

EXECUTORS = ("local", "ray")


def add_executor_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("executor (docs/cluster.md)")
    g.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: one task after the other in this process (default); ray: one Ray task per "
                        "(model, setting), retried when its worker dies")
    g.add_argument("--address", metavar="auto|HOST:PORT",
                   help="Ray cluster to join (auto: the one `ray start` runs here); default: start a local "
                        "cluster sized to this machine")
    g.add_argument("--gpus-per-task", type=float, default=0, metavar="N", help="GPUs per Ray task (default 0)")
    g.add_argument("--cpus-per-task", type=float, default=1, metavar="N", help="CPUs per Ray task (default 1)")
    g.add_argument("--max-retries", type=int, default=2, metavar="N",
                   help="retries of a task whose worker died (killed, out of memory, preempted); default 2")


def check_executor_args(args: argparse.Namespace) -> None:
    """Bad executor flags, before anything is loaded (one line, exit 2)."""
    if args.executor != "ray" and args.address:
        raise UdsInputError("--address applies to --executor ray only")
    if args.gpus_per_task < 0 or args.cpus_per_task < 0 or args.max_retries < 0:
        raise UdsInputError("--gpus-per-task, --cpus-per-task and --max-retries must be >= 0")
    if args.executor == "local" and args.gpus_per_task > 0:
        import torch

        if torch.cuda.device_count() < args.gpus_per_task:
            raise UdsInputError(f"--gpus-per-task {args.gpus_per_task:g}: this machine has "
                                f"{torch.cuda.device_count()} GPU(s)")


def device_for(args: argparse.Namespace) -> str:
    """The metric device: `--device auto` under Ray means cuda when tasks get GPUs (the driver
    may run on a node without one), else what this machine has."""
    from uds_core.loading import resolve_device

    if getattr(args, "executor", "local") == "ray" and args.device == "auto":
        return "cuda" if args.gpus_per_task > 0 else "cpu"
    return resolve_device(args.device)


def make_executor(args: argparse.Namespace, run_dir: Path, measurers: dict | None = None) -> Executor:
    """The executor the flags ask for; Ray is connected (or started) here, so a bad address or
    missing GPUs fail before any task."""
    if args.executor == "local":
        return LocalExecutor(measurers)
    return RayExecutor(args.address, gpus_per_task=args.gpus_per_task, cpus_per_task=args.cpus_per_task,
                       max_retries=args.max_retries, attempts_dir=run_dir)
