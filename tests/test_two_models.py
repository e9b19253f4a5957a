"""`uds score` at the users' scale uses one model at a time: the sources' activations captured and
each source released before the full model runs S1 and S2, with the same numbers as the joint run; a float32 run
from bfloat16 files converts tensor by tensor; the memory it needs is said before loading when the
machine has less; the llama1b world's untrained models are what their recipes say."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.engine_fixtures import folders, score_args  # noqa: F401
from uds.cli import main
from uds_core.errors import UdsInputError


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))


def _rows(out):
    return [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]


def test_staged_scoring_equals_the_joint_run_and_releases_retain(folders, tmp_path, monkeypatch):
    from metrics.session import EvalSession
    from uds_core.engine import EngineSettings

    assert main(score_args(folders, tmp_path / "cli", "--no-s1-cache")) == 0   # staged (uds score)
    joint = EvalSession(folders["half"], full=folders["full"], retain=folders["retain"], data=folders["data"])
    run, _, _ = joint.score_uds(EngineSettings(batch_size=2), 0.05, use_cache=False)
    staged_rows, result = _rows(tmp_path / "cli"), run.result
    assert [r["uds"] for r in staged_rows if r["skipped_reason"] != "entity_span_not_found"] == result.uds
    np.testing.assert_array_equal([r["s1_delta"] for r in staged_rows[:5]], result.s1.deltas)
    np.testing.assert_array_equal([r["s2_delta"] for r in staged_rows[:5]], result.s2.deltas)
    # one model at a time: full (its fingerprint), retain and the unlearned model (their captures),
    # full again (the target's passes), nothing else held as each loads
    session = EvalSession(folders["half"], full=folders["full"], retain=folders["retain"], data=folders["data"])
    loaded = []
    real = session.load_uncached
    monkeypatch.setattr(session, "load_uncached", lambda spec, **kw: loaded.append((spec, sorted(
        s for s, _ in session._models))) or real(spec, **kw))
    again = session.score_uds(EngineSettings(batch_size=2), 0.05, use_cache=False, staged=True)[0].result
    assert loaded == [(folders[m], []) for m in ("full", "retain", "half", "full")]
    np.testing.assert_array_equal(again.s1.patched, result.s1.patched)
    np.testing.assert_array_equal(again.s2.patched, result.s2.patched)


def test_staged_run_reads_and_writes_the_s1_cache_as_the_joint_one(folders, tmp_path):
    assert main(score_args(folders, tmp_path / "a")) == 0
    assert main(score_args(folders, tmp_path / "b")) == 0
    a, b = (json.loads((tmp_path / x / "summary.json").read_text()) for x in "ab")
    assert (a["s1_cache"], b["s1_cache"], a["uds"]) == ("miss", "hit", b["uds"])


def test_float32_from_bfloat16_files_streams_and_equals_transformers(tmp_path):
    from transformers import AutoModelForCausalLM

    from tests.engine_fixtures import tiny_model
    from uds_core.loading import load_model_from, stored_dtype

    tiny_model("llama", layers=2, hidden=32).to(torch.bfloat16).save_pretrained(tmp_path / "m")
    assert stored_dtype(tmp_path / "m") == torch.bfloat16
    ours = load_model_from(str(tmp_path / "m"), False, "cpu", torch.float32)
    theirs = AutoModelForCausalLM.from_pretrained(tmp_path / "m", dtype=torch.float32)
    for (n, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert a.dtype == b.dtype and torch.equal(a, b), n
    for (n, a), (_, b) in zip(ours.named_buffers(), theirs.named_buffers()):
        assert a.dtype == b.dtype and torch.equal(a, b), n
    assert ours.lm_head.weight is ours.model.embed_tokens.weight or not ours.config.tie_word_embeddings


def test_too_little_memory_is_said_before_loading(monkeypatch):
    from uds_core import memory

    n = 1_235_814_400   # Llama-3.2-1B
    with pytest.raises(UdsInputError, match=r"needs about 10\.9 GB for 2 models of 1\.24B parameters in float32, "
                                            r"but cpu has 8\.0 GB available \(try --dtype bfloat16 \(fast on a CPU "
                                            r"only with AVX-512 BF16 or AMX kernels\), or"):
        memory.check_fits("uds score", n, torch.float32, 2, "cpu", available=8 * 10**9)
    with pytest.raises(UdsInputError, match=r"\(try --dtype bfloat16, or UDS_"):   # a GPU has the kernels
        memory.check_fits("uds score", n, torch.float32, 2, "cuda", available=8 * 10**9)
    memory.check_fits("uds score", n, torch.bfloat16, 2, "cpu", available=8 * 10**9)   # 5.9 GB fits
    memory.check_fits("uds score", 10**6, torch.float32, 2, "cpu", available=1)   # small: not checked
    monkeypatch.setenv(memory.SKIP_ENV, "0")
    memory.check_fits("uds score", n, torch.float32, 2, "cpu", available=1)


def test_uds_score_refuses_before_loading_when_memory_is_short(folders, tmp_path, monkeypatch, capsys):
    from uds_core import memory
    from checkpoints import specs

    monkeypatch.setattr(memory, "available_bytes", lambda device: 1000)
    monkeypatch.setattr(memory, "SMALL_BYTES", 0)   # these tiny models are otherwise not checked
    monkeypatch.setattr(specs, "load_model", lambda *a, **k: pytest.fail("loaded a model"))
    assert main(score_args(folders, tmp_path / "x")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # one model's weights computes at a time (the fast path's family), so one model's memory is asked
    assert len(err) == 1 and "GB available" in err[0] and " for 1 model of " in err[0]
    assert not (tmp_path / "home" / "s1_cache").exists() or not any((tmp_path / "home" / "s1_cache").iterdir())


def test_random_world_recipes_and_noise_copies(tmp_path):
    from checkpoints.catalogue import TRAINERS, recipes
    from checkpoints.world.core_trainers import noise_copy
    from checkpoints.world.presets import get_preset
    from checkpoints.world.recipes import Recipe
    from checkpoints.world.train import TrainConfig
    from tests.engine_fixtures import tiny_model

    zoo = recipes(get_preset("llama1b"))
    assert [(r.name, r.kind, r.parent, r.method) for r in zoo] == [
        ("full", "full", None, "random_init"), ("retain", "retain", "full", "noise_copy"),
        ("unlearned", "unlearned", "full", "noise_copy")]
    assert (TRAINERS["noise_copy"].code_module == TRAINERS["random_init"].code_module
            == "checkpoints.world.core_trainers")
    parent = tiny_model("llama", layers=2, hidden=32).to(torch.bfloat16)
    parent.save_pretrained(tmp_path / "full")

    class Ctx:
        seed, device = 0, "cpu"

        def load_path(self, name):
            return tmp_path / name

    r = Recipe("retain", "retain", "full", "", TrainConfig(lr=0.0, epochs=0, batch_size=1), "noise_copy",
               {"scale": 0.05, "moved": ["o_proj.weight", "down_proj.weight"], "noise_seed": 1,
                "save_dtype": "bfloat16"})
    a, b = noise_copy(Ctx(), r), noise_copy(Ctx(), r)
    for (name, p), q, p0 in zip(a.named_parameters(), b.parameters(), parent.parameters()):
        assert torch.equal(p, q)                                       # seeded: the same copy twice
        moved = name.endswith(("o_proj.weight", "down_proj.weight"))
        assert torch.equal(p, p0) != moved, name                       # only the named tensors move
        if moved:   # by about 5% of the tensor's standard deviation
            ratio = ((p.float() - p0.float()).std() / p0.float().std()).item()
            assert 0.04 < ratio < 0.06, (name, ratio)
