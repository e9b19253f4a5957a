"""Fault injection, same-size damage: a byte flipped in the middle of a cached file (size
unchanged), which a size check cannot see. Each damaged file (tiny-world model, world data, S1
entry, meta-eval measurement, campaign measurement file, GGUF conversion, a model's own digest
manifest) is said in one line on stderr, never used, and rebuilt or recomputed to the number of
the undamaged run. A user's folder (no manifest) loads as before. Tabled in docs/reliability.md."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load, load_file

from uds_core import manifest
from tests.checks import flip_digit_near_middle, flip_middle_byte
from tests.engine_fixtures import folders, score_args  # noqa: F401 (folders: the saved score models fixture)

NPO = "npo_lr2e-4_b01_a1_ep5"   # retrained from full in seconds on the test preset


def _lines(err: str, *words: str) -> list[str]:
    return [line for line in err.splitlines() if all(w in line for w in words)]


@pytest.fixture
def home(test_world, tmp_path, monkeypatch) -> Path:
    """A copy of the built `test` world (base, full, retain) as this test's `$UDS_HOME`."""
    home = tmp_path / "home"
    shutil.copytree(test_world, home / "world" / test_world.name, symlinks=True)
    monkeypatch.setenv("UDS_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return home


def _score(tmp_path: Path, name: str, *extra: str) -> dict:
    from uds.cli import main

    out = tmp_path / name
    assert main(["score", "--unlearned", f"tiny:test/{NPO}", "--device", "cpu", "--out", str(out), *extra]) == 0
    return json.loads((out / "summary.json").read_text())


# -- a world model ---------------------------------------------------------------------------------

def test_same_size_damage_to_a_world_model_is_said_rebuilt_and_scores_the_same(home, tmp_path, capsys):
    """The issue's case: the unlearned model's weights changed in the middle, size kept, and
    `uds score --no-s1-cache` run again."""
    first = _score(tmp_path, "a", "--no-s1-cache")
    weights = home / "world" / "test-0" / "models" / NPO / "model.safetensors"
    intact = weights.read_bytes()
    flip_middle_byte(weights)
    damaged = load_file(weights)
    assert any(not torch.equal(damaged[k], v) for k, v in load(intact).items())   # the weights changed
    capsys.readouterr()
    second = _score(tmp_path, "b", "--no-s1-cache")
    said = _lines(capsys.readouterr().err, "rebuilding")
    assert len(said) == 1 and NPO in said[0] and str(weights) in said[0] and "content differs" in said[0], said
    assert second["uds"] == first["uds"]
    assert weights.read_bytes() == intact            # rebuilt, to the same bytes
    _score(tmp_path, "c", "--no-s1-cache")           # whole again: used without a word
    assert not _lines(capsys.readouterr().err, NPO)


def test_a_damaged_digest_manifest_is_a_damaged_folder(home, capsys):
    """The manifest itself unreadable (a digit changed, then cut short): one line naming it,
    the model rebuilt; never a crash, never a pass."""
    from checkpoints.world.build import ensure_model

    folder = ensure_model("test", 0, NPO, progress=False)
    intact = (folder / "model.safetensors").read_bytes()
    for damage in (flip_digit_near_middle, lambda p: p.write_text(p.read_text()[:40])):
        damage(folder / manifest.MANIFEST)
        capsys.readouterr()
        assert ensure_model("test", 0, NPO, progress=False) == folder
        said = _lines(capsys.readouterr().err, "rebuilding")
        assert len(said) == 1 and str(folder / manifest.MANIFEST) in said[0] and "unreadable" in said[0], said
        assert manifest.verify(folder) is None and (folder / "model.safetensors").read_bytes() == intact


def test_a_model_built_before_digests_is_recorded_once_then_checked(home, capsys):
    """A folder without a manifest (built by an older version): its digests are recorded from
    its files on first use (one line), its meta-eval stamp is kept, and same-size damage after
    that is caught."""
    from checkpoints.world.build import ensure_model
    from meta_eval.population import folder_stamp

    folder = home / "world" / "test-0" / "models" / "retain"
    (folder / manifest.MANIFEST).unlink()
    stamp = folder_stamp(folder)
    capsys.readouterr()
    assert ensure_model("test", 0, "retain", progress=False) == folder
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and "before content digests" in said[0] and str(folder) in said[0], said
    assert manifest.verify(folder) is None and folder_stamp(folder) == stamp
    ensure_model("test", 0, "retain", progress=False)
    assert capsys.readouterr().err == ""
    flip_middle_byte(folder / "model.safetensors")
    assert not _is_current_quietly(folder)


def _is_current_quietly(folder: Path) -> bool:
    from checkpoints.world import build
    from checkpoints.world.store import stored_digest

    return build._is_current(folder, stored_digest(folder), quiet=True)


def test_damaged_world_data_is_said_and_made_again(home, capsys):
    from checkpoints.world.store import ensure_world_data

    data = home / "world" / "test-0" / "data" / "uds_data.json"
    intact = data.read_bytes()
    flip_digit_near_middle(data)
    capsys.readouterr()
    ensure_world_data("test", 0)
    said = _lines(capsys.readouterr().err, "making it again")
    assert len(said) == 1 and str(data) in said[0], said
    assert data.read_bytes() == intact


def test_a_built_folder_given_by_its_path_is_checked_too(home, tmp_path, capsys):
    """A model folder that carries a manifest (built here, copied elsewhere) and is named by
    its path: damage is one line, exit 2, nothing scored."""
    from uds.cli import main

    copy = tmp_path / "copied_retain"
    shutil.copytree(home / "world" / "test-0" / "models" / "retain", copy)
    flip_middle_byte(copy / "model.safetensors")
    capsys.readouterr()
    code = main(["score", "--unlearned", str(copy), "--full", "tiny:test/full", "--retain", "tiny:test/retain",
                 "--data", str(home / "world" / "test-0" / "data" / "uds_data.json"), "--out", str(tmp_path / "o")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "model.safetensors" in err[0] and "damaged" in err[0], err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_a_users_folder_without_manifest_loads_as_before(folders, tmp_path, monkeypatch, capsys):
    """Folders saved by the user (no manifest): scored without a word about digests, and nothing
    is written into them."""
    from uds.cli import main

    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for name in ("full", "retain", "half")
              for p in Path(folders[name]).iterdir()}
    capsys.readouterr()
    assert main(score_args(folders, tmp_path / "a", "--no-s1-cache")) == 0
    err = capsys.readouterr().err
    assert not any(w in err for w in ("digest", "damaged", "rebuilding", "unreadable")), err
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for name in ("full", "retain", "half")
             for p in Path(folders[name]).iterdir()}
    assert after == before


# -- an S1 cache entry ----------------------------------------------------------------------------

def test_same_size_damage_to_an_s1_entry_is_said_and_recomputed(folders, tmp_path, monkeypatch, capsys):
    """A digit changed in the middle of the entry: still valid JSON, same size, numbers wrong."""
    from uds.cli import main

    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    assert main(score_args(folders, tmp_path / "a")) == 0
    first = json.loads((tmp_path / "a" / "summary.json").read_text())
    (entry,) = (tmp_path / "home").rglob("s1_*.json")
    good = entry.read_bytes()
    flip_digit_near_middle(entry)
    json.loads(entry.read_text())   # the damage keeps it parseable: only the digest can tell
    capsys.readouterr()
    assert main(score_args(folders, tmp_path / "b")) == 0
    said = _lines(capsys.readouterr().err, "S1 cache")
    second = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert len(said) == 1 and str(entry) in said[0] and "content digest does not match" in said[0], said
    assert second["s1_cache"] == "miss" and second["uds"] == first["uds"]
    assert entry.read_bytes() == good                # recomputed and rewritten whole


def test_an_s1_entry_written_before_digests_is_sealed_once(folders, tmp_path, monkeypatch, capsys):
    from uds.cli import main

    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    assert main(score_args(folders, tmp_path / "a")) == 0
    first = json.loads((tmp_path / "a" / "summary.json").read_text())
    (entry,) = (tmp_path / "home").rglob("s1_*.json")
    doc = json.loads(entry.read_text())
    entry.write_text(json.dumps({k: v for k, v in doc.items() if k != "digest"}))   # as the older version wrote it
    capsys.readouterr()
    assert main(score_args(folders, tmp_path / "b")) == 0
    said = _lines(capsys.readouterr().err, "S1 cache")
    second = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert len(said) == 1 and "before content digests" in said[0] and second["s1_cache"] == "hit"
    assert second["uds"] == first["uds"] and json.loads(entry.read_text()) == doc
    assert main(score_args(folders, tmp_path / "c")) == 0 and not _lines(capsys.readouterr().err, "S1 cache")


# -- meta-eval measurements ------------------------------------------------------------------------

def test_same_size_damage_to_a_stored_measurement_is_said_and_measured_again(home, tmp_path, capsys):
    from checkpoints.world.build import ensure_model
    from meta_eval.measure import Job, Measurer
    from meta_eval.perturb import ORIG, relearn_config
    from meta_eval.population import tiny_zoo
    from meta_eval.store import MeasurementStore
    from metrics.context import EvalSettings

    ensure_model("test", 0, NPO, progress=False)   # in this test's home: the shared test world holds the anchors only
    zoo = tiny_zoo("tiny:test")
    (member,) = [m for m in zoo.members if m.name == NPO]
    measurer = Measurer(zoo, MeasurementStore(tmp_path / "store"), tmp_path / "relearned",
                        EvalSettings(device="cpu", progress=False, batch_size=8), relearn_config(8))
    job = Job(member, ORIG, ("prob", "es"))
    first = measurer.run(job)["values"]
    path = measurer.store.path(ORIG, member.name)
    assert measurer.run(job)["values"] == first and first["prob"] is not None
    flip_digit_near_middle(path)
    capsys.readouterr()
    assert measurer.missing(job) == ["prob", "es"]         # the damaged entry is not used
    said = _lines(capsys.readouterr().err, "stored measurement")
    assert len(said) == 1 and str(path) in said[0] and "content digest does not match" in said[0], said
    assert measurer.run(job)["values"] == first            # measured again: the same numbers
    assert measurer.missing(job) == []


def test_a_measurement_written_before_digests_is_sealed_once(tmp_path, capsys):
    from meta_eval.store import MeasurementStore

    store = MeasurementStore(tmp_path)
    doc = {"stamp": "s", "values": {"es": 0.25}, "info": {}, "errors": {}}
    store.path("orig", "m").parent.mkdir(parents=True)
    store.path("orig", "m").write_text(json.dumps(doc))
    store.path("orig", "n").write_text(json.dumps(doc))
    assert store.values("orig", "m", "s") == store.values("orig", "n", "s") == {"es": 0.25}
    said = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(said) == 1 and "before content digests" in said[0]       # once per store
    assert json.loads(store.path("orig", "m").read_text())["digest"]
    flip_digit_near_middle(store.path("orig", "m"))
    assert store.values("orig", "m", "s") == {}


def test_same_size_damage_to_a_campaign_measurement_file_is_said_and_redone(tmp_path):
    """A committed measurement file with one digit changed: not counted as done (so the campaign
    measures it again), said once."""
    from meta_eval.campaign.files import CampaignFiles

    campaign = Path(__file__).resolve().parents[1] / "results" / "smol" / "campaign"
    committed = sorted((campaign / "measurements").rglob("*.json"))
    assert committed
    src = committed[0]
    doc = json.loads(src.read_text())
    dst = tmp_path / "measurements" / doc["setting"] / src.name
    dst.parent.mkdir(parents=True)
    shutil.copyfile(src, dst)
    said = []
    files = CampaignFiles(tmp_path, log=said.append)
    args = (doc["setting"], doc["model"], doc["recipe_digest"], doc["settings_digest"], list(doc["values"]))
    assert files.valid_measurement(*args) == doc and not said
    flip_digit_near_middle(dst)
    assert files.valid_measurement(*args) is None and files.valid_measurement(*args) is None
    assert len(said) == 1 and str(dst) in said[0] and "content digest does not match" in said[0]


# -- a GGUF conversion ------------------------------------------------------------------------------

@pytest.mark.slow   # converts the 135M GGUF a second time; the model folders' damage tests above run by default
def test_same_size_damage_to_a_gguf_conversion_is_said_and_converted_again(smol_converted, tmp_path, monkeypatch,
                                                                          capsys):
    from checkpoints.specs import resolve_spec
    from tests.gguf_fixtures import ALIAS

    home = tmp_path / "home"
    folder = home / "gguf" / smol_converted["folder"].name
    shutil.copytree(smol_converted["folder"], folder)
    monkeypatch.setenv("UDS_HOME", str(home))
    weights = folder / "model.safetensors"
    intact = hashlib.sha256(weights.read_bytes()).hexdigest()
    flip_middle_byte(weights)
    capsys.readouterr()
    assert resolve_spec(ALIAS).location == str(folder)
    said = _lines(capsys.readouterr().err, "converting again")
    assert len(said) == 1 and str(weights) in said[0] and "content differs" in said[0], said
    assert manifest.verify(folder) is None
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == intact   # converted again to the same bytes
