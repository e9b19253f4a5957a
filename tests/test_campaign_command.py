"""`uds campaign` on bad input and as a read-only status: a zoo it cannot build, a --dir that is a
file, and `status` on a folder with no campaign yet (said, and nothing written); `--commit`'s git
publishing in a scratch repository (the campaign folder alone; a stale index.lock said at once; a
file git ignores stops the run)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from uds.commands.campaign import git_publish
from uds_core.errors import UdsInputError

REPO = Path(__file__).resolve().parents[1]


def test_a_zoo_of_published_checkpoints_is_refused_with_what_to_use(uds, tmp_path):
    r = uds("campaign", "status", "--zoo", "ou:tofu", "--dir", str(tmp_path / "c"))
    assert r.returncode == 2 and r.stdout == ""
    assert "tiny-world zoo" in r.stderr and "uds meta-eval --zoo ou:tofu" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "c").exists()


def test_a_dir_that_is_a_file_is_refused(uds, tmp_path):
    file = tmp_path / "protocol.json"
    file.write_text("{}")
    r = uds("campaign", "run", "--zoo", "tiny:test", "--dir", str(file))
    assert r.returncode == 2 and "is a file, not a campaign folder" in r.stderr
    assert "Traceback" not in r.stderr and file.read_text() == "{}"


def test_status_of_a_new_folder_writes_nothing(uds, tmp_path, test_world):
    camp = tmp_path / "new"
    r = uds("campaign", "status", "--zoo", "tiny:test", "--dir", str(camp))
    assert r.returncode == 0
    assert "measured 0/" in r.stdout and "no campaign in" in r.stdout and "uds campaign run --zoo tiny:test" in r.stdout
    assert not camp.exists()


def test_status_json_counts_the_protocol_units(uds, tmp_path, test_world):
    """A new campaign's JSON status: nothing measured, and the totals the protocol implies, counted
    here from the catalogue (pool members once, unlearned models in three settings, full and retain
    as built, retain relearned)."""
    from checkpoints.catalogue import recipes
    from checkpoints.world.presets import get_preset

    rs = recipes(get_preset("test"))
    pool = {s: sum(r.kind == "pool" and r.hparams["pool"] == s for r in rs) for s in ("P", "N")}
    unlearned = sum(r.kind == "unlearned" for r in rs)
    r = uds("campaign", "status", "--zoo", "tiny:test", "--dir", str(tmp_path / "new"), "--json")
    assert r.returncode == 0
    st = json.loads(r.stdout)
    assert st["units"] == 0 and st["started"] is False
    assert st["units_total"] == pool["P"] + pool["N"] + 3 * unlearned + 3
    assert st["models_total"] == pool["P"] + pool["N"] + unlearned + 2
    assert {k: v["total"] for k, v in st["pool"].items()} == pool
    assert {v["total"] for v in st["unlearned"].values()} == {unlearned}
    assert st["anchors"] == {"orig/full": False, "orig/retain": False, "relearn/retain": False}
    assert st["next"] == {"member": "full", "built": True, "settings": ["orig"]}
    text = uds("campaign", "status", "--zoo", "tiny:test", "--dir", str(tmp_path / "new")).stdout
    assert f"measured 0/{st['units_total']} (model, setting) units, 0/{st['models_total']} models" in text


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path, monkeypatch) -> Path:
    """A git repository with one commit, a staged change outside the campaign folder and a new
    campaign file; the working directory is the repository (as for `uds campaign run --commit`)."""
    for var in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{var}_NAME", "test")
        monkeypatch.setenv(f"GIT_{var}_EMAIL", "test@example.org")
    monkeypatch.chdir(tmp_path)
    _git("init", "-q")
    Path("other.txt").write_text("a\n")
    _git("add", "other.txt")
    _git("commit", "-q", "-m", "first")
    Path("other.txt").write_text("b\n")
    _git("add", "other.txt")
    (tmp_path / "camp").mkdir()
    (tmp_path / "camp" / "unit.json").write_text("{}\n")
    return tmp_path


def test_publish_commits_the_campaign_folder_alone(repo):
    git_publish(Path("camp"))([Path("camp/unit.json")], "campaign: unit")
    assert _git("log", "-1", "--format=%s", "--name-only").split() == ["campaign:", "unit", "camp/unit.json"]
    assert _git("diff", "--cached", "--name-only").split() == ["other.txt"]      # still staged, not committed


def test_a_stale_index_lock_is_said_at_once_and_a_young_one_waited_for(repo, monkeypatch, capsys):
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    hour_ago = time.time() - 3600
    os.utime(lock, (hour_ago, hour_ago))
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    git_publish(Path("camp"))([Path("camp/unit.json")], "campaign: unit")
    said = capsys.readouterr().err
    assert slept == [] and re.search(r"index\.lock is 36\d\d s old", said) and "files are on disk" in said
    assert _git("log", "--format=%s").split() == ["first"]
    # a lock a running git holds (young) is retried; here it goes away during the first wait
    os.utime(lock)
    monkeypatch.setattr(time, "sleep", lambda s: (slept.append(s), lock.unlink()))
    git_publish(Path("camp"))([Path("camp/unit.json")], "campaign: unit")
    assert slept == [2] and _git("log", "-1", "--format=%s").strip() == "campaign: unit"


def test_a_unit_file_git_ignores_stops_the_campaign(repo):
    Path(".gitignore").write_text("build/\n")   # the rule that once hid a world campaign's build units
    (repo / "camp" / "build").mkdir()
    (repo / "camp" / "build" / "full.json").write_text("{}\n")
    with pytest.raises(UdsInputError, match=r"git ignores camp/build/full\.json \(rule \.gitignore:1:build/\)"):
        git_publish(Path("camp"))([Path("camp/build/full.json")], "campaign: unit")
    assert (repo / "camp" / "build" / "full.json").exists()   # kept on disk
    assert _git("log", "--format=%s").split() == ["first"]


def test_the_projects_gitignore_keeps_every_campaign_unit_file():
    units = ["results/qwen/campaign/build/full.json", "results/qwen/campaign/knowledge/full.json",
             "results/smol/attack_campaign/builds/npo.json", "results/smol/attack_campaign/measurements/x.json"]
    proc = subprocess.run(["git", "check-ignore", "--no-index", *units], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stdout   # 1: none of them is ignored
