"""The Open-Unlearning plug-in (uds.ou) through a stand-in of OU's calling convention, on the
`test` tiny world; no OU install needed.

OU looks a handler up in a registry dict and calls `fn(model, tokenizer=..., template_args=...,
[data=..., collators=...,] **yaml_keys)` (evals/metrics/base.py), with the model it loaded
itself. The stand-in does exactly that with models loaded here, independently of the plug-in's
anchor cache. Expected numbers come from invariants (UDS of full = 0, of retain = 1) and from the
command line (`uds score`, `uds metrics`) on the same models.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
import yaml

from checkpoints.specs import load_model, load_tokenizer
from checkpoints.world.store import load_world
from metrics.registry import REGISTRY
from uds_core.arch import transformers_major
from uds.cli import main
from uds_core.errors import UdsInputError
from uds.ou import gen_configs, handlers
from uds.ou.callback import RegisterUds
from uds.ou.register import register

# The test world was saved by transformers 5 without the 4.x fields (its tokenizer class does not
# exist in 4.45): under OU's pin, tests/test_ou_compat.py and experiments/ou_integration.sh cover this.
pytestmark = pytest.mark.skipif(transformers_major() < 5, reason="test world saved without the 4.x fields")

FULL, RETAIN = "tiny:test/full", "tiny:test/retain"
UNLEARNED = "tiny:test/npo_lr2e-4_b01_a1_ep10"
CONFIGS = Path(handlers.__file__).resolve().parent / "configs" / "eval" / "tofu_metrics"


class Rows:
    """Stands in for the HF dataset inside OU's QADataset (`dataset.data`): columns by name."""

    def __init__(self, questions: list[str]):
        self.column_names = ["question", "answer", "index"]
        self._questions = questions

    def __getitem__(self, column: str) -> list[str]:
        assert column == "question"
        return self._questions


def ou_data(questions: list[str]) -> dict:
    return {"TOFU_QA_forget": types.SimpleNamespace(data=Rows(questions))}


def yaml_keys(name: str, forget_split: str = "forget10", **override) -> dict:
    """The keys OU passes from `eval/tofu_metrics/<name>.yaml` (its defaults list and dataset
    config are consumed by Hydra / OU before the call; Hydra interpolates OU's
    `eval.tofu.forget_split`, here `forget_split`)."""
    doc = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
    doc.pop("defaults", None)
    doc.pop("datasets", None)
    assert doc["forget_split"] == "${eval.tofu.forget_split}"
    return doc | {"forget_split": forget_split} | override


@pytest.fixture(scope="module")
def world(test_world):
    return load_world("test", 0)


@pytest.fixture(scope="module")
def ou(test_world):
    """(registry, call): the handlers registered in a stand-in registry, and OU's call."""
    registry: dict = {}
    register(registry)
    tok = load_tokenizer(FULL)

    def call(name: str, model, **keys):
        assert keys["handler"] == name   # OU picks the function by the YAML's handler
        return registry[name](model, tokenizer=tok, template_args={"apply_chat_template": True}, **keys)
    return registry, call


@pytest.fixture(scope="module")
def models(test_world):
    """Models loaded as OU loads them (not through the plug-in's anchor cache)."""
    return {name: load_model(f"tiny:test/{name}") for name in ("full", "retain", UNLEARNED.split("/")[-1])}


@pytest.fixture
def s1_dir(tmp_path, monkeypatch):
    """A fresh S1 cache folder for the plug-in and `uds score` alike."""
    monkeypatch.setattr("uds_core.s1_cache.s1_cache_dir", lambda: tmp_path / "s1")
    return tmp_path / "s1"


def anchors(**more) -> dict:
    return yaml_keys("uds", **({"full_model": FULL, "retain_model": RETAIN} | more))


def test_every_registry_metric_has_a_generated_config():
    assert gen_configs.stale_files() == [], "run: python -m uds.ou.gen_configs"
    for key in REGISTRY:
        name = "uds" if key == "uds" else f"uds_{key}"
        doc = yaml.safe_load((CONFIGS / f"{name}.yaml").read_text())
        assert doc["handler"] == name and doc.get("key", "uds") == key
    registry: dict = {}
    assert sorted(register(registry)) == sorted(registry) == sorted(
        ["uds"] + [f"uds_{k}" for k in REGISTRY if k != "uds"])


def test_uds_of_full_is_0_and_of_retain_is_1(ou, models, world, s1_dir):
    _, call = ou
    questions = [it["question"] for it in world.forget]
    full = call("uds", models["full"], data=ou_data(questions), **anchors())
    retain = call("uds", models["retain"], data=ou_data(questions), **anchors())
    assert full["n_scored"] > 0 and full["n_scored"] == retain["n_scored"]
    assert full["agg_value"] == pytest.approx(0.0, abs=1e-12)
    assert retain["agg_value"] == pytest.approx(1.0, abs=1e-12)
    assert json.loads(json.dumps(retain, allow_nan=False)) == retain   # JSON-safe as is
    assert retain["settings"]["s1_cache"] == "hit"                     # the full model's run wrote it
    # keyed by dataset row: each annotated idx is the row of its question in the forget split
    records = json.loads(Path(retain["settings"]["data_path"]).read_text())
    assert set(retain["value_by_index"]) == {str(r["idx"]) for r in records}
    assert all(questions[int(r["idx"])] == r["question"] for r in records)


def test_unlearned_equals_uds_score_and_shares_its_s1_cache(ou, models, s1_dir, tmp_path, capsys):
    _, call = ou
    doc = call("uds", models[UNLEARNED.split("/")[-1]], **anchors())
    assert doc["settings"]["s1_cache"] == "miss" and doc["settings"]["algorithm"].startswith("fast")
    out = tmp_path / "score"
    assert main(["score", "--unlearned", UNLEARNED, "--full", FULL, "--retain", RETAIN, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["s1_cache"] == "hit"      # one key function: the plug-in's S1 entry serves `uds score`
    assert doc["agg_value"] == pytest.approx(summary["uds"], abs=1e-6)
    assert doc["n_scored"] == summary["n_scored"] and doc["ci95"] == pytest.approx(summary["ci95"], abs=1e-6)
    per_example = {str(e["idx"]): e["uds"] for e in map(json.loads, (out / "examples.jsonl").read_text().splitlines())}
    assert {k: v["score"] for k, v in doc["value_by_index"].items()} == pytest.approx(per_example, abs=1e-6)


def test_nothing_scored_gives_null_not_zero(ou, models, s1_dir):
    _, call = ou
    doc = call("uds", models["retain"], **anchors(tau=1e9))   # no layer passes tau: no KE layer anywhere
    assert doc["agg_value"] is None and doc["n_scored"] == 0 and doc["ci95"] is None


def test_registry_metrics_equal_uds_metrics(ou, models, tmp_path):
    _, call = ou
    model = models[UNLEARNED.split("/")[-1]]
    keys = ("prob", "logit_lens")
    got = {k: call(f"uds_{k}", model, **yaml_keys(f"uds_{k}", full_model=FULL, retain_model=RETAIN)) for k in keys}
    out = tmp_path / "metrics"
    assert main(["metrics", "--model", UNLEARNED, "--metrics", ",".join(keys), "--out", str(out)]) == 0
    want = json.loads((out / "metrics.json").read_text())
    for k in keys:
        assert got[k]["agg_value"] == pytest.approx(want["metrics"][k], abs=1e-9)
        assert json.loads(json.dumps(got[k], allow_nan=False)) == got[k]
    per_item = got["prob"]["value_by_index"]
    assert list(per_item) == [str(i) for i in range(len(want["per_example"]["prob"]))]
    assert list(per_item.values()) == pytest.approx(want["per_example"]["prob"], abs=1e-9)


def _message(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_bad_input_is_one_line_naming_the_key_or_path(ou, models, world, tmp_path):
    _, call = ou
    model = models["retain"]
    with pytest.raises(UdsInputError) as e:
        call("uds", model, **anchors(taux=0.1))
    assert "'taux'" in _message(e)
    with pytest.raises(UdsInputError) as e:
        call("uds_cka", model, **yaml_keys("uds_cka", full_model=FULL, retain_model=RETAIN, key="nope"))
    assert "'nope'" in _message(e)
    missing = str(tmp_path / "no_such_full")
    with pytest.raises(UdsInputError) as e:
        call("uds", model, **anchors(full_model=missing))
    assert "no_such_full" in _message(e)
    unannotated = tmp_path / "plain.json"
    unannotated.write_text(json.dumps([{"idx": 0, "question": "q?", "answer": "a."}]))
    with pytest.raises(UdsInputError) as e:
        call("uds", model, **anchors(data_path=str(unannotated)))
    assert "plain.json" in _message(e) and "prefix" in _message(e)
    shuffled = [it["question"] for it in world.forget][::-1]
    with pytest.raises(UdsInputError) as e:
        call("uds", model, data=ou_data(shuffled), **anchors())
    assert "TOFU_QA_forget" in _message(e)


def test_architecture_mismatch_is_refused(ou, models):
    _, call = ou
    cfg = models["full"].config.to_dict() | {"num_hidden_layers": 2}
    other = type(models["full"])(type(models["full"].config).from_dict(cfg)).eval()
    with pytest.raises(UdsInputError) as e:
        call("uds", other, **anchors())
    assert "number of decoder layers" in _message(e)


def test_callback_registers_in_ou_registry(monkeypatch):
    """The Hydra callback fills OU's `evals.metrics.METRICS_REGISTRY` through OU's decorator."""
    registry: dict = {}
    wrapped = []

    class unlearning_metric:   # OU's decorator: name -> callable wrapping fn
        def __init__(self, name):
            self.name = name

        def __call__(self, fn):
            wrapped.append(self.name)
            return types.SimpleNamespace(name=self.name, fn=fn)
    monkeypatch.setitem(sys.modules, "evals", types.ModuleType("evals"))
    monkeypatch.setitem(sys.modules, "evals.metrics", types.SimpleNamespace(METRICS_REGISTRY=registry))
    monkeypatch.setitem(sys.modules, "evals.metrics.base", types.SimpleNamespace(unlearning_metric=unlearning_metric))
    RegisterUds().on_run_start(config=None)
    assert registry["uds"].fn is handlers.uds_handler and registry["uds_cka"].name == "uds_cka"
    assert sorted(wrapped) == sorted(registry)


def test_callback_without_ou_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "evals", None)
    with pytest.raises(UdsInputError) as e:
        RegisterUds().on_job_start(config=None)
    assert "evals.metrics" in _message(e)


def test_json_safe_drops_nan_and_numpy():
    import numpy as np

    doc = handlers.json_safe({1: np.float32(0.5), "x": [float("nan"), np.int64(3), None, True], "t": (1.0,)})
    assert doc == {"1": 0.5, "x": [None, 3.0, None, True], "t": [1.0]}


class _OuMetric:
    """OU's UnlearningMetric call path, trimmed: datasets are loaded before the handler runs."""

    def __init__(self, error: Exception | None):
        self.error, self.seen = error, None

    def get_datasets(self, dataset_cfgs=None, **kwargs):
        if self.error:
            raise self.error
        return {"TOFU_QA_forget": "rows"}

    def __call__(self, **kwargs):
        cfgs = kwargs.pop("datasets", None)
        self.seen = self.get_datasets(dataset_cfgs=cfgs, **kwargs) if cfgs is not None else None
        return self.seen


def test_offline_with_data_path_skips_the_forget_set_cross_check(caplog):
    from uds.ou.register import tolerate_unreachable_forget_set

    offline = ConnectionError("Couldn't reach 'locuslab/TOFU' on the Hub (LocalEntryNotFoundError)")
    metric = tolerate_unreachable_forget_set(_OuMetric(offline))
    with caplog.at_level("WARNING"):
        assert metric(datasets={"TOFU_QA_forget": {}}, data_path="/data/forget10_annotated.json") is None
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "locuslab/TOFU" in lines[0] and "forget10_annotated.json" in lines[0]
    with pytest.raises(UdsInputError) as e:   # no local file to fall back on: say what to pass
        metric(datasets={"TOFU_QA_forget": {}}, data_path=None)
    assert "data_path=" in _message(e) and "\n" not in _message(e)
    online = tolerate_unreachable_forget_set(_OuMetric(None))   # reachable: loaded and cross-checked as before
    assert online(datasets={"TOFU_QA_forget": {}}, data_path="/x.json") == {"TOFU_QA_forget": "rows"}
    broken = tolerate_unreachable_forget_set(_OuMetric(KeyError("bad config")))   # not a network fault
    with pytest.raises(KeyError):
        broken(datasets={"TOFU_QA_forget": {}}, data_path="/x.json")


def test_forget_split_takes_the_splits_rows_and_its_retain_anchor(ou, models, test_world, tofu_dir, s1_dir,
                                                                  tmp_path):
    """OU's `forget_split=forget01`: the handler scores forget01's rows (value_by_index keyed by
    its own 40 rows), exactly as `uds score --split forget01` does on the same models. The anchors
    are the test world's folders (not `tiny:` names), so the TOFU split applies."""
    from checkpoints.specs import model_source
    from checkpoints.splits import get_split, read_split_rows
    from uds.ou.anchors import anchor_session
    from uds.ou.options import UdsOptions

    _, call = ou
    name = UNLEARNED.split("/")[-1]
    folder = {n: model_source(f"tiny:test/{n}") for n in ("full", "retain", name)}
    forget01 = [r["question"] for r in read_split_rows(get_split("forget01"), tofu_dir)]
    keys = yaml_keys("uds", forget_split="forget01", full_model=folder["full"], retain_model=folder["retain"])
    doc = call("uds", models[name], data=ou_data(forget01), **keys)
    hand = json.loads((tofu_dir / "forget10_annotated.json").read_text())
    assert set(doc["value_by_index"]) == {str(r["idx"] - 360) for r in hand if r["idx"] >= 360}
    assert doc["settings"]["forget_split"] == "forget01" and doc["settings"]["retain_model"] == folder["retain"]
    out = tmp_path / "score"
    assert main(["score", "--unlearned", folder[name], "--full", folder["full"], "--retain", folder["retain"],
                 "--split", "forget01", "--out", str(out)]) == 0
    per_example = {str(e["idx"]): e["uds"] for e in map(json.loads, (out / "examples.jsonl").read_text().splitlines())}
    assert {k: v["score"] for k, v in doc["value_by_index"].items()} == pytest.approx(per_example, abs=1e-6)
    with pytest.raises(UdsInputError) as e:   # forget10's annotations against OU's forget01 rows
        call("uds", models[name], data=ou_data(forget01), **(keys | {"forget_split": "forget10"}))
    assert "TOFU_QA_forget" in _message(e)
    with pytest.raises(UdsInputError) as e:   # a tiny world has one forget set
        call("uds", models[name], **anchors(forget_split="forget01"))
    assert "one forget set" in _message(e)
    # OU's own anchors: forget01's retain anchor is OU's retain99 model (resolved, not loaded)
    assert anchor_session(UdsOptions(forget_split="forget01"), models[name]).roles["retain"] == "llama32-1b_retain99"


def test_folder_anchors_with_a_tofu_shaped_dataset_that_is_not_tofu(ou, models, world, test_world, s1_dir,
                                                                     tmp_path):
    """OU's dataset is the test world's forget set (TOFU's layout, not TOFU's questions), the
    anchors are folders and `data_path` is the world's annotated file, with OU's default
    forget_split: the records are checked against the dataset OU loaded, never against the
    project's TOFU copy, and the scores are `uds score`'s on the same folders and file. A record
    whose question is not its row of OU's dataset still stops the run with one line."""
    from checkpoints.specs import model_source
    from checkpoints.world.store import ensure_world_data

    _, call = ou
    name = UNLEARNED.split("/")[-1]
    folder = {n: model_source(f"tiny:test/{n}") for n in ("full", "retain", name)}
    data = ensure_world_data("test", 0) / "uds_data.json"
    questions = [it["question"] for it in world.forget]
    keys = yaml_keys("uds", full_model=folder["full"], retain_model=folder["retain"], data_path=str(data))
    assert keys["forget_split"] == "forget10"   # OU's default split, as its eval config interpolates it
    doc = call("uds", models[name], data=ou_data(questions), **keys)
    assert doc["n_scored"] > 0 and doc["settings"]["data_path"] == str(data)
    out = tmp_path / "score"
    assert main(["score", "--unlearned", folder[name], "--full", folder["full"], "--retain", folder["retain"],
                 "--data", str(data), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert doc["agg_value"] == pytest.approx(summary["uds"], abs=1e-6) and doc["n_scored"] == summary["n_scored"]
    per_example = {str(e["idx"]): e["uds"] for e in map(json.loads, (out / "examples.jsonl").read_text().splitlines())}
    assert {k: v["score"] for k, v in doc["value_by_index"].items()} == pytest.approx(per_example, abs=1e-6)
    for anchor in ("full", "retain"):   # the invariants hold through the folder form too
        value = call("uds", models[anchor], data=ou_data(questions), **keys)["agg_value"]
        assert value == pytest.approx(0.0 if anchor == "full" else 1.0, abs=1e-12)

    records = json.loads(data.read_text())
    first = records[0]["idx"]
    swapped = [{**records[0], "question": questions[first + 1]}] + records[1:]
    bad = tmp_path / "misaligned.json"
    bad.write_text(json.dumps(swapped))
    with pytest.raises(UdsInputError) as e:
        call("uds", models[name], data=ou_data(questions), **(keys | {"data_path": str(bad)}))
    assert f"record idx {first} is not row {first}" in _message(e) and "TOFU_QA_forget" in _message(e)
    assert "\n" not in _message(e)
