"""Quiet, fast start: light commands import neither torch nor transformers, and print no warnings."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from uds.cli import COMMANDS

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "bitsandbytes")

# runs the CLI in a fresh interpreter, then reports which heavy modules it pulled in (on stderr's
# last line, so the command's own stdout stays as a user would see it)
PROBE = ("import sys\nfrom uds.cli import main\ntry:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n"
         "    rc = e.code\nprint('HEAVY=' + ','.join(m for m in %r if m in sys.modules), file=sys.stderr)\n"
         "sys.exit(rc)" % (HEAVY,))


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


@pytest.mark.parametrize("argv", [("--help",), ("checkpoints", "list"), ("checkpoints", "list", "--kind", "pool"),
                                  ()])
def test_light_commands_import_no_torch_and_warn_nothing(argv):
    proc = _run(*argv)
    assert proc.returncode in (0, 2), proc.stderr   # no command: the help, exit 2
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == "HEAVY=", proc.stderr
    if argv and argv[0] == "checkpoints":
        assert lines == ["HEAVY="], proc.stderr   # not a single warning line
        assert len(proc.stdout.splitlines()) >= 60   # the registry rows (60 pool, 232 all): it did run


def test_help_lists_every_command_with_its_modules_own_help_line():
    """The top-level help lines repeated in uds/cli.py equal those each command module registers."""
    for name, (module, help_line) in COMMANDS.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module).register(sub)
        registered = {a.dest: a.help for a in sub._choices_actions}
        assert registered == {name: help_line}, module


def test_quiet_flag_is_accepted_anywhere_and_sets_the_environment():
    code = ("import os, sys; from uds.cli import main; main(['checkpoints', '--quiet', 'list', '--kind', 'reference']);"
            "print('Q=' + os.environ.get('UDS_QUIET', ''), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.stderr.strip().splitlines()[-1] == "Q=1", proc.stderr
    assert proc.stdout.strip()
