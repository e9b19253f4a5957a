"""The world campaign's driver (uds/world_campaign): its plan and protocol, and its run loop with the
unit processes replaced by a stand-in (no model is loaded): each finished unit sealed, published
and skipped on the next run; a failed unit leaves no file; a second run accepts its own protocol
and refuses another one."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from uds.world_campaign import driver, preflight
from uds.world_campaign.driver import WorldCampaign
from uds.world_campaign.plan import Unit
from uds_core.errors import UdsInputError
from uds_core.sealed import read_sealed

CHILD_ENVS: list = []   # what the fake children of `fake_units` were given, in order

ZOO = "tiny:qwen"


def test_plan_builds_and_checks_full_first_and_measures_every_model():
    c = WorldCampaign(ZOO, Path("unused"))
    ids = [u.id for u in c.units]
    assert ids[:5] == ["build/full", "knowledge/full", "build/retain", "knowledge/retain", "knowledge/base"]
    unlearned = [n for n in c.digests if n not in ("full", "retain")]
    assert len(unlearned) == 4 and {n.split("_")[0] for n in unlearned} == {"graddiff", "npo", "simnpo", "idknll"}
    for name in ["full", "retain"] + unlearned:
        assert f"build/{name}" in ids and f"score/{name}" in ids and f"knowledge/{name}" in ids
    assert ids.index("score/full") > max(ids.index(f"build/{n}") for n in unlearned)
    assert sorted(u.id for u in c.units if u.big) == sorted(
        [u for u in ids if u.startswith(("exactness/", "precision/", "metrics/"))])
    assert sum(u.startswith("metrics/") for u in ids) == 4


@pytest.fixture
def fake_units(monkeypatch):
    """run_child replaced: writes a result for the unit named in the command (or fails for the
    units in `fail`) and reports a peak of 1 GB; `envs` holds what each child was given."""
    calls, fail = [], set()
    CHILD_ENVS.clear()
    monkeypatch.setattr(preflight, "bf16_slowdown", lambda: 1.0)   # a CPU with bfloat16 kernels
    monkeypatch.delenv("UDS_BF16_PRODUCTS", raising=False)

    def run_child(cmd, env=None):
        kind, model = cmd[3], cmd[4]
        calls.append(f"{kind}/{model}")
        CHILD_ENVS.append(env)
        if f"{kind}/{model}" in fail:
            return 1, 0
        result = ({"models": {n: {"rebuilt_seconds": None, "weights": f"w-{n}"} for n in model.split(",")}}
                  if kind == "prepare" else {"answer": f"{kind} of {model}"})
        Path(cmd[cmd.index("--out") + 1]).write_text(json.dumps(result))
        return 0, 10**9
    monkeypatch.setattr(driver, "run_child", run_child)
    return calls, fail


def test_units_are_sealed_published_and_not_run_again(tmp_path, fake_units):
    calls, _ = fake_units
    published = []
    c = WorldCampaign(ZOO, tmp_path, publish=lambda paths, msg: published.append((paths, msg)), log=lambda s: None)
    assert c.run(max_units=2) == 2
    assert calls == ["build/full", "prepare/full", "knowledge/full"]   # full's build has no built parent
    doc, problem = read_sealed(tmp_path / "build" / "full.json")
    assert problem is None and doc["result"] == {"answer": "build of full"} and doc["prepared"] is None
    assert doc["recipes"] == {"full": c.digests["full"]} and doc["peak_rss_bytes"] == 10**9
    known, _ = read_sealed(tmp_path / "knowledge" / "full.json")
    assert known["prepared"]["models"] == {"full": {"rebuilt_seconds": None, "weights": "w-full"}}
    assert {"commit", "dirty"} <= set(doc["code"])
    assert [m for _, m in published] == ["campaign tiny:qwen: protocol", "campaign tiny:qwen: build/full (1/25)",
                                        "campaign tiny:qwen: knowledge/full (2/25)"]
    again = WorldCampaign(ZOO, tmp_path, log=lambda s: None)   # a second run: its own protocol, the next unit
    assert again.run(max_units=1) == 1 and calls[-1] == "build/retain" and calls[-2] == "knowledge/full"
    assert again.status()["units"] == 3


def test_a_unit_prepares_the_built_models_it_reads_parents_first():
    c = WorldCampaign(ZOO, Path("unused"))
    npo = next(n for n in c.digests if n.startswith("npo_"))
    assert c.prerequisites(Unit("build", "full")) == []
    assert c.prerequisites(Unit("build", npo)) == ["full"]
    assert c.prerequisites(Unit("knowledge", "base")) == []   # the pretrained model is never built
    assert c.prerequisites(Unit("knowledge", npo)) == [npo]
    assert c.prerequisites(Unit("score", npo)) == ["full", "retain", npo]
    assert c.prerequisites(Unit("metrics", "retain")) == ["full", "retain"]


def test_a_failed_preparation_runs_no_unit(tmp_path, fake_units):
    calls, fail = fake_units
    c = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    c.run(max_units=1)
    fail.add("prepare/full")
    with pytest.raises(UdsInputError, match="preparing knowledge/full failed"):
        c.run()
    assert calls[-1] == "prepare/full" and not (tmp_path / "knowledge").exists()


def test_a_failed_unit_writes_nothing_and_stops(tmp_path, fake_units):
    calls, fail = fake_units
    fail.add("build/full")
    c = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    with pytest.raises(UdsInputError, match="unit build/full failed"):
        c.run()
    assert not (tmp_path / "build").exists() and calls == ["build/full"]


def test_a_unit_file_of_another_recipe_or_damaged_is_not_done(tmp_path, fake_units):
    c = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    c.run(max_units=1)
    path = tmp_path / "build" / "full.json"
    text = path.read_text()
    path.write_text(text.replace('"answer": "build of full"', '"answer": "edited"'))
    assert not c.done(c.units[0])
    doc = json.loads(text)
    doc["recipes"] = {"full": "another"}
    from uds_core.sealed import seal

    path.write_text(json.dumps(seal({k: v for k, v in doc.items() if k != "digest"})))
    assert not c.done(c.units[0])


def test_another_protocol_is_refused(tmp_path, fake_units):
    c = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    c.check_protocol(write=True)
    other = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    other.protocol = {**other.protocol, "train_dtype": "float32"}
    with pytest.raises(UdsInputError, match="another protocol .*train_dtype"):
        other.check_protocol(write=False)


def test_protocol_is_fixed_again_only_while_nothing_is_measured(tmp_path, fake_units):
    """`uds campaign protocol --plan world` replaces a protocol no unit was measured under; once a
    unit file exists the other protocol is refused, and the fixed one is left as it was."""
    c = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    c.check_protocol(write=True)
    said = []
    other = WorldCampaign(ZOO, tmp_path, log=said.append)
    other.protocol = {**other.protocol, "train_dtype": "float32"}
    with pytest.raises(UdsInputError, match="fixes it again for this code"):
        other.check_protocol(write=False)
    other.check_protocol(write=True, refix=True)
    assert "fixed again" in said[0] and "train_dtype" in said[0]
    assert json.loads((tmp_path / "protocol.json").read_text())["train_dtype"] == "float32"
    other.run(max_units=1)                                     # a unit measured under the new protocol
    fixed = (tmp_path / "protocol.json").read_text()
    with pytest.raises(UdsInputError, match="start a new campaign folder"):
        c.check_protocol(write=True, refix=True)               # the first protocol, now refused
    assert (tmp_path / "protocol.json").read_text() == fixed


def test_cli_status_and_bad_zoo(tmp_path, uds, monkeypatch):
    monkeypatch.delenv("UDS_BF16_PRODUCTS", raising=False)
    monkeypatch.setattr(preflight, "bf16_slowdown", lambda: 1.0)
    proc = uds("campaign", "status", "--plan", "world", "--zoo", ZOO, "--dir", str(tmp_path / "c"))
    assert proc.returncode == 0 and "0/25 units done" in proc.stdout and "next build/full" in proc.stdout
    assert "bfloat16" not in proc.stdout
    monkeypatch.setattr(preflight, "bf16_slowdown", lambda: 63.2)
    proc = uds("campaign", "status", "--plan", "world", "--zoo", ZOO, "--dir", str(tmp_path / "c"))
    assert "bfloat16 products would run through float32 kernels (63x slower than float32 here)" in proc.stdout
    proc = uds("campaign", "status", "--plan", "world", "--zoo", ZOO, "--dir", str(tmp_path / "c"), "--json")
    st = json.loads(proc.stdout)
    assert st["bf16_slowdown"] == 63.2 and st["bf16_products"] == "float32"
    proc = uds("campaign", "status", "--plan", "world", "--zoo", "full", "--dir", str(tmp_path / "c"))
    assert proc.returncode == 2 and "tiny-world zoo" in proc.stderr


def test_run_child_reports_the_peak_of_its_process_tree():
    """The peak a unit reports includes what its own children used (units run `uds score` as one)."""
    code = ("import subprocess, sys; subprocess.run([sys.executable, '-c', "
            "'b = bytearray(300 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096])'])")
    rc, peak = driver.run_child([sys.executable, "-c", code])
    assert rc == 0 and peak > 300 * 1024 * 1024


@pytest.mark.parametrize("ratio, products", [(100.0, "float32"), (1.0, "native")])
def test_every_unit_computes_bfloat16_products_the_way_decided_before_the_first(tmp_path, fake_units, monkeypatch,
                                                                                ratio, products):
    """The qwen world trains and scores in bfloat16: on a CPU measured 100x slower in it than in
    float32 every child (a unit and its preparation) is told to compute bfloat16 products through
    float32 kernels, and each unit file says so; with bfloat16 kernels, torch's own."""
    calls, _ = fake_units
    measured = []
    monkeypatch.setattr(preflight, "bf16_slowdown", lambda: measured.append(1) or ratio)
    said: list[str] = []
    c = WorldCampaign(ZOO, tmp_path, log=said.append)
    assert c.run(max_units=2) == 2 and calls == ["build/full", "prepare/full", "knowledge/full"]
    assert CHILD_ENVS == [{"UDS_BF16_PRODUCTS": products}] * 3 and measured == [1]
    assert c.result(Unit("knowledge", "full"))["machine"]["bf16_products"] == products
    assert any(f"matrix product time on this CPU {ratio:.2f}" in line for line in said)


def test_the_environment_overrides_the_measurement(tmp_path, fake_units, monkeypatch):
    calls, _ = fake_units
    monkeypatch.setattr(preflight, "bf16_slowdown", lambda: pytest.fail("measured"))
    monkeypatch.setenv("UDS_BF16_PRODUCTS", "native")
    c = WorldCampaign(ZOO, tmp_path, log=lambda s: None)
    assert c.run(max_units=1) == 1 and CHILD_ENVS == [{"UDS_BF16_PRODUCTS": "native"}]
    monkeypatch.setenv("UDS_BF16_PRODUCTS", "fp8")
    with pytest.raises(UdsInputError, match="UDS_BF16_PRODUCTS=fp8: choose auto, float32 or native"):
        c.run(max_units=1)


def test_the_choice_measures_only_bfloat16_work(monkeypatch):
    monkeypatch.delenv("UDS_BF16_PRODUCTS", raising=False)
    measured = []

    def measure():
        measured.append(1)
        return 50.0
    assert preflight.choose({"float32"}, measure=measure) == (None, None) and not measured
    assert preflight.choose({"float32", "bfloat16"}, measure=measure) == (50.0, "float32")
    assert preflight.choose({"bfloat16"}, measure=lambda: 3.9) == (3.9, "native")   # at most SLOWDOWN_LIMIT
    assert preflight.choose({"bfloat16"}, measure=lambda: 4.1) == (4.1, "float32")
