"""PEFT adapter folders as checkpoint specs: a LoRA-unlearned tiny model scores, as an adapter on
its base, exactly as the merged model saved as a full folder; `--base` overrides the base; the
fingerprint is base + adapter; bad adapters are one clear line, exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from checkpoints.methods.data import UnlearnSets
from checkpoints.methods.lora import lora_unlearn, merged_copy, save_adapter
from checkpoints.specs import default_references, load_model, resolve_spec, tiny_spec
from checkpoints.world.store import load_world
from checkpoints.world.train import Loop, TrainConfig
from tests.engine_fixtures import make_tokenizer, tiny_model, world_examples_file
from uds.cli import main
from uds_core.fingerprint import model_fingerprint

N_EXAMPLES = 8


@pytest.fixture(scope="module")
def lora(test_world: Path, tmp_path_factory) -> dict[str, Path]:
    """NPO unlearning of the `test` world's full model through a LoRA adapter (2 epochs), saved
    as an adapter folder on the full model's folder and, merged, as a full folder."""
    root = tmp_path_factory.mktemp("adapters")
    full = test_world / "models" / "full"
    tok = AutoTokenizer.from_pretrained(full)
    world = load_world("test", 0)
    model = AutoModelForCausalLM.from_pretrained(full).eval()
    peft_model, losses = lora_unlearn(model, tok, UnlearnSets(world.forget, world.retain), "npo",
                                      TrainConfig(lr=1e-3, epochs=2, batch_size=8), loop=Loop(progress=False))
    assert len(losses) == 16 and all(torch.isfinite(torch.tensor(losses)))
    out = {"full": full, "retain": test_world / "models" / "retain"}
    out["adapter"] = save_adapter(peft_model, root / "adapter", str(full))
    merged = merged_copy(peft_model)
    merged.save_pretrained(root / "merged")
    tok.save_pretrained(root / "merged")
    out["merged"] = root / "merged"
    out["data"] = world_examples_file(test_world, N_EXAMPLES, root / "data.json")
    return out


def _score(lora: dict, unlearned: str, out: Path, *extra: str) -> list[dict]:
    rc = main(["score", "--unlearned", unlearned, "--full", str(lora["full"]), "--retain", str(lora["retain"]),
               "--data", str(lora["data"]), "--device", "cpu", "--no-s1-cache", "--out", str(out), *extra])
    assert rc == 0
    return [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]


def _assert_same_scores(a: list[dict], b: list[dict], tol: float = 1e-6) -> None:
    assert [r["idx"] for r in a] == [r["idx"] for r in b]
    for ra, rb in zip(a, b):
        assert ra["ke_layers"] == rb["ke_layers"]
        assert (ra["uds"] is None) == (rb["uds"] is None)
        if ra["uds"] is not None:
            assert abs(ra["uds"] - rb["uds"]) <= tol, (ra["idx"], ra["uds"], rb["uds"])
        for key in ("s1_delta", "s2_delta"):
            assert max(abs(x - y) for x, y in zip(ra[key], rb[key])) <= tol, (ra["idx"], key)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_adapter_scores_as_the_merged_full_folder(lora, tmp_path, dtype):
    assert not (lora["adapter"] / "config.json").exists() and (lora["adapter"] / "adapter_config.json").is_file()
    merged = _score(lora, str(lora["merged"]), tmp_path / "merged", "--dtype", dtype)
    adapter = _score(lora, str(lora["adapter"]), tmp_path / "adapter", "--dtype", dtype)
    _assert_same_scores(adapter, merged)
    summary = json.loads((tmp_path / "adapter" / "summary.json").read_text())
    assert summary["n_scored"] == N_EXAMPLES
    # LoRA unlearning did move the model: the full model itself scores 0 (spec §2.5 identity)
    assert summary["uds"] > 0.05


def test_base_override_with_a_tiny_spec(lora, tmp_path):
    """An adapter whose recorded base is gone scores on `--base tiny:test/full`, the same model."""
    moved = tmp_path / "moved_adapter"
    shutil.copytree(lora["adapter"], moved)
    config = json.loads((moved / "adapter_config.json").read_text())
    (moved / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": "/gone/full"}))
    merged = _score(lora, str(lora["merged"]), tmp_path / "merged")
    _assert_same_scores(_score(lora, str(moved), tmp_path / "moved", "--base", "tiny:test/full"), merged)


def test_adapter_is_a_plain_merged_model_for_every_loader(lora):
    """What meta-eval zoos and the OU plug-in load (checkpoints.specs.load_model): a plain Llama
    with the merged folder's weights, no peft layers left, fingerprinted as base + adapter."""
    model = load_model(str(lora["adapter"]))
    reference = load_model(str(lora["merged"]))
    assert type(model) is type(reference)
    assert not any("lora" in name for name, _ in model.named_modules())
    ref_state = reference.state_dict()
    assert all(torch.equal(t, ref_state[k]) for k, t in model.state_dict().items())
    fp = model_fingerprint(model)
    assert fp == model_fingerprint(load_model(str(lora["adapter"])))     # stable across loads
    assert fp != model_fingerprint(reference)                             # base + adapter, not just weights
    assert model_fingerprint(load_model(str(lora["full"]))) != fp


def test_nf4_of_an_adapter_is_nf4_of_the_merged_model(lora):
    """Meta-eval's quantisation robustness (meta_eval.perturb.load_nf4) quantises the merged
    model, as it would the merged folder, not the base with a float adapter on top."""
    pytest.importorskip("bitsandbytes")
    from meta_eval.perturb import load_nf4

    quantised = load_nf4(str(lora["adapter"])).state_dict()
    reference = load_nf4(str(lora["merged"])).state_dict()
    assert quantised.keys() == reference.keys()
    assert all(torch.equal(t, reference[k]) for k, t in quantised.items())


def test_adapter_on_a_tiny_base_takes_its_world_defaults(lora, tmp_path):
    tagged = tmp_path / "tagged"
    shutil.copytree(lora["adapter"], tagged)
    config = json.loads((tagged / "adapter_config.json").read_text())
    (tagged / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": "tiny:test/full"}))
    assert resolve_spec(str(tagged)).base.raw == "tiny:test/full"
    full, retain, _ = default_references(str(tagged))
    assert (full, retain) == (tiny_spec("test", 0, "full"), tiny_spec("test", 0, "retain"))


def _metrics(spec: str, out: Path, *extra: str) -> dict:
    rc = main(["metrics", "--model", spec, "--metrics", "prob,truth_ratio", "--no-system-prompt", "--device", "cpu",
               "--out", str(out), *extra])
    assert rc == 0
    return json.loads((out / "metrics.json").read_text())["metrics"]


def test_metrics_of_an_untrained_adapter_equal_its_base(lora, tmp_path, test_world):
    """A fresh LoRA adapter (B = 0) adds nothing: `uds metrics` of it equals its base's; the
    trained adapter's differ (so the adapter is really applied)."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(lora["full"])
    fresh = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    null = save_adapter(fresh, tmp_path / "null_adapter", "tiny:test/full")
    trained = tmp_path / "trained"
    shutil.copytree(lora["adapter"], trained)
    base_metrics = _metrics("tiny:test/full", tmp_path / "m_full")
    assert _metrics(str(null), tmp_path / "m_null") == base_metrics
    assert _metrics(str(trained), tmp_path / "m_trained", "--base", "tiny:test/full")["prob"] != base_metrics["prob"]


# --- bad input: one line, exit 2 --------------------------------------------------------------

def _one_line_error(capsys, args: list[str], *needles: str) -> str:
    rc = main(args)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "%|" not in line]
    assert rc == 2 and len(err) == 1, err
    assert all(n in err[0] for n in needles), err[0]
    return err[0]


def _adapter_with_base(lora, folder: Path, base: str) -> Path:
    shutil.copytree(lora["adapter"], folder)
    config = json.loads((folder / "adapter_config.json").read_text())
    (folder / "adapter_config.json").write_text(json.dumps({**config, "base_model_name_or_path": base}))
    return folder


def _score_args(lora, unlearned: Path, *extra: str) -> list[str]:
    return ["score", "--unlearned", str(unlearned), "--full", str(lora["full"]), "--retain", str(lora["retain"]),
            "--data", str(lora["data"]), "--device", "cpu", "--no-s1-cache", *extra]


def test_adapter_whose_hub_base_is_not_cached_offline(lora, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads the variable once, at import: without this the lookup waits on the network
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    adapter = _adapter_with_base(lora, tmp_path / "a", "someone/not-cached-base")
    _one_line_error(capsys, _score_args(lora, adapter, "--out", str(tmp_path / "o")),
                    "base model of adapter", "someone/not-cached-base", "--base")


def test_adapter_whose_local_base_is_missing(lora, tmp_path, capsys):
    adapter = _adapter_with_base(lora, tmp_path / "a", str(tmp_path / "no" / "such" / "base"))
    _one_line_error(capsys, _score_args(lora, adapter), "base model of adapter", "no/such/base", "--base")


@pytest.fixture(scope="module")
def other_base(tmp_path_factory) -> Path:
    """A Llama of another shape (3 layers, hidden 48, another vocabulary) and its tokenizer."""
    folder = tmp_path_factory.mktemp("other") / "other_base"
    tiny_model("llama", layers=3, hidden=48).save_pretrained(folder)
    make_tokenizer().save_pretrained(folder)
    return folder


def test_adapter_for_another_architecture_than_full(lora, other_base, tmp_path, capsys):
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(other_base), LoraConfig(r=4))
    adapter = save_adapter(peft_model, tmp_path / "other_adapter", str(other_base))
    _one_line_error(capsys, _score_args(lora, adapter), "not compatible", "differs")


def test_adapter_that_does_not_fit_the_given_base(lora, other_base, capsys):
    _one_line_error(capsys, _score_args(lora, lora["adapter"], "--base", str(other_base)),
                    "does not fit its base model", str(other_base))


def test_base_without_an_adapter(lora, capsys):
    _one_line_error(capsys, _score_args(lora, lora["merged"], "--base", "tiny:test/full"),
                    "--base", "no model spec is an adapter")


def test_adapter_without_weights(lora, tmp_path, capsys):
    adapter = _adapter_with_base(lora, tmp_path / "a", str(lora["full"]))
    (adapter / "adapter_model.safetensors").unlink()
    _one_line_error(capsys, _score_args(lora, adapter), "holds no adapter_model.safetensors")


def test_a_folder_that_is_neither_model_nor_adapter(lora, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    _one_line_error(capsys, _score_args(lora, tmp_path / "empty"), "no config.json (nor adapter_config.json)")


def test_a_cached_measurement_of_an_adapter_is_tied_to_its_base_too(lora, tmp_path):
    """meta-eval's cache identity: an adapter on another base folder is another model."""
    from meta_eval.population import folder_stamp, model_identity

    shutil.copytree(lora["full"], tmp_path / "base_copy")
    on_full = model_identity(str(lora["adapter"]))
    on_copy = model_identity(str(_adapter_with_base(lora, tmp_path / "adapter", str(tmp_path / "base_copy"))))
    assert on_full.endswith("+" + folder_stamp(lora["full"]))
    assert on_copy.endswith("+" + folder_stamp(tmp_path / "base_copy")) and on_copy != on_full
