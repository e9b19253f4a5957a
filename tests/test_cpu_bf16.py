"""The bfloat16 slowdown of this CPU (uds/cpu_bf16.py): measured only for bfloat16 on the CPU,
warned about in one stderr line when many times, through every command that resolves a dtype."""

from __future__ import annotations

import argparse

import pytest
import torch

from uds import cpu_bf16


@pytest.fixture
def slowdown(monkeypatch):
    """Set the measured ratio; the list counts the measurements."""
    calls: list[float] = []

    def set_to(ratio: float) -> list[float]:
        def measured() -> float:
            calls.append(ratio)
            return ratio
        monkeypatch.setattr(cpu_bf16, "_measured", measured)
        return calls
    return set_to


def test_only_bfloat16_on_the_cpu_is_measured(slowdown, capsys):
    calls = slowdown(63.0)
    assert cpu_bf16.warn_if_slow("cpu", torch.float32) is None
    assert cpu_bf16.warn_if_slow("cuda", torch.bfloat16) is None
    assert calls == [] and capsys.readouterr().err == ""


def test_a_slow_cpu_is_warned_about_in_one_line(slowdown, capsys):
    slowdown(63.0)
    assert cpu_bf16.warn_if_slow("cpu", torch.bfloat16) == 63.0
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "bfloat16 63x slower than float32" in err and "--dtype float32" in err


def test_a_cpu_with_bfloat16_kernels_is_not(slowdown, capsys):
    slowdown(0.7)
    assert cpu_bf16.warn_if_slow("cpu", torch.bfloat16) == 0.7 and capsys.readouterr().err == ""


def test_commands_that_resolve_a_dtype_warn(slowdown, capsys, uds, tmp_path):
    from uds.device_args import device_and_dtype

    slowdown(40.0)
    assert device_and_dtype(argparse.Namespace(device="cpu", dtype="bfloat16")) == ("cpu", torch.bfloat16)
    assert "40x slower" in capsys.readouterr().err
    proc = uds("score", "--unlearned", str(tmp_path / "absent"), "--device", "cpu", "--dtype", "bfloat16")
    warning, error = proc.stderr.splitlines()[:2]
    assert proc.returncode == 2 and "40x slower" in warning and "absent" in error


def test_the_slowdown_is_a_ratio_of_two_timed_products():
    ratio = cpu_bf16.bf16_slowdown(rows=8, width=64, repeats=3)
    assert 0.0 < ratio < float("inf")
