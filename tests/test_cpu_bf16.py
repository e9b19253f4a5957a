"""How bfloat16 products are computed on the CPU (uds/cpu_bf16.py): measured only for bfloat16 on
the CPU; on a CPU many times slower in it, through float32 kernels, said in one stderr line, for
every command that resolves a dtype; the environment overrides the measurement."""

from __future__ import annotations

import argparse

import pytest
import torch

from uds import cpu_bf16
from uds_core import float32_products
from uds_core.errors import UdsInputError


@pytest.fixture
def slowdown(monkeypatch):
    """Set the measured ratio; the list counts the measurements."""
    calls: list[float] = []
    monkeypatch.delenv(cpu_bf16.ENV, raising=False)
    monkeypatch.setattr(cpu_bf16, "_SAID", [])

    def set_to(ratio: float) -> list[float]:
        def measured() -> float:
            calls.append(ratio)
            return ratio
        monkeypatch.setattr(cpu_bf16, "_measured", measured)
        return calls
    return set_to


def test_only_bfloat16_on_the_cpu_is_measured(slowdown, capsys):
    calls = slowdown(63.0)
    assert cpu_bf16.choose_products("cpu", torch.float32) is None
    assert cpu_bf16.choose_products("cuda", torch.bfloat16) is None
    assert cpu_bf16.products_in_use("cpu", torch.float32) is None
    assert calls == [] and capsys.readouterr().err == ""


def test_a_slow_cpu_computes_through_float32_kernels_and_says_so_in_one_line(slowdown, capsys):
    slowdown(63.0)
    assert cpu_bf16.choose_products("cpu", torch.bfloat16) == "float32"
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "bfloat16 63x slower than float32" in err and "float32 kernels" in err
    assert cpu_bf16.products_in_use("cpu", torch.bfloat16) == "native"
    with cpu_bf16.bf16_products("cpu", torch.bfloat16):
        assert float32_products.active() and cpu_bf16.products_in_use("cpu", torch.bfloat16) == "float32"
    assert not float32_products.active()


def test_a_cpu_with_bfloat16_kernels_keeps_torchs_own(slowdown, capsys):
    slowdown(0.7)
    assert cpu_bf16.choose_products("cpu", torch.bfloat16) == "native" and capsys.readouterr().err == ""
    with cpu_bf16.bf16_products("cpu", torch.bfloat16):
        assert not float32_products.active()


@pytest.mark.parametrize("value, expected", [("float32", "float32"), ("native", "native"), (" NATIVE ", "native")])
def test_the_environment_decides_without_measuring(slowdown, monkeypatch, value, expected):
    calls = slowdown(63.0)
    monkeypatch.setenv(cpu_bf16.ENV, value)
    assert cpu_bf16.choose_products("cpu", torch.bfloat16) == expected and calls == []


def test_a_bad_environment_value_is_bad_input(slowdown, monkeypatch):
    slowdown(63.0)
    monkeypatch.setenv(cpu_bf16.ENV, "fast")
    with pytest.raises(UdsInputError, match="UDS_BF16_PRODUCTS=fast: choose auto, float32 or native"):
        cpu_bf16.choose_products("cpu", torch.bfloat16)


def test_commands_that_resolve_a_dtype_use_it_until_the_command_returns(slowdown, capsys, uds, tmp_path):
    from uds.device_args import device_and_dtype

    slowdown(40.0)
    try:
        assert device_and_dtype(argparse.Namespace(device="cpu", dtype="bfloat16")) == ("cpu", torch.bfloat16)
        assert "40x slower" in capsys.readouterr().err and float32_products.active()
        device_and_dtype(argparse.Namespace(device="cpu", dtype="bfloat16"))   # entered and said once
        assert capsys.readouterr().err == ""
    finally:
        cpu_bf16.release()
    assert not float32_products.active()
    cpu_bf16._SAID.clear()
    proc = uds("score", "--unlearned", str(tmp_path / "absent"), "--device", "cpu", "--dtype", "bfloat16")
    note, error = proc.stderr.splitlines()[:2]
    assert proc.returncode == 2 and "40x slower" in note and "absent" in error
    assert not float32_products.active()   # released when the command returned, error or not


def test_the_slowdown_is_a_ratio_of_two_timed_products():
    ratio = cpu_bf16.bf16_slowdown(rows=8, width=64, repeats=3)
    assert 0.0 < ratio < float("inf")
