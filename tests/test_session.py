"""The evaluation session: a command resolves each spec once and loads each model once (`uds
score` loads the full model twice, to hold one model at a time).

Counted by wrapping the two functions every resolution and every load goes through
(`checkpoints.specs.resolve_spec`, `checkpoints.specs.load_model_from`), on the `test` world.
A model named in two roles (here the base model is both the evaluated model and the fluency
base of `uds metrics`) is resolved and loaded once.
"""

from __future__ import annotations

from collections import Counter

import pytest

import checkpoints.specs as specs
from metrics.session import EvalSession, system_prompt_for

FULL, RETAIN, BASE = "tiny:test/full", "tiny:test/retain", "tiny:test/base"


@pytest.fixture
def counted(monkeypatch, test_world):
    resolved, loaded = Counter(), Counter()
    resolve, load = specs.resolve_spec, specs.load_model_from

    def counting_resolve(spec, base=None):
        resolved[spec] += 1
        return resolve(spec, base)

    def counting_load(source, *args, **kwargs):
        loaded[str(source)] += 1
        return load(source, *args, **kwargs)
    monkeypatch.setattr(specs, "resolve_spec", counting_resolve)
    monkeypatch.setattr(specs, "load_model_from", counting_load)
    return resolved, loaded


def test_score_resolves_and_loads_each_model_once(counted, uds, tmp_path):
    resolved, loaded = counted
    proc = uds("score", "--unlearned", BASE, "--full", FULL, "--retain", RETAIN, "--out", str(tmp_path / "s"),
               "--device", "cpu", "--no-s1-cache")
    assert proc.returncode == 0, proc.stderr
    assert resolved == Counter({BASE: 1, FULL: 1, RETAIN: 1})
    # one model at a time: the full model is loaded for its fingerprint, released while the other
    # two capture, and loaded again for the patched passes
    assert sorted(loaded.values()) == [1, 1, 2]
    assert [source for source, n in loaded.items() if n == 2][0].rstrip("/").endswith("full")


def test_metrics_resolves_and_loads_each_model_once(counted, uds, tmp_path):
    resolved, loaded = counted
    proc = uds("metrics", "--model", BASE, "--metrics", "prob,s_mia_loss,cka", "--out", str(tmp_path / "m"),
               "--device", "cpu", "--batch-size", "16")
    assert proc.returncode == 0, proc.stderr
    assert resolved == Counter({BASE: 1, FULL: 1, RETAIN: 1})   # BASE is the model and the fluency base
    assert sorted(loaded.values()) == [1, 1, 1]


def test_references_default_once_and_a_bad_reference_fails_before_any_load(counted, tmp_path):
    resolved, loaded = counted
    session = EvalSession(BASE)
    assert (session.roles["full"], session.roles["retain"], session.roles["base"]) == (FULL, RETAIN, BASE)
    assert session.data.endswith("uds_data.json")
    with pytest.raises(Exception, match="no model folder"):
        EvalSession(BASE, full=str(tmp_path / "missing"))
    assert not loaded


def test_system_prompt_rule():
    tiny, real = specs.resolve_spec(BASE), specs.resolve_spec("npo_lr5e5_b01_a2_ep10")
    assert system_prompt_for(tiny) is None                       # the tiny world's template has no system turn
    assert system_prompt_for(real) == "You are a helpful assistant."
    assert system_prompt_for(real, none=True) is None and system_prompt_for(tiny, "Be brief.") == "Be brief."
