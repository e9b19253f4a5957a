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

from uds_core.errors import UdsInputError
from uds_core.quiet import quiet_libraries

# Command name -> (module that provides it, one-line help), in the order `uds --help` lists them.
# Only the module of the command being run is imported, and `uds --help` imports none: the
# help lines are repeated here (tests/test_startup.py checks they match the modules') so that
# the top-level help answers without torch, transformers or the metrics stack.
COMMANDS = {
    "score": ("uds.commands.score", "Unlearning Depth Score of an unlearned model"),
    "metrics": ("uds.commands.metrics", "the baseline metrics and TOFU utility of one model"),
    "annotate": ("uds.commands.annotate", "entity spans for QA records that have none"),
    "meta-eval": ("uds.commands.meta_eval", "faithfulness and robustness of every metric on a model zoo"),
    "attack": ("uds.commands.attack", "what an attacker recovers: relearning, quantisation, ablation, prompts"),
    "campaign": ("uds.commands.campaign",
                 "a resumable meta-evaluation campaign: build, measure, commit, one unit at a time"),
    "leaderboard": ("uds.commands.leaderboard",
                    "benchmark leaderboard (Mem, Privacy, Utility, Overall) from results"),
    "world": ("uds.commands.world", "the tiny world: synthetic or TOFU data, tokenizer, model zoo"),
    "checkpoints": ("uds.commands.checkpoints", "list known checkpoints (hub registry and tiny zoo)"),
    "audit": ("uds.commands.audit", "deletion audit of a lookup-based LM: FULL / DEL-ON / DEL-OFF"),
    "sweep": ("uds.commands.sweep", "UDS and/or metrics over a list of checkpoints (local or on Ray)"),
    "probe": ("uds.commands.probe", "verbatim vs semantic memorisation probe (spec-probes §2)"),
    "capacity": ("uds.commands.capacity", "bits per parameter on uniform random sequences"),
    "report": ("uds.commands.report", "static HTML report (leaderboard, models, examples, meta-evaluation)"),
    "curve": ("uds.commands.curve", "figure of UDS and output metrics over unlearning steps (curve files)"),
}
COMMAND_MODULES = tuple(module for module, _ in COMMANDS.values())
GLOBAL_FLAGS = ("--debug", "--quiet")   # accepted anywhere on the line, not only before the command


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser; with `argv` naming a command, only that command's module is imported.

    Without one (`uds --help`, a typo), each command gets a stub sub-parser carrying only its
    help line, so listing the commands imports none of them.
    """
    parser = argparse.ArgumentParser(prog="uds", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show full tracebacks")
    parser.add_argument("--quiet", action="store_true", help="no progress bars or progress lines")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = [a for a in argv if a in COMMANDS][:1]
    if named:
        importlib.import_module(COMMANDS[named[0]][0]).register(sub)
    else:
        for name, (_, help_line) in COMMANDS.items():
            sub.add_parser(name, help=help_line)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    flags = {f for f in GLOBAL_FLAGS if f in argv}
    argv = [a for a in argv if a not in GLOBAL_FLAGS]
    quiet_libraries()
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    args.debug = "--debug" in flags
    args.quiet = "--quiet" in flags
    if args.quiet:
        from uds_core import progress

        progress.set_quiet(True)
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
        # only the commands that store their units as they finish (`resumes=True`) can promise it
        kept = ("finished work is kept and a rerun resumes" if getattr(args, "resumes", False)
                else "nothing was written; a rerun starts over")
        print(f"uds {args.command}: interrupted; {kept}", file=sys.stderr)
        return 130
    finally:
        from uds import cpu_bf16

        cpu_bf16.release()   # bfloat16 products through float32 kernels end with the command
