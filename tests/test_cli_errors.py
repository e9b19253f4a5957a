"""Bad input exits 2 with one line on stderr and no traceback (docs/design.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.checks import assert_one_line_error
from tests.conftest import TOFU_DIR, TOFU_SKIP


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")




def test_real_process_exits_2_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "uds", "score", "--unlearned", "./no/such/model"],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert_one_line_error(proc, "no/such/model")


def test_unknown_alias(tmp_path, uds):
    assert_one_line_error(uds("score", "--unlearned", "npo_typo", "--data", str(tmp_path)), "npo_typo")


def test_missing_folder(uds):
    assert_one_line_error(uds("score", "--unlearned", "./no/such/model"), "no/such/model")


def test_unreachable_hub_id_says_how_to_pass_a_local_path(tmp_path, uds):
    data = TOFU_DIR / "forget10_annotated.json"
    if not data.is_file():
        pytest.skip(TOFU_SKIP)
    proc = uds("score", "--unlearned", "someone/not-cached-model", "--full", "someone/a", "--retain", "someone/b",
               "--data", str(data), env={"UDS_HOME": str(tmp_path), "HF_HOME": str(tmp_path / "hf")})
    assert_one_line_error(proc, "someone/a", "local folder")


def test_unknown_kind(uds):
    assert_one_line_error(uds("checkpoints", "list", "--kind", "nonsense"), "nonsense")


def test_list_unlearned_gives_the_150_hub_ids(uds):
    proc = uds("checkpoints", "list", "--kind", "unlearned")
    rows = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and len(rows) == 150
    assert all(r.split("\t")[-1].startswith("open-unlearning/unlearn_tofu_Llama-3.2-1B-Instruct_forget10_")
               for r in rows)


def test_tofu_folder_missing_a_file(tmp_path, tofu_dir, uds):
    for f in tofu_dir.glob("*.json*"):
        if f.name != "holdout10.json":
            (tmp_path / f.name).symlink_to(f)
    proc = uds("world", "build", "--preset", "tofu", "--tofu-dir", str(tmp_path),
               env={"UDS_HOME": str(tmp_path / "home")})
    assert_one_line_error(proc, "holdout10.json")


def test_unknown_preset_and_model(tmp_path, uds):
    proc = uds("score", "--unlearned", "tiny:nopreset/full", env={"UDS_HOME": str(tmp_path)})
    assert_one_line_error(proc, "nopreset")


def test_score_command_does_not_import_the_metrics_stack():
    """`uds score` builds only its own sub-parser: rouge/nltk/sklearn stay unimported."""
    code = ("import sys; from uds.cli import build_parser; build_parser(['score', '--help']); "
            "print(sorted(m for m in ('metrics.registry', 'rouge_score', 'sklearn', 'uds.commands.meta_eval') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_output_piped_into_a_reader_that_stops_early_is_not_an_error():
    """`uds checkpoints list | head -1`: no BrokenPipeError traceback, exit 0."""
    proc = subprocess.Popen([sys.executable, "-m", "uds", "checkpoints", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()   # the reader leaves after one line of the ~270
    err = proc.stderr.read().decode()
    assert proc.wait() == 0 and "Traceback" not in err, err


@pytest.mark.parametrize("command, argv, said", [
    ("metrics", ["metrics", "--model", "tiny:test/full"], "finished work is kept and a rerun resumes"),
    ("score", ["score", "--unlearned", "tiny:test/full"], "nothing was written; a rerun starts over"),
    ("meta_eval", ["meta-eval"], "finished work is kept and a rerun resumes"),
])
def test_an_interrupt_promises_a_resume_only_where_one_happens(command, argv, said, monkeypatch, capsys):
    """Ctrl-C: exit 130 and one line; `uds score` keeps nothing partial, so it must not claim that a
    rerun resumes, while the commands that store finished units (`uds metrics`: its finished
    metrics, tests/test_metrics_resume.py) do."""
    import importlib

    from uds.cli import main

    module = importlib.import_module(f"uds.commands.{command}")

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(module, "run", interrupted)
    assert main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"uds {argv[0]}: interrupted; {said}"]
