"""Progress in both modes (uds_core/progress.py): the plain-line format, the mode choice, --quiet."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from uds_core import progress as P

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d "
REPO = Path(__file__).resolve().parents[1]


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def loud(monkeypatch):
    monkeypatch.delenv(P.QUIET_ENV, raising=False)


def test_line_format_rate_eta_and_final_line():
    clock, out = FakeClock(), io.StringIO()
    bar = P.LineProgress(total=10, desc="train full", unit="step", file=out, interval=5.0, clock=clock)
    clock.t += 2.0
    bar.update(1)           # 2 s after the start: under the interval, no line
    assert out.getvalue() == ""
    clock.t += 4.0
    bar.update(1)           # 6 s: 2 steps in 6 s = 0.333 steps/s; 8 left -> 24 s
    bar.set_postfix(loss="2.310")
    clock.t += 4.0
    bar.update(1)           # 10 s: 4 s after the last line, no line
    clock.t += 5.0
    bar.close()             # 15 s, 3 of 10: 0.2 steps/s
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert re.fullmatch(STAMP + r"train full: 2/10 steps \(20%\), 0\.333 steps/s, ETA 0:00:24", lines[0]), lines[0]
    assert re.fullmatch(STAMP + r"train full: 3/10 steps \(30%\), 0\.2 steps/s, done in 0:00:15, loss=2\.310",
                        lines[1]), lines[1]


def test_unknown_total_and_resumed_start():
    """Without a total: count and rate, no ETA. `initial` (a resumed run) counts toward k, not the rate."""
    clock, out = FakeClock(), io.StringIO()
    bar = P.LineProgress(total=None, desc="uds score", unit="pass", initial=0, file=out, interval=1.0, clock=clock)
    clock.t += 4.0
    bar.update(8)
    assert re.fullmatch(STAMP + r"uds score: 8 passes, 2 passes/s\n", out.getvalue()), out.getvalue()
    out2 = io.StringIO()
    bar = P.LineProgress(total=20, desc="x", initial=10, file=out2, interval=1.0, clock=clock)
    clock.t += 5.0
    bar.update(5)   # 5 new steps in 5 s -> 1 step/s, 5 left -> 5 s
    assert re.fullmatch(STAMP + r"x: 15/20 steps \(75%\), 1 steps/s, ETA 0:00:05\n", out2.getvalue())


def test_a_short_step_prints_nothing_in_a_log():
    clock, out = FakeClock(), io.StringIO()
    with P.LineProgress(range(3), desc="fast", file=out, interval=10.0, clock=clock) as bar:
        for _ in bar:
            clock.t += 1.0
    assert out.getvalue() == ""


def test_mode_follows_the_stream():
    from tqdm.std import tqdm as tqdm_cls

    log = io.StringIO()
    assert type(P.progress(total=3, file=log)) is P.LineProgress
    bar = P.progress(total=3, file=Tty())
    assert isinstance(bar, tqdm_cls)
    bar.close()


def test_quiet_and_disabled_print_nothing_but_still_iterate(monkeypatch):
    monkeypatch.setenv(P.INTERVAL_ENV, "0")
    out = io.StringIO()
    assert list(P.progress(range(4), desc="a", file=out, enabled=False)) == [0, 1, 2, 3]
    P.set_quiet(True)
    try:
        assert P.is_quiet()
        for stream in (out, Tty()):
            assert list(P.progress(range(4), desc="b", file=stream)) == [0, 1, 2, 3]
            assert stream.getvalue() == ""
    finally:
        P.set_quiet(False)
    assert not P.is_quiet()
    assert list(P.progress(range(2), desc="c", file=out)) == [0, 1]
    assert "c: 2/2 steps (100%)" in out.getvalue()


TOY_TRAINING = """
import torch
from checkpoints.world.train import Loop, TrainConfig, train
torch.manual_seed(0)
lin = torch.nn.Linear(2, 1)
data = [torch.randn(2) for _ in range(8)]
loss = lambda m, b: (lin(torch.stack(b)) ** 2).mean()
train(lin, data, TrainConfig(lr=1e-2, epochs=2, batch_size=2), lambda items: items, loss, Loop(desc="toy"))
"""


def test_training_loop_logs_steps_when_stderr_is_a_file():
    """The world's training loop (also the unlearning trainer's) in a job whose stderr is a file."""
    code = TOY_TRAINING
    env = {**__import__("os").environ, P.INTERVAL_ENV: "0"}
    env.pop(P.QUIET_ENV, None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if " toy: " in l]
    # 8 items / batch 2 = 4 steps per epoch, 2 epochs: one line per step, then the final one
    assert [re.search(r"toy: (\d+)/8 steps", l).group(1) for l in lines] == [str(k) for k in range(1, 9)] + ["8"]
    assert "done in" in lines[-1] and "loss=" in lines[-1]


def test_training_loop_is_silent_when_quiet(monkeypatch, capsys):
    """The same loop with the quiet switch set (in this process: the switch is read per line)."""
    monkeypatch.setenv(P.INTERVAL_ENV, "0")
    monkeypatch.setenv(P.QUIET_ENV, "1")
    exec(TOY_TRAINING, {})
    err = capsys.readouterr().err
    assert " toy: " not in err and "done in" not in err, err
    monkeypatch.delenv(P.QUIET_ENV)
    exec(TOY_TRAINING, {})
    assert " toy: 8/8 steps" in capsys.readouterr().err   # the same loop speaks without it
