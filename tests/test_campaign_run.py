"""`uds campaign run` for real, on the `test` world: killed by a signal mid-run, resumed, moved to
a fresh machine, a damaged file redone, anchors rebuilt, and the tables assembled from its files.

Each run is a separate process with one torch thread (as the campaign runs), under its own
UDS_HOME: a "fresh machine" is a home holding only what the first build makes (the world's data,
tokenizer, base, full and retain, copied from the session's build of the world), with none of the
campaign's scratch (measurement store, relearned copies) and none of the members it built.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from meta_eval.campaign.files import CampaignFiles
from tests.campaign_fixtures import fresh_home
from uds.cli import main
from uds_core.sealed import read_sealed

REPO = Path(__file__).resolve().parents[1]
ZOO = "tiny:test"
POOL_MEMBER = "pos_full_lr3e-3_ep12"     # the campaign's fourth unit, the first that needs a build


def env_of(home: Path) -> dict:
    return {**os.environ, "UDS_HOME": str(home), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(REPO)}


def campaign(home: Path, camp: Path, verb: str, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "uds", "campaign", verb, "--zoo", ZOO, "--dir", str(camp), *options],
                          env=env_of(home), capture_output=True, text=True, timeout=600)


def status(home: Path, camp: Path) -> tuple[str, str]:
    """`uds campaign status` in this process (it loads no model): (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        mp.setenv("UDS_HOME", str(home))
        assert main(["campaign", "status", "--zoo", ZOO, "--dir", str(camp)]) == 0
    return out.getvalue(), err.getvalue()


def measured(log: str) -> list[str]:
    """The units a run's log says it measured, in order ("orig/full", ...)."""
    return re.findall(r"campaign: \[\d+/\d+\] (\S+) done", log)


def files_of(camp: Path) -> dict[str, bytes]:
    """Every measurement file, as "setting/model" -> its bytes."""
    root = camp / "measurements"
    return {f"{p.parent.name}/{p.stem}": p.read_bytes() for p in sorted(root.glob("*/*.json"))}


def sealed(path: Path) -> dict:
    doc, problem = read_sealed(path)
    assert doc is not None, f"{path}: {problem or 'missing'}"
    return doc


def models_built(home: Path) -> set[str]:
    return {p.name for p in (home / "world" / "test-0" / "models").iterdir()}


def kill_after(home: Path, camp: Path, units: int) -> tuple[int, str]:
    """Start a run and send SIGTERM as soon as its log reports `units` measured; (exit, log)."""
    proc = subprocess.Popen([sys.executable, "-m", "uds", "campaign", "run", "--zoo", ZOO, "--dir", str(camp),
                             "--max-units", "10"], env=env_of(home), stderr=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if len(measured("".join(lines))) == units:
            proc.send_signal(signal.SIGTERM)
            break
    rest = proc.communicate(timeout=300)[1]
    return proc.returncode, "".join(lines) + rest


@pytest.fixture(scope="module")
def killed(test_world, tmp_path_factory) -> dict:
    """A campaign killed after three units, then resumed for one more (the first that needs a build),
    on one machine."""
    root = tmp_path_factory.mktemp("campaign_run")
    home, camp = fresh_home(test_world, root), root / "camp"
    code, log = kill_after(home, camp, 3)
    after_kill = files_of(camp)
    resumed = campaign(home, camp, "run", "--max-units", "1")
    return {"root": root, "home": home, "camp": camp, "kill": (code, log), "after_kill": after_kill,
            "resumed": resumed, "after_resume": files_of(camp)}


def test_a_killed_campaign_keeps_every_finished_unit_whole(killed):
    code, log = killed["kill"]
    first = ["orig/full", "orig/retain", "relearn/retain"]
    assert code == 0, log
    assert measured(log) == first
    assert "stopped by a signal after 3 unit(s)" in log
    assert sorted(killed["after_kill"]) == sorted(first)
    files = CampaignFiles(killed["camp"], log=lambda s: pytest.fail(s))
    for path in (killed["camp"] / "measurements").rglob("*"):
        assert path.is_dir() or (path.suffix == ".json" and files.read(path) is not None), path
    assert not [p for p in killed["camp"].rglob("*") if ".tmp" in p.name]


def test_the_rerun_continues_where_the_kill_stopped(killed):
    run = killed["resumed"]
    assert run.returncode == 0, run.stderr
    assert "campaign tiny:test: measured 3/57 (model, setting) units" in run.stderr
    new = measured(run.stderr)
    assert new == [f"orig/{POOL_MEMBER}"] and not set(new) & set(killed["after_kill"])
    after = killed["after_resume"]
    assert {k: after[k] for k in killed["after_kill"]} == killed["after_kill"]   # not one byte rewritten
    assert set(after) == set(killed["after_kill"]) | set(new)
    # the pool member is measured in its only setting: weights deleted, its build file keeps the fingerprint
    assert POOL_MEMBER not in models_built(killed["home"])
    build = sealed(killed["camp"] / "builds" / f"{POOL_MEMBER}.json")
    assert re.fullmatch(r"[0-9a-f]{16,}", build["fingerprint"]) and "forget_questions" in build["knowledge"]
    doc = sealed(killed["camp"] / "measurements" / "orig" / f"{POOL_MEMBER}.json")
    assert doc["model_fingerprint"] == build["fingerprint"]


@pytest.fixture(scope="module")
def moved(killed, test_world) -> dict:
    """The same campaign folder continued on a fresh machine (a new home), then a damaged file."""
    home = fresh_home(test_world, killed["root"] / "fresh")
    camp = killed["camp"]
    said = status(home, camp)
    before = files_of(camp)
    run = campaign(home, camp, "run", "--max-units", "1")
    return {"home": home, "camp": camp, "status": said, "before": before, "run": run, "after": files_of(camp)}


def test_a_fresh_machine_continues_from_the_files_alone(moved):
    out = moved["status"][0]
    assert "measured 4/57 (model, setting) units" in out
    assert "  pool members measured: P 1/3, N 0/3" in out.splitlines()             # pos_full_lr3e-3_ep12 alone
    assert "  anchors measured: orig/full yes, orig/retain yes, relearn/retain yes" in out.splitlines()
    nxt = re.search(r"next: (\S+) \((?:built here|to build); then (\S+?)[,)]", out)
    run = moved["run"]
    assert run.returncode == 0, run.stderr
    new = measured(run.stderr)
    assert len(new) == 1 and new[0] not in moved["before"]
    assert new[0] == f"{nxt.group(2)}/{nxt.group(1)}"                           # status said what comes next
    assert {k: moved["after"][k] for k in moved["before"]} == moved["before"]
    assert POOL_MEMBER not in models_built(moved["home"])     # done before the move: not rebuilt
    assert "was rebuilt here" not in run.stderr              # same machine kind: same bytes, same fingerprint
    # one anchor build, recorded by the first machine; every file measured before the move used it
    [anchors] = list((moved["camp"] / "anchors").glob("*.json"))
    assert all(json.loads(b)["anchors"] == sealed(anchors)["anchors"] for b in moved["before"].values())
    assert (f"are anchor build {anchors.stem} of anchors/ (the same fingerprints; {len(moved['before'])} committed"
            in run.stderr)


def test_a_damaged_file_is_said_left_out_and_redone(killed, moved):
    camp, home = killed["camp"], moved["home"]
    path = camp / "measurements" / "orig" / "full.json"
    good = path.read_bytes()
    text = good.decode()
    digit = re.search(r'"values": \{[^}]*?(\d)\d*[,}]', text)
    i = digit.start(1)
    path.write_text(text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1:])
    out, err = status(home, camp)
    assert "measured 4/57" in out and "full.json" in err and "will be redone" in err
    run = campaign(home, camp, "run", "--max-units", "1")
    assert run.returncode == 0, run.stderr
    assert measured(run.stderr) == ["orig/full"]
    assert "full.json" in run.stderr and "will be redone" in run.stderr
    assert sealed(path)["values"] == json.loads(good)["values"]   # the same values, measured again


def test_status_under_other_code_counts_by_the_digests_the_protocol_recorded(killed, monkeypatch):
    """Code that moved on since the protocol was fixed still reads the campaign's progress (every
    digest a file is checked against is in protocol.json); only `run` refuses it."""
    import uds.commands.campaign as command

    camp, home = killed["camp"], killed["home"]
    same, _ = status(home, camp)
    monkeypatch.setattr(command, "measure_code_of", lambda plan: "0" * 20)   # the measuring code changed
    other, err = status(home, camp)
    assert other.splitlines()[0] == same.splitlines()[0]          # the same units counted done, the same ETA
    commit = json.loads((camp / "protocol.json").read_text())["fixed_at"]["commit"]
    assert "this code differs from it in the measuring code" in other and commit in other
    assert "left out" not in err                                   # no file is taken for a stale one
    before, out = files_of(camp), io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(out):
        mp.setenv("UDS_HOME", str(home))
        assert main(["campaign", "run", "--zoo", ZOO, "--dir", str(camp), "--max-units", "1"]) == 2
    assert "fixed under another protocol (differs in: the measuring code" in out.getvalue()
    assert files_of(camp) == before


def test_rebuilt_anchors_state_their_spread(killed, test_world, tmp_path, monkeypatch):
    """Anchors whose fingerprint differs from the committed measurements' re-score measured models
    (every metric that reads an anchor, not only UDS) and write the spread; on the same weights the
    spread is exactly 0 for each of them."""
    from uds.commands.campaign import make_campaign

    home = fresh_home(test_world, tmp_path)
    monkeypatch.setenv("UDS_HOME", str(home))
    camp = tmp_path / "camp"
    shutil.copytree(killed["camp"], camp)
    args = argparse.Namespace(verb="run", zoo=ZOO, dir=str(camp), batch_size=32, max_new_tokens=128,
                              relearn_lr=None, commit=False, keep="", max_units=None, threads=1)
    c = make_campaign(args)
    real = c.spec.fingerprint
    c.spec = dataclasses.replace(c.spec, fingerprint=lambda f: ("0" * 8 + real(f)[8:]) if f.name == "full" else real(f))
    said: list[str] = []
    c.log = said.append
    threads = torch.get_num_threads()
    torch.set_num_threads(args.threads)   # as `uds campaign run` does: the committed files were measured so
    try:
        c.check_anchors()
    finally:
        torch.set_num_threads(threads)
    spread = [sealed(p) for p in (camp / "spread").glob("*.json")]
    assert len(spread) == 1 and spread[0]["anchors_here"]["full"].startswith("0" * 8)
    rows = spread[0]["models"]
    files = CampaignFiles(camp)
    unlearned = {d["model"] for d in files.measurements() if d["kind"] == "unlearned" and d["setting"] == "orig"}
    builds = files.builds()
    seconds = {m: builds[m]["train_seconds"] for m in unlearned}
    chosen = [r["model"] for r in rows]
    assert len(chosen) == min(2, len(unlearned)) and rows
    # the quickest to train again: no model left out trained faster than one re-scored
    assert max(seconds[m] for m in chosen) <= min((seconds[m] for m in unlearned - set(chosen)), default=float("inf"))
    for r in rows:
        assert r["uds_here"] == r["uds_committed"] and r["abs_diff"] == 0.0
        assert set(r["metrics"]) == ANCHOR_KEYS
        for key, m in r["metrics"].items():
            assert m["here"] == m["committed"] is not None and m["abs_diff"] == 0.0, key
    assert any("re-scoring" in s for s in said)


# the keys of an unlearned model's as-built job that read full or retain, listed by hand from the spec
# (the retain-normalised MIAs, CKA, Logit Lens, Fisher, UDS; fluency reads full's generations)
ANCHOR_KEYS = {"s_mia_loss", "s_mia_zlib", "s_mia_min_k", "s_mia_min_kpp", "cka", "logit_lens",
               "fisher_masked_0.0001", "fisher_masked_0.001", "fisher_masked_0.01", "uds", "fluency"}


def test_the_anchor_dependent_keys_are_the_ones_that_read_an_anchor():
    from meta_eval.measure import BENCHMARK_EXTRA
    from metrics.registry import META_KEYS, anchor_dependent

    assert set(anchor_dependent(list(META_KEYS) + list(BENCHMARK_EXTRA))) == ANCHOR_KEYS


def test_the_tables_assemble_from_the_files(killed, moved, uds, tmp_path):
    camp = killed["camp"]
    out = tmp_path / "out"
    run = uds("meta-eval", "--from-campaign", str(camp), "--out", str(out))
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "meta_eval.json").read_text())
    cov = doc["campaign"]["coverage"]
    have = files_of(camp)
    assert cov["units"] == len(have) == 5 and cov["units_total"] == 57 and not cov["complete"]
    assert doc["campaign"]["left_out"] == []
    inputs = [p for p in doc["campaign"]["inputs"] if p.startswith("measurements/")]
    assert {p.split("/", 1)[1].removesuffix(".json") for p in inputs} == set(have)


def test_eta_estimates_an_untimed_kind_from_its_family():
    from meta_eval.campaign.progress import GUESS, Progress

    p = Progress()
    assert p.estimate("build:pool") == GUESS["build:pool"] and p.estimate("pool:orig") == GUESS["pool:orig"]
    p.add("build:full", 10.0)
    p.add("build:retain", 20.0)
    p.add("full:orig", 2.0)
    assert p.estimate("build:pool") == 15.0                      # the builds timed, not the guess
    assert p.estimate("unlearned:nf4") == 2.0                    # the measurements timed, never a build's time
    p.add("build:pool", 40.0)
    assert p.estimate("build:pool") == 40.0 and p.estimate("build:unlearned") == 20.0


def test_spread_models_are_the_quickest_to_train_again():
    from meta_eval.campaign.anchors import cheapest_to_rebuild

    docs = [{"model": m} for m in ("altpo", "graddiff", "rmu", "npo", "nobuild")]
    builds = {"altpo": {"train_seconds": 1249.4}, "graddiff": {"train_seconds": 547.7},
              "rmu": {"train_seconds": 255.1}, "npo": {"train_seconds": None}}
    assert [d["model"] for d in cheapest_to_rebuild(docs, builds)] == ["rmu", "graddiff", "altpo", "nobuild", "npo"]
