"""The metric pipeline on random tiny models: encoding, generation, shared work (forward counts),
every key end to end, reference identities, and the `uds metrics` command."""

from __future__ import annotations

import json
import math

import pytest
import torch

from checkpoints.world.schema import World
from metrics.encoding import JAILBREAK_PREFIX, encode_qa, generation_prompt, label_text, lm_document
from uds_core.gen_options import GenOptions
from uds_core.generation import greedy_generate
from metrics.registry import ALL_KEYS, REGISTRY, evaluate
from tests.hook_fixtures import count_calls
from tests.metrics_fixtures import make_ctx, qa_item, tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo
from uds.cli import main

ROLES = {"model": "tiny:t/unl", "full": "tiny:t/full", "retain": "tiny:t/retain", "base": "tiny:t/base"}


@pytest.fixture(scope="module")
def zoo() -> dict:
    """base (random), full (trained on forget + retain), retain (retain only), unl (full, then retain)."""
    return trained_zoo()


# --- encoding and generation -------------------------------------------------------------------

def test_chat_encoding_labels_and_prompts():
    tok = tiny_tokenizer()
    item = qa_item(0)
    enc = encode_qa(tok, item["question"], item["answer"])
    labelled = [t for t in enc.labels if t != -100]
    assert labelled[-1] == tok.eos_token_id and enc.input_ids[-len(labelled):] == tuple(labelled)
    assert label_text(tok, enc) == item["answer"]
    prompt = generation_prompt(tok, item["question"])
    assert enc.input_ids[:len(prompt)] == prompt and enc.labels[len(prompt)] != -100
    assert tok.decode(prompt) == f"<|bos|><|user|>{item['question']}<|eot|><|assistant|>"
    jail = generation_prompt(tok, item["question"], jailbreak=True)
    assert jail == prompt + tuple(tok.encode(JAILBREAK_PREFIX, add_special_tokens=False))
    assert encode_qa(tok, item["question"], item["answer"], max_length=5).input_ids == enc.input_ids[-5:]
    doc = lm_document(tok, "born in Lisbon")
    assert doc.input_ids[0] == tok.bos_token_id and doc.labels[0] == -100 and doc.labels[-1] == tok.eos_token_id


def test_left_padded_generation_matches_one_by_one(zoo):
    tok, model = tiny_tokenizer(), zoo["tiny:t/full"]
    prompts = [generation_prompt(tok, qa_item(i)["question"] + " Please" * i) for i in range(3)]
    batched = greedy_generate(model, tok, prompts, GenOptions(batch_size=3, max_new_tokens=6, progress=False))
    single = [greedy_generate(model, tok, [p], GenOptions(1, 6, progress=False))[0] for p in prompts]
    assert [g.ids for g in batched] == [g.ids for g in single]
    assert all(tok.eos_token_id not in g.ids and len(g.ids) <= 6 for g in batched)


# --- shared work -------------------------------------------------------------------------------

def _expected_forward_calls(batch: int) -> dict[str, int]:
    """Independently from the split sizes, on the straightforward path: one batched pass per
    (model, split) sweep, per (model, prompt set) generation (max_new_tokens=1: one forward per
    batch), per model states and Fisher."""
    s = tiny_splits()
    n = {k: len(v) for k, v in s.items()}
    b = lambda count: math.ceil(count / batch)  # noqa: E731
    uds = n["forget"]  # every forget item is annotated and prepared
    model = (b(7 * n["forget"]) + b(n["holdout"]) + b(7 * n["retain_eval"]) + b(4 * n["real_authors"])
             + b(4 * n["world_facts"])                                    # teacher forcing: all variants
             + 2 * b(n["forget"]) + b(n["retain_eval"]) + b(n["real_authors"]) + b(n["world_facts"])  # generation
             + b(uds) + math.ceil(uds / 4))                                # states + Fisher (batch 4)
    full = b(n["forget"]) + b(uds) + math.ceil(uds / 4)                   # fluency denominator generation
    retain = b(n["forget"]) + b(n["holdout"]) + b(uds) + math.ceil(uds / 4)  # s_mia anchor AUCs
    base = 2 * b(n["forget"])                                             # scores model and full generations
    return {"tiny:t/unl": model, "tiny:t/full": full, "tiny:t/retain": retain, "tiny:t/base": base}


@pytest.mark.parametrize("fast", [False, True])
def test_every_pass_runs_once(zoo, fast):
    ctx = make_ctx(zoo, ROLES, batch_size=3, max_new_tokens=1, fast=fast)
    counters = {}
    with count_calls(zoo["tiny:t/unl"]) as cu, count_calls(zoo["tiny:t/full"]) as cf, \
            count_calls(zoo["tiny:t/retain"]) as cr, count_calls(zoo["tiny:t/base"]) as cb:
        evaluate(ctx, ["prob"])                  # the forget sweep already covers truth_ratio's variants
        evaluate(ctx, list(ALL_KEYS))
        counters = {"tiny:t/unl": cu[0], "tiny:t/full": cf[0], "tiny:t/retain": cr[0], "tiny:t/base": cb[0]}
        ctx.results.clear()
        evaluate(ctx, list(ALL_KEYS))            # recomputing every metric reuses every pass
        again = cu[0] + cf[0] + cr[0] + cb[0]
    if not fast:   # the fast path's counts depend on its packing; what it shares is the same
        assert counters == _expected_forward_calls(3)
    assert all(counters.values()) and again == sum(counters.values())
    assert all(v == 1 for v in ctx.models.load_count.values())


# --- end to end ------------------------------------------------------------------------------

def test_all_keys_finite_with_per_example_values(zoo):
    ctx = make_ctx(zoo, ROLES)
    results = evaluate(ctx, list(ALL_KEYS))
    assert list(results) == list(ALL_KEYS)
    bad = {k: r.value for k, r in results.items() if r.value is None or not math.isfinite(r.value)}
    assert not bad
    sizes = {k: len(v) for k, v in tiny_splits().items()}
    for key in ("es", "em", "prob", "paraprob", "truth_ratio", "rouge", "para_rouge", "jailbreak_rouge", "fluency"):
        assert len(results[key].per_example) == sizes["forget"]
    for key in ("retain_q_prob", "ra_q_rouge", "wf_truth_ratio"):
        assert len(results[key].per_example) == sizes[{"retain": "retain_eval", "ra": "real_authors",
                                                       "wf": "world_facts"}[key.split("_")[0]]]
    for key in ("es", "em", "prob", "paraprob", "truth_ratio", "rouge", "mia_loss", "retain_q_prob", "model_utility"):
        assert 0.0 <= results[key].value <= 1.0
    assert results["fluency"].info["fluency_source"] == "base-lm-proxy"


def test_reference_identities(zoo):
    """--model = full: erasure scores 0 (shared loads); --model = retain: erasure scores 1."""
    keys = ["cka", "logit_lens", "fisher_masked_0.001", "s_mia_loss", "s_mia_min_kpp", "fluency"]
    as_full = evaluate(make_ctx(zoo, {**ROLES, "model": ROLES["full"]}, keys), keys)
    assert as_full["cka"].value == 0.0 and as_full["logit_lens"].value == 0.0
    assert as_full["fisher_masked_0.001"].value == pytest.approx(0.0, abs=1e-6)
    assert as_full["fluency"].value == 1.0
    ctx = make_ctx(zoo, {**ROLES, "model": ROLES["retain"]}, keys)
    as_retain = evaluate(ctx, keys)
    assert as_retain["cka"].value == pytest.approx(1.0, abs=1e-6)
    assert as_retain["logit_lens"].value == pytest.approx(1.0, abs=1e-6)
    assert as_retain["fisher_masked_0.001"].value == 1.0
    assert as_retain["s_mia_loss"].value == 1.0 and as_retain["s_mia_min_kpp"].value == 1.0
    assert ctx.models.load_count["tiny:t/retain"] == 1


def test_registry_declares_everything():
    for spec in REGISTRY.values():
        assert spec.category and spec.orientation in ("knowledge", "erasure", "utility") and spec.description
    erasure = {k for k, s in REGISTRY.items() if s.orientation == "erasure"}
    assert erasure == {"s_mia_loss", "s_mia_zlib", "s_mia_min_k", "s_mia_min_kpp", "cka", "logit_lens",
                       "fisher_masked_0.0001", "fisher_masked_0.001", "fisher_masked_0.01", "uds",
                       "mem_bits_erased"}   # spec-probes §1.1: 1 = as erased as the retain model
    assert REGISTRY["s_mia_zlib"].references == ("retain",) and REGISTRY["cka"].references == ("full", "retain")
    assert REGISTRY["cka"].knowledge_view(0.25) == 0.75 and REGISTRY["es"].knowledge_view(0.25) == 0.25


# --- the command -----------------------------------------------------------------------------

@pytest.fixture
def patched_cli(zoo, tmp_path, monkeypatch):
    import dataclasses

    import checkpoints.specs as specs
    from checkpoints.world import presets

    # `tiny:t/...` names a preset: the test world's settings (no LoRA, no system turn) under that name
    monkeypatch.setitem(presets.PRESETS, "t", dataclasses.replace(presets.get_preset("test"), name="t"))
    splits = tiny_splits()
    data = tmp_path / "uds_data.json"
    data.write_text(json.dumps(splits["forget"]))
    world = World(kind="synthetic", **splits)
    monkeypatch.setattr(specs, "default_anchors", lambda m, base=None: ("tiny:t/full", "tiny:t/retain"))
    monkeypatch.setattr(specs, "default_data", lambda m, tofu_dir=None, base=None: str(data))
    monkeypatch.setattr(specs, "load_world_for_spec", lambda spec, tofu_dir=None: world)
    monkeypatch.setattr(specs, "load_model",
                        lambda s, device="cpu", dtype=None, *args, **kwargs: zoo[getattr(s, "raw", s)])
    monkeypatch.setattr(specs, "load_tokenizer", lambda s, base=None: tiny_tokenizer())
    return tmp_path


def test_cli_writes_metrics_json(patched_cli):
    out = patched_cli / "run"
    rc = main(["metrics", "--model", "tiny:t/unl", "--out", str(out), "--batch-size", "4",
               "--max-new-tokens", "3", "--device", "cpu"])
    assert rc == 0
    doc = json.loads((out / "metrics.json").read_text())
    assert doc["model"] == "tiny:t/unl" and list(doc["metrics"]) == list(ALL_KEYS)
    assert all(isinstance(v, float) and math.isfinite(v) for v in doc["metrics"].values())
    assert doc["fluency_source"] == "base-lm-proxy"
    assert doc["settings"]["references"] == {"full": "tiny:t/full", "retain": "tiny:t/retain", "base": "tiny:t/base",
                                             "mem_bits_reference": "tiny:t/retain"}
    assert len(doc["per_example"]["prob"]) == len(tiny_splits()["forget"])


def test_cli_parity_flag_and_alias(patched_cli, capsys):
    """--parity lands in the settings record; --ou-attention-mask is --parity open-unlearning."""
    for argv, parity, mask in ((["--parity", "reference"], "reference", "length"),
                               (["--ou-attention-mask"], "open-unlearning", "ou-pad-masked"),
                               ([], "spec", "length")):
        out = patched_cli / f"run-{parity}"
        assert main(["metrics", "--model", "tiny:t/unl", "--metrics", "prob,paraprob", "--out", str(out),
                     "--device", "cpu", *argv]) == 0
        settings = json.loads((out / "metrics.json").read_text())["settings"]
        assert (settings["parity"], settings["attention_mask"]) == (parity, mask)
    capsys.readouterr()
    assert main(["metrics", "--model", "tiny:t/unl", "--parity", "reference", "--ou-attention-mask"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--ou-attention-mask means --parity open-unlearning" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("argv, message", [
    (["--metrics", "prob,bogus"], "unknown metric bogus"),
    (["--metrics", "uds"], "uds score"),
    (["--batch-size", "0"], "--batch-size"),
])
def test_cli_bad_input_exits_2(patched_cli, capsys, argv, message):
    assert main(["metrics", "--model", "tiny:t/unl", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    if "bogus" in argv[-1]:
        assert "valid: all, es, em, prob" in err


def test_fluency_without_a_measure():
    from argparse import Namespace

    from uds.commands.metrics import _fluency_available

    args = Namespace(fluency_classifier=None)
    with pytest.raises(Exception, match="fluency-classifier"):
        _fluency_available(["fluency"], args, {"base": None}, explicit=True)
    assert _fluency_available(["fluency", "prob"], args, {"base": None}, explicit=False) is False
    assert _fluency_available(["fluency"], args, {"base": "tiny:t/base"}, explicit=True) is True


def test_fluency_with_a_local_classifier(zoo, tmp_path):
    from transformers import LlamaForSequenceClassification

    tok = tiny_tokenizer()
    cfg = zoo["tiny:t/base"].config.to_dict() | {"num_labels": 2}
    torch.manual_seed(0)
    clf = LlamaForSequenceClassification(type(zoo["tiny:t/base"].config).from_dict(cfg)).eval()
    clf.save_pretrained(tmp_path / "clf")
    tok.save_pretrained(tmp_path / "clf")
    ctx = make_ctx(zoo, ROLES, ["fluency"])
    ctx.fluency_classifier = str(tmp_path / "clf")
    result = evaluate(ctx, ["fluency"])["fluency"]
    assert result.info["fluency_source"] == f"classifier:{tmp_path / 'clf'}"
    # independently: one text at a time, softmax of the logits, class 0
    texts = [g.text for g in ctx.generations("model", "forget")]
    with torch.no_grad():
        logits = [clf(**tok(t, return_tensors="pt", truncation=True, max_length=32)).logits for t in texts]
    direct = [float(torch.softmax(z, -1)[0, 0]) for z in logits]
    assert result.per_example == pytest.approx(direct, abs=1e-5)
    assert result.value == pytest.approx(sum(direct) / len(direct), abs=1e-5)
