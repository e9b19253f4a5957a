"""`uds meta-eval` plumbing: the measurement cache (stale stamps, resume after an interrupt, failed
metrics retried, anchor work shared), the command's outputs on a synthetic zoo, and (slow) the
real run on the `test` preset."""

from __future__ import annotations

import json

import pytest

from uds.commands import meta_eval as cmd
from meta_eval import measure
from meta_eval.campaign.files import digest_of
from meta_eval.measure import Job, Measurer, plan_jobs
from meta_eval.perturb import ORIG, relearn_config
from meta_eval.store import MeasurementStore
from metrics.context import EvalSettings
from metrics.registry import META_KEYS
from metrics.result import MetricResult
from metrics.utility import UTILITY_KEYS
from metrics.work import WorkCache, WorkKey
from tests.meta_eval_fixtures import FakeMeasurer, fake_command, fake_zoo, measurer_settings
from uds.cli import main


def test_store_stamps_and_atomic_entries(tmp_path):
    store = MeasurementStore(tmp_path)
    store.write("nf4", "tiny:x/a b", {"stamp": "s1", "values": {"es": 0.5, "uds": None}, "info": {}, "errors": {}})
    assert store.values("nf4", "tiny:x/a b", "s1") == {"es": 0.5, "uds": None}   # None = computed, undefined
    assert store.values("nf4", "tiny:x/a b", "s2") == {}                         # another model/recipe
    assert not list(tmp_path.rglob("*.tmp"))


def _bare_measurer(tmp_path) -> Measurer:
    """A Measurer without world loading: what `run` touches, set by hand."""
    m = object.__new__(Measurer)
    m.zoo, m.store, m.models_dir = fake_zoo(), MeasurementStore(tmp_path / "store"), tmp_path / "models"
    m.settings, m.recipe, m.log, m.fluency_classifier = EvalSettings(progress=False), relearn_config(8), print, None
    m.splits, m.records, m.tokenizer, m.forget = {}, [], None, []
    m._anchors, m.shared_work = {}, WorkCache()
    m._loaders = {ORIG: lambda member: object()}
    return m


def test_measurer_resumes_retries_and_shares_anchor_work(tmp_path, monkeypatch):
    monkeypatch.setattr(Measurer, "stamp", lambda self, member, setting: "S")
    calls, fail = [], {"interrupt_at": 3, "broken": "em"}

    def fake_evaluate(ctx, keys):
        calls.append(keys[0])
        if len(calls) == fail["interrupt_at"]:
            raise KeyboardInterrupt
        if keys[0] == fail["broken"]:
            raise RuntimeError("boom")
        ctx.work.memo(WorkKey("tf", (ctx.models.spec("model"),), ("forget",)), lambda: "model work")
        ctx.work.memo(WorkKey("tf", (ctx.models.spec("retain"),), ("forget",)), lambda: "anchor work")
        ctx.results[keys[0]] = MetricResult(0.25)
        return {keys[0]: ctx.results[keys[0]]}

    monkeypatch.setattr(measure, "evaluate", fake_evaluate)
    m = _bare_measurer(tmp_path)
    job = Job(m.zoo.member("full"), ORIG, ("es", "em", "prob", "uds"))
    with pytest.raises(KeyboardInterrupt):
        m.run(job)
    assert calls == ["es", "em", "prob"] and m.missing(job) == ["em", "prob", "uds"]
    fail["interrupt_at"] = 0
    entry = m.run(job)                                     # resumes: es is not recomputed
    assert calls[3:] == ["em", "prob", "uds"] and "em" in entry["errors"] and m.missing(job) == ["em"]
    fail["broken"] = None
    m.run(job)                                             # the failed metric is retried, alone
    assert calls[6:] == ["em"] and m.missing(job) == [] and not m.store.entry(ORIG, "full", "S")["errors"]
    assert m.shared_work.keys() == [WorkKey("tf", ("z/retain",), ("forget",))]   # the model's own work was dropped


def test_plan_covers_every_setting():
    jobs = plan_jobs(fake_zoo(), ["es", "uds"])
    count = lambda setting: sum(j.setting == setting for j in jobs)  # noqa: E731
    assert (count("orig"), count("nf4"), count("relearn")) == (12, 4, 5)
    bench = [j for j in jobs if j.member.name == "u0" and j.setting == "orig"][0]
    assert bench.keys == ("es", "uds", "model_utility", "fluency")
    s_only = plan_jobs(fake_zoo(), ["s_mia_zlib"])                # its filter reads mia_zlib un-perturbed
    assert {j.keys for j in s_only if j.member.kind == "pool"} == {("s_mia_zlib", "mia_zlib")}
    assert {j.keys for j in s_only if j.setting == "nf4"} == {("s_mia_zlib",)}


def test_command_outputs_and_rerun_computes_nothing(tmp_path, monkeypatch, capsys):
    fake = FakeMeasurer(tmp_path / "store")
    monkeypatch.setattr("meta_eval.population.tiny_zoo", lambda text: fake_zoo())
    monkeypatch.setattr("meta_eval.population.build_zoo", lambda zoo, progress=True: None)
    monkeypatch.setattr(cmd, "_measurer", lambda args, zoo: fake)
    out = tmp_path / "out"
    real_plots, plotted = cmd.write_plots, []
    monkeypatch.setattr(cmd, "write_plots", lambda *a: plotted.append(a[-1]))   # 22-panel figures take seconds
    assert main(["meta-eval", "--zoo", "tiny:fake", "--out", str(out)]) == 0
    assert plotted == [list(META_KEYS)]
    doc = json.loads((out / "meta_eval.json").read_text())
    for section in ("faithfulness", "robustness", "overall"):
        assert list(doc[section]) == list(META_KEYS)
    for k in META_KEYS:
        assert set(doc["faithfulness"][k]) >= {"auc_roc", "p_mean", "n_mean"}
        assert doc["faithfulness"][k]["auc_roc"] > 0.9
        assert set(doc["robustness"][k]) >= {"quantization", "relearning", "agg"}
    assert doc["settings"]["models"] == {"unlearned": 4, "pool": 6, "full": 1, "retain": 1}
    # what `uds report` draws its P/N histograms and scatters from: the measured values, as stored
    assert doc["members"]["P0"] == {"kind": "pool", "method": None, "pool": "P"}
    assert doc["values"]["nf4"]["u1"]["es"] == fake.store.values("nf4", "u1", "S")["es"]
    assert set(doc["values"]["relearn"]) == {"u0", "u1", "u2", "u3", "retain"}
    summary = (out / "summary.md").read_text()
    assert all(f"| {k} |" in summary for k in META_KEYS)
    rows = json.loads((out / "results.json").read_text())
    assert {r["model"] for r in rows} == {"full", "retain", "u0", "u1", "u2", "u3"}
    assert all(r["overall"] is not None for r in rows)
    n = len(fake.runs)
    assert n == 12 + 4 + 5
    monkeypatch.setattr(cmd, "write_plots", real_plots)
    assert main(["meta-eval", "--zoo", "tiny:fake", "--out", str(out), "--metrics", "uds,es"]) == 0
    assert len(fake.runs) == n                                # everything cached
    assert list(json.loads((out / "meta_eval.json").read_text())["overall"]) == ["uds", "es"]
    assert all((out / f).stat().st_size > 0 for f in ("pn_histograms.png", "quantization_scatter.png",
                                                      "relearning_scatter.png"))


def test_shards_split_the_pairs_and_a_last_run_only_assembles(tmp_path, monkeypatch):
    fake, out = FakeMeasurer(tmp_path / "store"), tmp_path / "out"
    run = fake_command(monkeypatch, fake)
    assert run(out, "--shard", "0/2") == 0
    first = list(fake.runs)
    assert run(out, "--shard", "1/2") == 0
    second = fake.runs[len(first):]
    assert not (out / "meta_eval.json").exists()            # shards measure, they do not assemble
    assert not set(first) & set(second) and len(first) + len(second) == 12 + 4 + 5
    assert len(first) - len(second) in (0, 1)
    assert run(out) == 0
    assert len(fake.runs) == 21 and (out / "meta_eval.json").is_file()


def test_built_only_run_reports_what_it_left_out(tmp_path, monkeypatch):
    from dataclasses import replace

    fake = FakeMeasurer(tmp_path / "store")
    monkeypatch.setattr("meta_eval.population.tiny_zoo", lambda text: fake_zoo())
    monkeypatch.setattr("meta_eval.population.build_zoo", lambda zoo, progress=True: pytest.fail("built"))
    cut = lambda zoo: (replace(zoo, members=tuple(m for m in zoo.members if m.name != "u3")), ["u3"])  # noqa: E731
    monkeypatch.setattr("meta_eval.population.available_members", cut)
    monkeypatch.setattr(cmd, "_measurer", lambda args, zoo: fake)
    monkeypatch.setattr(cmd, "write_plots", lambda *a: None)
    out = tmp_path / "out"
    assert main(["meta-eval", "--zoo", "tiny:fake", "--out", str(out), "--built-only", "--metrics", "es"]) == 0
    doc = json.loads((out / "meta_eval.json").read_text())
    assert doc["settings"]["left_out"] == ["u3"] and doc["settings"]["models"]["unlearned"] == 3
    assert "u3" not in {name for _, name in fake.runs}
    assert "left out 1 model(s) not built yet" in (out / "summary.md").read_text()


@pytest.mark.parametrize("bad", ["2/2", "a/3", "1", "-1/2"])
def test_bad_shard_is_a_usage_error(bad):
    with pytest.raises(SystemExit) as exc:
        main(["meta-eval", "--shard", bad])
    assert exc.value.code == 2


def test_bad_metric_is_one_line_error(capsys):
    assert main(["meta-eval", "--metrics", "uds,model_utility"]) == 2
    assert "unknown metric model_utility" in capsys.readouterr().err


def test_built_only_cuts_a_tiny_zoo_to_its_built_models(test_world, capsys):
    from checkpoints.catalogue import recipes
    from checkpoints.world.build import is_built
    from checkpoints.world.presets import get_preset
    from meta_eval.population import available_members, tiny_zoo

    full_zoo = tiny_zoo("tiny:test")
    zoo, left_out = available_members(full_zoo)
    built = {r.name for r in recipes(get_preset("test")) if is_built(get_preset("test"), 0, r)}
    assert {"full", "retain"} <= {m.name for m in zoo.members}
    assert {m.name for m in zoo.members} == built & {m.name for m in full_zoo.members}
    assert sorted(left_out) == sorted({m.name for m in full_zoo.members} - built)
    # a world never built (seed 7) has no references: one-line error, nothing trained
    assert main(["meta-eval", "--zoo", "tiny:test-7", "--built-only"]) == 2
    assert "full model is not available" in capsys.readouterr().err


@pytest.mark.slow
def test_meta_eval_tiny_test_end_to_end(tmp_path):
    """The real thing on the `test` preset: builds the zoo (once), measures 57 (model, setting)
    pairs on 2 cores in about 4 minutes, writes a complete meta_eval.json."""
    out = tmp_path / "out"
    assert main(["meta-eval", "--zoo", "tiny:test", "--out", str(out)]) == 0
    doc = json.loads((out / "meta_eval.json").read_text())
    assert list(doc["faithfulness"]) == list(META_KEYS)
    assert all(doc["faithfulness"][k]["auc_roc"] is not None for k in META_KEYS)
    assert all(doc["robustness"][k]["quantization"] is not None for k in META_KEYS if doc["robustness"][k]["n_kept"])
    assert doc["faithfulness"]["uds"]["auc_roc"] >= 0.9
    for f in ("summary.md", "results.json", "pn_histograms.png", "quantization_scatter.png", "relearning_scatter.png"):
        assert (out / f).is_file()


def test_parity_enters_the_stamp_and_the_benchmark(tmp_path, monkeypatch):
    """--parity reaches the metric settings (hence the cache stamp: values measured under one mode
    are not read under another; spec stamps are those of before parity modes) and the benchmark
    rows (open-unlearning: model utility = scipy's hmean of the nine values)."""
    from dataclasses import asdict, replace

    from scipy.stats import hmean

    monkeypatch.setattr(measure, "model_identity", lambda spec: f"id:{spec}")
    m = _bare_measurer(tmp_path)
    member = next(x for x in m.zoo.members if x.name == "u0")
    stamps = {}
    for parity in ("spec", "reference", "open-unlearning"):
        m.settings = replace(EvalSettings(progress=False), parity=parity)
        stamps[parity] = m.stamp(member, ORIG)
    assert len(set(stamps.values())) == 3
    legacy = {k: v for k, v in asdict(EvalSettings()).items() if k not in ("progress", "parity", "fast")}
    legacy["ou_attention_mask"] = False
    anchors = [f"id:{s}" for s in ("z/full", "z/retain", "z/base")]
    assert stamps["spec"] == digest_of([measure.MEASURE_VERSION, "id:z/u0", ORIG, {}, legacy, anchors, None])

    fake = FakeMeasurer(tmp_path / "store")
    seen = []
    monkeypatch.setattr("meta_eval.population.tiny_zoo", lambda text: fake_zoo())
    monkeypatch.setattr("meta_eval.population.build_zoo", lambda zoo, progress=True: None)
    monkeypatch.setattr(cmd, "_measurer", lambda args, zoo: seen.append(args.parity) or fake)
    monkeypatch.setattr(cmd, "write_plots", lambda *a: None)
    out = tmp_path / "out"
    assert main(["meta-eval", "--zoo", "tiny:fake", "--out", str(out), "--metrics", "es",
                 "--parity", "open-unlearning"]) == 0
    assert seen == ["open-unlearning"]
    assert json.loads((out / "meta_eval.json").read_text())["settings"]["parity"] == "open-unlearning"
    for row in json.loads((out / "results.json").read_text()):
        assert row["model_utility"] == pytest.approx(float(hmean([row[k] for k in UTILITY_KEYS])), rel=1e-15)


def test_measurer_settings_carry_parity(monkeypatch, tmp_path):
    """`_measurer` builds the metric settings from the command line, parity included."""
    import argparse

    args = argparse.Namespace(batch_size=4, max_new_tokens=8, relearn_lr=None, device="cpu",
                              fluency_classifier=None, parity="reference")
    settings, _ = measurer_settings(monkeypatch, tmp_path, args)
    assert settings.parity == "reference" and settings.reference


def test_probe_keys_are_meta_evaluated_when_named_but_not_under_all():
    from uds.commands.meta_eval import parse_keys
    from uds_core.errors import UdsInputError

    assert parse_keys("mem_bits,verbatim_rate,uds") == ["mem_bits", "verbatim_rate", "uds"]
    assert len(parse_keys("all")) == 22 and "mem_bits" not in parse_keys("all")
    both = parse_keys("all,mem_bits,uds")   # named extras beside all; uds is in all already: listed once
    assert both[:22] == parse_keys("all") and both[22:] == ["mem_bits"]
    with pytest.raises(UdsInputError, match="mem_bits_tfidf"):   # a diagnostic, not a model score
        parse_keys("mem_bits_tfidf")


def test_build_zoo_builds_only_the_members(monkeypatch):
    """Meta-evaluation builds the zoo's members, not the world's other models (the audit's LMLMs,
    which a first version trained before measuring anything)."""
    from meta_eval.population import build_zoo, tiny_zoo

    asked = {}
    monkeypatch.setattr("checkpoints.world.build.build_world",
                        lambda preset, seed, progress=True, names=None: asked.setdefault("names", names))
    zoo = tiny_zoo("tiny:small")
    build_zoo(zoo, progress=False)
    assert set(asked["names"]) == {m.name for m in zoo.members}
    assert "lmlm" not in asked["names"] and len(asked["names"]) == 48 + 24 + 2
