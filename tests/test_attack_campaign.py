"""`uds campaign --plan attack` on the `test` world, and the campaign files' code records.

In one process under a fresh UDS_HOME (the world's data, tokenizer and anchors only), the attack
campaign runs its first units with the real attack runner and a stand-in for the metrics (the
metrics' measurer is the meta-evaluation campaign's, tested there): the order (anchors, then an
unlearned model, a suppressed member before its P parent, an N control), every file's code record
(the commit the run started from, the measuring code's digest, which the settings digest covers),
the plain attack's share equal to the build file's knowledge check (two code paths, one number),
the P parent kept while its suppressed child is unfinished and used again, not rebuilt, by the
next run, and the status counts. A folder fixed under version 1 (the committed smol campaign) is
read, never continued; a protocol fixed under other measuring code is refused, and re-fixed only
while nothing is measured under it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from meta_eval.campaign.files import CampaignFiles, settings_digest
from tests.campaign_fixtures import fresh_home
from uds_core.sealed import read_sealed, seal

REPO = Path(__file__).resolve().parents[1]
ZOO = "tiny:test"


def args_of(camp: Path, verb: str = "run", **kw) -> argparse.Namespace:
    return argparse.Namespace(**{"verb": verb, "zoo": ZOO, "dir": str(camp), "batch_size": 32, "max_new_tokens": 128,
                                 "relearn_lr": None, "plan": "attack", "commit": False, "keep": "", "max_units": None,
                                 "threads": 1} | kw)


class StandInMetrics:
    """The metrics' measurer stood in for: a value per key from the model's name (instant)."""
    def run(self, job) -> dict:
        values = {k: (sum(map(ord, job.member.name + k)) % 997) / 997 for k in job.keys}
        return {"values": values, "errors": {}, "info": {"seconds": {k: 0.0 for k in job.keys}}}


def campaign_of(camp: Path, said: list[str]):
    from meta_eval.campaign.attack import AttackRunner, CampaignMeasurer
    from uds.commands.campaign import attack_settings, make_campaign

    c = make_campaign(args_of(camp))
    c._measurer_factory = lambda: CampaignMeasurer(StandInMetrics,
                                                   lambda: AttackRunner(c.zoo, attack_settings(c.zoo), said.append))
    c.log = said.append
    return c


def units(c) -> list[str]:
    return [f"{j.setting}/{j.member.name}" for m in c.order for j in c.jobs_of(m)]


@pytest.fixture(scope="module")
def run(test_world, tmp_path_factory):
    """The campaign stopped just before the first P parent's attack unit, then resumed for two units."""
    root = tmp_path_factory.mktemp("attack_campaign")
    home = fresh_home(test_world, root)
    mp = pytest.MonkeyPatch()
    mp.setenv("UDS_HOME", str(home))
    camp = root / "camp"
    said: list[str] = []
    c = campaign_of(camp, said)
    order = units(c)
    parent = next(m for m in c.order if m.kind == "pool" and m.pool == "P")
    stop = order.index(f"attack/{parent.name}")
    assert c.run(max_units=stop) == stop
    kept = c.spec.folder(parent).is_dir()
    kept_fingerprint = c.spec.fingerprint(c.spec.folder(parent)) if kept else None
    from checkpoints import catalogue

    def refuse(ctx, r):
        raise AssertionError(f"{r.name} was trained again")
    t = catalogue.TRAINERS["P"]   # the next run must use the kept parent, not train it again
    mp.setitem(catalogue.TRAINERS, "P", catalogue.Trainer(refuse, t.legacy_version, t.code_module))
    said2: list[str] = []
    c2 = campaign_of(camp, said2)
    assert c2.run(max_units=2) == 2
    yield {"camp": camp, "home": home, "c": c2, "order": order, "stop": stop, "parent": parent, "kept": kept,
           "kept_fingerprint": kept_fingerprint, "said": said + said2}
    mp.undo()


@pytest.mark.slow   # the `run` fixture: a campaign of the test world stopped and resumed (a minute)
def test_the_order_puts_each_suppressed_member_before_its_parent(run):
    c, order = run["c"], run["order"]
    assert order[:4] == ["orig/full", "attack/full", "orig/retain", "attack/retain"]
    sup = next(m for m in c.order if m.kind == "suppressed")
    parent = c.spec.parent(sup)
    assert parent == run["parent"].name
    assert order.index(f"attack/{sup.name}") < order.index(f"attack/{parent}")
    kinds = [m.kind + (m.pool or "") for m in c.order[:6]]
    assert set(kinds) == {"full", "retain", "unlearned", "suppressedS", "poolP", "poolN"}


@pytest.mark.slow   # the `run` fixture: a campaign of the test world stopped and resumed (a minute)
def test_the_parent_is_kept_for_its_child_and_used_again_not_rebuilt(run):
    files = CampaignFiles(run["camp"])
    parent = run["parent"].name
    assert run["kept"]
    doc = read_sealed(files.measurement("attack", parent))[0]
    assert doc["model_fingerprint"] == run["kept_fingerprint"] == read_sealed(files.build(parent))[0]["fingerprint"]
    assert not any("rebuilt" in line for line in run["said"])
    assert not run["c"].spec.folder(run["parent"]).exists()                    # dropped once measured


@pytest.mark.slow   # the `run` fixture: a campaign of the test world stopped and resumed (a minute)
def test_every_file_records_its_code_and_the_settings_digest_covers_it(run):
    from meta_eval.measure import measure_code

    files = CampaignFiles(run["camp"])
    protocol = read_sealed(files.protocol)[0]
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    code = measure_code(("meta_eval.campaign.attack", "meta_eval.attacks.*"))
    assert protocol["version"] == 2 and protocol["plan"] == "attack" and protocol["measure_code"] == code
    assert protocol["fixed_at"]["commit"] == head
    docs = files.measurements()
    assert len(docs) == run["stop"] + 2
    for d in docs:
        assert d["code"]["commit"] == head and d["code"]["measure_code"] == code
        assert d["settings_digest"] == settings_digest(2, code, d["setting"], protocol["settings"][d["setting"]],
                                                       protocol["metric_settings"])
    for b in files.builds().values():
        assert b["code"]["commit"] == head and b["legacy_recipe_digest"] and b["recipe_covers"]["scheme"] == 2


@pytest.mark.slow   # the `run` fixture: a campaign of the test world stopped and resumed (a minute)
def test_attack_units_hold_every_attack_and_plain_is_the_build_files_knowledge_check(run):
    from meta_eval.attacks import ATTACKS

    files = CampaignFiles(run["camp"])
    for name in ("full", "retain", run["parent"].name):
        doc = read_sealed(files.measurement("attack", name))[0]
        assert set(doc["values"]) == set(ATTACKS)
        for attack, share in doc["values"].items():
            hits = doc["detail"][attack]["hits"]
            assert share == sum(hits) / len(hits)
        knowledge = read_sealed(files.build(name))[0]["knowledge"]
        assert doc["values"]["plain"] == knowledge["forget_questions"]
        assert len(doc["detail"]["plain"]["hits"]) == knowledge["n_forget_questions"]
    full = read_sealed(files.measurement("attack", "full"))[0]["values"]
    retain = read_sealed(files.measurement("attack", "retain"))[0]["values"]
    assert full["plain"] > retain["plain"]


@pytest.mark.slow   # the `run` fixture: a campaign of the test world stopped and resumed (a minute)
def test_status_counts_the_files(run):
    st = run["c"].status()
    assert st["units"] == run["stop"] + 2 and st["units_total"] == len(run["order"])
    assert sum(g["measured"] for g in st["groups"].values()) == st["units"]
    assert sum(g["total"] for g in st["groups"].values()) == st["units_total"]
    assert st["eta_seconds"] > 0 and "attack" in " ".join(st["groups"])


def test_the_plan_is_derived_from_the_catalogue():
    """Units counted here from the recipes: every member attacked; unlearned, full, retain, the
    suppressed pool and the N controls measured as built."""
    from checkpoints.catalogue import recipes
    from checkpoints.world.presets import get_preset
    from meta_eval.campaign.attack import attack_plan, attack_zoo
    from metrics.registry import META_KEYS

    preset = get_preset("test")
    rs = recipes(preset)
    sp = preset.suppressed
    sup = [r for r in rs if r.kind == "suppressed"]
    n_unlearned = sum(r.kind == "unlearned" for r in rs)
    controls = [r for r in rs if r.kind == "pool" and r.hparams["variant"] == sp.control]
    assert len(sup) == len(controls) == sum(r.kind == "pool" and r.hparams["variant"] == sp.variant for r in rs)
    jobs = attack_plan(attack_zoo(ZOO), META_KEYS, ["plain", "relearn"])
    members = 2 + n_unlearned + 2 * len(sup) + len(controls)
    assert sum(j.setting == "attack" for j in jobs) == members
    assert sum(j.setting == "orig" for j in jobs) == 2 + n_unlearned + len(sup) + len(controls)


def test_a_version_1_folder_is_read_but_never_continued(uds, tmp_path):
    st = uds("campaign", "status", "--zoo", "tiny:smol", "--dir", str(REPO / "results/smol/campaign"), "--json")
    assert st.returncode == 0 and json.loads(st.stdout)["units"] == 135
    camp = tmp_path / "legacy"
    shutil.copytree(REPO / "results/smol/campaign", camp)
    before = {p: p.read_bytes() for p in camp.rglob("*") if p.is_file()}
    r = uds("campaign", "run", "--zoo", "tiny:smol", "--dir", str(camp), "--max-units", "1")
    assert r.returncode == 2 and "campaign version 1" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in camp.rglob("*") if p.is_file()} == before


def _reseal(path: Path, **change) -> None:
    doc = {k: v for k, v in json.loads(path.read_text()).items() if k != "digest"} | change
    path.write_text(json.dumps(seal(doc), indent=1, sort_keys=True))


def test_a_protocol_of_other_measuring_code_is_refused_and_refixed_only_while_nothing_is_measured(uds, tmp_path,
                                                                                                 test_world):
    camp = tmp_path / "camp"
    r = uds("campaign", "protocol", "--plan", "attack", "--zoo", ZOO, "--dir", str(camp))
    assert r.returncode == 0 and (camp / "protocol.json").is_file()
    fixed = json.loads((camp / "protocol.json").read_text())
    _reseal(camp / "protocol.json", measure_code="0" * 20)
    r = uds("campaign", "status", "--plan", "attack", "--zoo", ZOO, "--dir", str(camp))   # status reads on
    assert r.returncode == 0 and "this code differs from it in the measuring code" in r.stdout
    assert "`uds campaign protocol` with the same options fixes it again" in r.stdout
    r = uds("campaign", "run", "--plan", "attack", "--zoo", ZOO, "--dir", str(camp), "--max-units", "1")
    assert r.returncode == 2 and "the measuring code" in r.stderr and "`uds campaign protocol`" in r.stderr
    r = uds("campaign", "protocol", "--plan", "attack", "--zoo", ZOO, "--dir", str(camp))
    assert r.returncode == 0 and "fixed again" in r.stderr and "measure_code" in r.stderr
    assert json.loads((camp / "protocol.json").read_text())["measure_code"] == fixed["measure_code"]
    _reseal(camp / "protocol.json", measure_code="0" * 20)
    (camp / "builds").mkdir()
    (camp / "builds" / "full.json").write_text(json.dumps(seal({"model": "full"})))
    r = uds("campaign", "protocol", "--plan", "attack", "--zoo", ZOO, "--dir", str(camp))
    assert r.returncode == 2 and "its files are not mixed with new ones" in r.stderr
    assert json.loads((camp / "protocol.json").read_text())["measure_code"] == "0" * 20


def test_the_altpo_answers_of_the_campaign_beside_are_adopted_once(tmp_path):
    from uds.commands.campaign import adopt_alternates

    answers = {"answers": {"0": ["An alternate answer."]}, "seed": 0}
    (tmp_path / "campaign").mkdir()
    (tmp_path / "campaign" / "alternates.json").write_text(json.dumps(seal({"alternates": answers, "made_by": "x"})))
    files = CampaignFiles(tmp_path / "attack_campaign")
    adopt_alternates(files)
    doc = read_sealed(files.alternates)[0]
    assert doc["alternates"] == answers and doc["copied_from"] == "../campaign/alternates.json"
    (tmp_path / "campaign" / "alternates.json").write_text(json.dumps(seal({"alternates": {"other": 1}})))
    adopt_alternates(files)
    assert read_sealed(files.alternates)[0]["alternates"] == answers
