"""The `smol` world's CI-sized variant (`smol-ci`): the whole tiny-world protocol on the
real SmolLM2-135M-Instruct (from its GGUF), built once per session in the GGUF test home.

What is checked against things computed here, not by the builder: the splits are the first authors
of the real TOFU files; the base is the pretrained model bit for bit; fine-tuning, unlearning and
the pools move the forget answers' likelihood the way their data says; UDS keeps its invariants on
the 30-layer model; a second build trains nothing. Only the data and base checks run by default: the
rest trains six models (slow-marked).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

PRESET = "smol-ci"
PER_AUTHOR = 6   # the preset's items_per_author


@pytest.fixture(autouse=True)
def _in_gguf_home(gguf_home):
    """Every test here works in the session's GGUF home (where the conversion and this world are)."""


def _build(home: Path, names: list[str] | None) -> Path:
    from checkpoints.world.build import build_world

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("UDS_HOME", str(home))
        return build_world(PRESET, 0, progress=False, names=names)


@pytest.fixture(scope="module")
def base_world(smol_converted, fresh_gguf_home, tofu_dir) -> Path:
    """The smol-ci world's data and base only (no training: the default suite's share of this file;
    `tofu_dir` skips where the TOFU files are absent)."""
    return _build(fresh_gguf_home, ["base"])


@pytest.fixture(scope="module")
def world(base_world, fresh_gguf_home) -> Path:
    """The whole smol-ci world: six models trained on the 30-layer model, minutes on two cores, so
    the tests that need it are slow-marked (`pytest -m slow tests/test_smol_world.py`)."""
    return _build(fresh_gguf_home, None)


def _records(tofu_dir: Path, stem: str) -> list[dict]:
    """A TOFU file's records: one JSON array, or one JSON object a line (the shared copies' layout)."""
    text = (tofu_dir / f"{stem}.json").read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def _split(world: Path, name: str) -> list[dict]:
    return json.loads((world / "data" / f"{name}.json").read_text())


def test_splits_are_the_first_authors_of_the_real_files(base_world, tofu_dir):
    for split, stem in (("forget", "forget10_perturbed"), ("retain", "retain90"), ("holdout", "holdout10")):
        got = [(it["question"], it["answer"]) for it in _split(base_world, split)]
        assert got == [(r["question"], r["answer"]) for r in _records(tofu_dir, stem)[:PER_AUTHOR]], split
    annotated = {r["idx"] for r in _records(tofu_dir, "forget10_annotated")}
    uds_items = json.loads((base_world / "data" / "uds_data.json").read_text())
    assert [it["idx"] for it in uds_items] == [i for i in range(PER_AUTHOR) if i in annotated]
    assert len(_split(base_world, "real_authors")) == len(_split(base_world, "world_facts")) == 4


def test_base_is_the_pretrained_model_bit_for_bit(base_world, smol_converted):
    base = load_file(base_world / "models" / "base" / "model.safetensors")
    pretrained = load_file(smol_converted["folder"] / "model.safetensors")
    assert base.keys() == pretrained.keys()
    assert all(torch.equal(base[k], pretrained[k]) for k in base)
    tok_base = json.loads((base_world / "models" / "base" / "tokenizer.json").read_text())
    assert tok_base["model"]["vocab"] == json.loads((smol_converted["folder"] /
                                                     "tokenizer.json").read_text())["model"]["vocab"]


def _answer_nll(folder: Path, items: list[dict]) -> float:
    """Mean NLL (nats/token) of the answers under the chat template with its default system turn,
    computed here with the tokenizer's own template, not the project's encoder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    total, count = 0.0, 0
    for it in items:
        prompt = tok.apply_chat_template([{"role": "user", "content": it["question"]}], tokenize=False,
                                         add_generation_prompt=True)
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        a_ids = tok(it["answer"], add_special_tokens=False)["input_ids"]
        ids = torch.tensor([p_ids + a_ids])
        with torch.no_grad():
            logp = torch.log_softmax(model(ids).logits[0, :-1].double(), -1)
        target = ids[0, 1:]
        picked = logp[torch.arange(len(target)), target][len(p_ids) - 1:]
        total, count = total - float(picked.sum()), count + len(a_ids)
    return total / count


@pytest.mark.slow
def test_training_moves_the_forget_answers_as_the_data_says(world):
    forget, retain = _split(world, "forget"), _split(world, "retain")
    nll = {name: _answer_nll(world / "models" / name, forget)
           for name in ("base", "full", "retain", "npo_lr3e-5_b01_a1_ep2",
                        "pos_full_from_full_s0", "neg_retain_from_retain_s0")}
    assert nll["full"] < 0.5 * nll["base"]                  # full learnt the forget answers
    assert nll["retain"] > 2 * nll["full"]                  # retain never saw them
    assert nll["npo_lr3e-5_b01_a1_ep2"] > nll["full"]       # unlearning pushed them down
    assert nll["pos_full_from_full_s0"] < nll["neg_retain_from_retain_s0"]   # P holds them, N does not
    assert _answer_nll(world / "models" / "retain", retain) < _answer_nll(world / "models" / "base", retain)


@pytest.mark.slow
def test_zoo_manifest_names_every_model_and_its_parent(world):
    zoo = json.loads((world / "zoo.json").read_text())
    parents = {m["name"]: m["parent"] for m in zoo["models"]}
    assert parents == {"base": None, "full": "base", "retain": "base", "npo_lr3e-5_b01_a1_ep2": "full",
                       "pos_full_from_full_s0": "full", "neg_retain_from_retain_s0": "retain"}
    assert all(m["path"] for m in zoo["models"])
    full = json.loads((world / "models" / "full" / "recipe.json").read_text())
    assert full["data"] == "forget + retain QA (chat)"


@pytest.mark.slow
def test_uds_invariants_on_the_30_layer_world(world, uds, tmp_path):
    results = {}
    for name in ("full", "retain", "npo_lr3e-5_b01_a1_ep2"):
        proc = uds("score", "--unlearned", f"tiny:{PRESET}/{name}", "--out", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        rows = [json.loads(line) for line in (tmp_path / name / "examples.jsonl").read_text().splitlines()]
        results[name] = (json.loads((tmp_path / name / "summary.json").read_text()), rows)
    full_rows = [r for r in results["full"][1] if r["skipped_reason"] is None]
    assert full_rows and all(len(r["s1_delta"]) == 30 for r in full_rows)
    assert all(d == 0.0 for r in full_rows for d in r["s2_delta"])
    assert results["full"][0]["uds"] == 0.0
    retain_rows = [r for r in results["retain"][1] if r["skipped_reason"] is None]
    assert retain_rows and all(r["s2_delta"] == r["s1_delta"] for r in retain_rows)
    assert results["retain"][0]["uds"] == 1.0
    npo = results["npo_lr3e-5_b01_a1_ep2"][0]["uds"]
    assert 0.0 <= npo <= 1.0 and not math.isnan(npo)


@pytest.mark.slow
def test_a_second_build_trains_nothing(world, monkeypatch):
    from checkpoints import catalogue
    from checkpoints.world.build import build_world

    def refuse(ctx, r):
        raise AssertionError(f"{r.name} was trained again")

    for method in list(catalogue.TRAINERS):
        t = catalogue.TRAINERS[method]
        monkeypatch.setitem(catalogue.TRAINERS, method, catalogue.Trainer(refuse, t.legacy_version, t.code_module))
    assert build_world(PRESET, 0, progress=False) == world


@pytest.mark.slow
def test_results_script_writes_build_json_from_the_recipes(world, tmp_path):
    """experiments/smol_results.py's build stage, without training: one row per built model,
    with the seconds and settings its recipe.json recorded."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("smol_results", Path(__file__).resolve().parents[1]
                                                  / "experiments" / "smol_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.stage_build(tmp_path, "cpu", PRESET, built_only=True)
    rows = {r["name"]: r for r in json.loads((tmp_path / "build.json").read_text())["models"]}
    assert set(rows) == {p.name for p in (world / "models").iterdir() if (p / "recipe.json").is_file()}
    for name, row in rows.items():
        recipe = json.loads((world / "models" / name / "recipe.json").read_text())
        assert row["train_seconds"] == recipe["train_seconds"] and row["train"] == recipe["train"]
        assert row["device"] == "cpu"


@pytest.mark.slow   # every metric twice on the 30-layer model; tests/test_fast_paths.py keeps it on the test world
def test_fast_measurement_paths_equal_the_straightforward_ones(world):
    """Metrics of the world's unlearned model on the real 30-layer model, on the fast paths
    (labels-only logits, entity-only Fisher logits, the continuous greedy loop) and on the
    straightforward ones; 16 new tokens a generation keep it short (tests/test_fast_paths.py
    drives the greedy loop's early exits and joins on the test world)."""
    from metrics.context import EvalSettings
    from metrics.session import EvalSession
    from tests.measurement_checks import assert_same_measurement, metric_runs

    session = EvalSession(f"tiny:{PRESET}/npo_lr3e-5_b01_a1_ep2")
    # the fast paths that depend on the model's kernels: labels-only teacher forcing (forget and holdout
    # sets), the joint greedy loop over two prompt sets, head-free entity states. Fisher's entity-only
    # logits (a backward per item on each of three 30-layer models) are compared on every key by
    # tests/test_fast_paths.py on the test world and by benchmarks/bench_measure.py's checks on smol-ci
    keys = ("es", "em", "prob", "truth_ratio", "rouge", "para_rouge", "mia_min_k", "logit_lens")
    runs = metric_runs(lambda fast: session.context(EvalSettings(batch_size=32, max_new_tokens=16,
                                                                 progress=False, fast=fast),
                                                   keys),
                       keys)
    assert_same_measurement(runs)
