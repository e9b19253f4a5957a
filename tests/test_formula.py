"""The UDS formula (spec §2.5) against numbers worked out by hand."""

import math

import numpy as np
import pytest

from uds_core import formula as F


def test_layer_deltas_are_full_minus_patched():
    d = F.layer_deltas(np.array([-1.0, -2.0]), np.array([[-1.5, -0.5], [-2.0, -3.0]]))
    assert d.tolist() == [[0.5, -0.5], [0.0, 1.0]]


def test_ke_layers_use_a_strict_threshold():
    assert F.ke_mask(np.array([0.01, 0.1, 0.5, 0.05]), 0.05).tolist() == [False, True, True, False]


def test_example_uds_weights_clipped_ratios_by_s1_delta():
    s1 = [0.01, 0.1, 0.5, 0.05]     # KE = layers 1, 2 (0.05 is not > 0.05)
    s2 = [0.2, 0.05, 0.75, 0.3]     # LER = 0.5 and clip(1.5) = 1
    assert F.example_uds(s1, s2) == pytest.approx((0.1 * 0.5 + 0.5 * 1.0) / 0.6)  # 0.91666...


def test_negative_ratio_clips_to_zero():
    assert F.example_uds([0.1, 0.5], [-0.2, 0.25]) == pytest.approx((0.0 + 0.5 * 0.5) / 0.6)  # 0.41666...


def test_no_ke_layer_gives_none():
    assert F.example_uds([0.05, 0.01, -3.0], [1.0, 1.0, 1.0]) is None


def test_identities_are_exact():
    s1 = np.array([0.3, 0.07, 1.9, 0.0])
    assert F.example_uds(s1, s1) == 1.0
    assert F.example_uds(s1, np.zeros(4)) == 0.0


def test_tau_is_a_parameter():
    assert F.example_uds([0.02, 0.04], [0.02, 0.0], tau=0.01) == pytest.approx(0.02 / 0.06)


def test_per_example_and_model_mean():
    s1 = np.array([[0.1, 0.5], [0.01, 0.02], [1.0, 1.0]])
    s2 = np.array([[0.05, 0.5], [0.0, 0.0], [0.0, 0.0]])
    values = F.per_example_uds(s1, s2)
    assert values[0] == pytest.approx(0.55 / 0.6) and values[1] is None and values[2] == 0.0
    assert F.model_uds(values) == pytest.approx((0.55 / 0.6) / 2)
    assert F.model_uds([None, None]) == 0.0 and F.model_uds([]) == 0.0


def test_ratios_for_reports():
    raw = F.raw_ratio(np.array([0.4, -0.1, 0.3]), np.array([0.2, 0.2, 0.0]))
    assert raw[0] == 2.0 and raw[1] == -0.5 and math.isnan(raw[2])
    clipped = F.clipped_ratio(np.array([0.4, -0.1, 0.3]), np.array([0.2, 0.2, 1e-13]))
    assert clipped[0] == 1.0 and clipped[1] == 0.0 and math.isnan(clipped[2])


def test_bootstrap_ci():
    assert F.bootstrap_ci([None]) is None
    assert F.bootstrap_ci([0.3, 0.3, None, 0.3]) == (pytest.approx(0.3), pytest.approx(0.3))
    values = [0.0, 0.2, 0.4, 0.9, 1.0, None, 0.5]
    lo, hi = F.bootstrap_ci(values)
    assert lo < F.model_uds(values) < hi and 0.0 <= lo and hi <= 1.0
    assert F.bootstrap_ci(values) == (lo, hi)  # fixed seed
