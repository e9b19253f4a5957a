"""Checkpoint registry (spec §7) and spec resolution (docs/design.md 'Checkpoint specs')."""

from __future__ import annotations

from collections import Counter

import pytest

from checkpoints import ou_checkpoints
from uds_core.errors import UdsInputError
from checkpoints.specs import default_references, parse_tiny, parse_tiny_zoo, resolve_spec

P = "open-unlearning/unlearn_tofu_Llama-3.2-1B-Instruct_forget10_"


def test_grid_sizes_match_the_benchmark():
    counts = Counter(c.method for c in ou_checkpoints.UNLEARNED)
    assert len(ou_checkpoints.UNLEARNED) == 150
    assert counts == {"graddiff": 18, "idknll": 18, "idkdpo": 18, "npo": 18, "altpo": 18,
                      "simnpo": 24, "rmu": 18, "undial": 18}
    assert len({c.hub_id for c in ou_checkpoints.UNLEARNED}) == 150
    assert len(ou_checkpoints.POOLS) == 60
    assert Counter(c.method for c in ou_checkpoints.POOLS) == {"P": 30, "N": 30}


@pytest.mark.parametrize("alias,hub", [
    ("graddiff_lr1e5_a1_ep5", P + "GradDiff_lr1e-05_alpha1_epoch5"),
    ("idknll_lr2e5_a5_ep10", P + "IdkNLL_lr2e-05_alpha5_epoch10"),
    ("npo_lr5e5_b01_a2_ep10", P + "NPO_lr5e-05_beta0.1_alpha2_epoch10"),
    ("simnpo_lr2e5_b35_a1_d1_g0125_ep5", P + "SimNPO_lr2e-05_b3.5_a1_d1_g0.125_ep5"),
    ("simnpo_lr1e5_b45_a1_d1_g025_ep10", P + "SimNPO_lr1e-05_b4.5_a1_d1_g0.25_ep10"),
    ("rmu_lr1e5_l10_s10_ep5", P + "RMU_lr1e-05_layer10_scoeff10_epoch5"),
    ("undial_lr1e4_b10_a1_ep5", P + "UNDIAL_lr0.0001_beta10_alpha1_epoch5"),
    ("undial_lr3e4_b10_a5_ep10", P + "UNDIAL_lr0.0003_beta10_alpha5_epoch10"),
    ("full", "open-unlearning/tofu_Llama-3.2-1B-Instruct_full"),
    ("retain", "open-unlearning/tofu_Llama-3.2-1B-Instruct_retain90"),
    ("npo", P + "NPO_lr5e-05_beta0.5_alpha1_epoch10"),
])
def test_aliases_resolve_to_hub_ids_spelled_by_hand(alias, hub):
    assert ou_checkpoints.hub_id_for_alias(alias) == hub
    spec = resolve_spec(alias)
    assert (spec.kind, spec.location) == ("hub", hub)


def test_pool_hub_id_spelling():
    ids = {c.hub_id for c in ou_checkpoints.POOLS}
    assert "open-unlearning/pos_tofu_Llama-3.2-1B-Instruct_retain90_forget10_bio_lr3e-05_wd0.01_epoch10" in ids
    assert "open-unlearning/neg_tofu_Llama-3.2-1B-Instruct_retain90_celeb10_bio_lr1e-05_wd0.01_epoch5" in ids


def test_tiny_specs(tmp_path, monkeypatch):
    monkeypatch.setenv("UDS_HOME", str(tmp_path))
    assert parse_tiny("tiny:full") == ("small", 0, "full")
    assert parse_tiny("tiny:test/npo_lr1e-3_ep5") == ("test", 0, "npo_lr1e-3_ep5")
    assert parse_tiny("tiny:small-3/retain") == ("small", 3, "retain")
    assert parse_tiny("tiny:smol-ci/full") == ("smol-ci", 0, "full")
    assert parse_tiny("tiny:smol-ci-2/full") == ("smol-ci", 2, "full")
    # a whole zoo takes the same world grammar: a hyphenated preset is not read as a seed
    assert parse_tiny_zoo("tiny:smol-ci") == ("smol-ci", 0)
    assert parse_tiny_zoo("tiny:smol") == ("smol", 0) and parse_tiny_zoo("tiny:small-3") == ("small", 3)
    assert parse_tiny_zoo("small") is None
    spec = resolve_spec("tiny:test/full")
    assert spec.kind == "tiny" and spec.location == str(tmp_path / "world" / "test-0" / "models" / "full")


def test_local_folder_and_hub_id(tmp_path):
    assert resolve_spec(str(tmp_path)).kind == "local"
    assert resolve_spec("someone/some-model").kind == "hub"


@pytest.mark.parametrize("bad", ["", "./no/such/folder", "/no/such/folder", "not-an-alias", "tiny:test/"])
def test_bad_specs_raise_input_errors(bad):
    with pytest.raises(UdsInputError):
        resolve_spec(bad)


def test_default_references_for_real_checkpoints(monkeypatch, tmp_path):
    monkeypatch.setenv("UDS_TOFU_DIR", str(tmp_path))
    full, retain, data = default_references("npo_lr5e5_b01_a2_ep10")
    assert (full, retain) == ("full", "retain")
    assert data == str(tmp_path / "forget10_annotated.json")


def test_tofu_dir_moves_the_default_annotated_file(tmp_path):
    """`uds metrics --tofu-dir X` on a real checkpoint reads X's annotated file for the
    representation metrics, not the default folder's."""
    from metrics.session import EvalSession

    want = str(tmp_path / "forget10_annotated.json")
    assert default_references("npo_lr5e5_b01_a2_ep10", str(tmp_path))[2] == want
    assert EvalSession("npo_lr5e5_b01_a2_ep10", tofu_dir=str(tmp_path)).data == want   # `uds metrics --tofu-dir`
    assert EvalSession("npo_lr5e5_b01_a2_ep10", tofu_dir=str(tmp_path), data="mine.json").data == "mine.json"
