"""`uds.measure_args.measurement_settings`: the one place `uds meta-eval` and `uds campaign` turn
their options into measurement settings and a relearning recipe."""

from __future__ import annotations

import argparse

import pytest

from meta_eval.perturb import RELEARN_LR
from tests.meta_eval_fixtures import fake_zoo, measurer_settings
from uds.measure_args import measurement_settings
from uds_core.errors import UdsInputError


def _args(**kw) -> argparse.Namespace:
    base = dict(batch_size=4, max_new_tokens=8, relearn_lr=None)
    return argparse.Namespace(**{**base, **kw})


def test_options_become_settings_and_the_default_relearning_rate():
    zoo = fake_zoo()
    settings, recipe = measurement_settings(_args(), zoo, device="cpu", parity="reference")
    assert (settings.batch_size, settings.max_new_tokens, settings.device) == (4, 8, "cpu")
    assert settings.reference and not settings.progress and settings.system_prompt == zoo.system_prompt
    assert recipe.train.lr == RELEARN_LR
    _, chosen = measurement_settings(_args(relearn_lr=5e-5), zoo, device="cpu")
    assert chosen.train.lr == 5e-5


@pytest.mark.parametrize("bad, message", [(dict(batch_size=0), "--batch-size"),
                                          (dict(max_new_tokens=0), "--max-new-tokens"),
                                          (dict(relearn_lr=0.0), "--relearn-lr"),
                                          (dict(relearn_lr=-1e-4), "--relearn-lr")])
def test_bad_options_are_named(bad, message):
    with pytest.raises(UdsInputError, match=message):
        measurement_settings(_args(**bad), fake_zoo(), device="cpu")


def test_campaign_and_meta_eval_build_the_same_settings(monkeypatch, tmp_path):
    """The campaign measures on the CPU under the spec's parity: what `uds meta-eval --device cpu`
    measures with by default."""
    from uds.commands import campaign

    meta = measurer_settings(monkeypatch, tmp_path, _args(device="cpu", fluency_classifier=None, parity="spec"))
    zoo = fake_zoo()
    assert campaign.measure_settings(_args(), zoo) == meta
    with pytest.raises(UdsInputError, match="--batch-size"):   # the campaign checks it too now
        campaign.measure_settings(_args(batch_size=0), zoo)
