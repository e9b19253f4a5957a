"""Command line: `uds <command> ...` (same as `python -m uds ...`).

Each command lives in its own module exposing `register(subparsers)`, which adds a
sub-parser whose default `func(args) -> int` runs it. Bad input raises `UdsInputError`,
printed here as one line with exit status 2 (full traceback with `--debug`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from core.errors import UdsInputError

# Command name -> module that provides it, in the order `uds --help` lists them. Only the module
# of the command being run is imported: the metrics stack (rouge, nltk, scipy, sklearn) would
# otherwise add seconds to every `uds score`.
COMMANDS = {
    "score": "uds.commands.score",
    "metrics": "uds.commands.metrics",
    "meta-eval": "uds.commands.meta_eval",
    "leaderboard": "uds.commands.leaderboard",
    "world": "uds.commands.world",
    "checkpoints": "uds.commands.checkpoints",
    "audit": "uds.commands.audit",
    "sweep": "uds.commands.sweep",
    "probe": "uds.commands.probe",
    "capacity": "uds.commands.capacity",
    "report": "uds.commands.report",
}
COMMAND_MODULES = tuple(COMMANDS.values())


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser; with `argv` naming a command, only that command's module is imported."""
    parser = argparse.ArgumentParser(prog="uds", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = [COMMANDS[a] for a in argv if a in COMMANDS][:1]
    for name in named or COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def _quiet_libraries() -> None:
    """Our own progress bars say what is happening; transformers' per-load bars only add noise."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    # bitsandbytes warns on import, on CPUs with AVX512-BF16, that an optional fast NF4 kernel
    # package is absent; its fallback gives the same numbers, and the line broke one-line errors.
    import logging

    logging.getLogger("bitsandbytes.backends.cpu.ops").setLevel(logging.ERROR)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, not only before the command
    argv = [a for a in argv if a != "--debug"]
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    args.debug = debug
    _quiet_libraries()
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except UdsInputError as exc:
        if args.debug:
            raise
        print(f"uds {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:   # `uds ... | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"uds {args.command}: interrupted; finished work is kept and a rerun resumes", file=sys.stderr)
        return 130
