"""Content digests: sealed JSON documents (`uds_core.sealed`), folder manifests (`uds_core.manifest`) and
the per-process memory of file digests (`uds_core.digests`). The fault tests that damage real cached
files are in tests/test_faults_content.py."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest
import torch
import xxhash
from safetensors.torch import save_file

from tests.checks import flip_digit_near_middle, flip_middle_byte
from uds_core import digests, manifest, sealed

REPO = Path(__file__).resolve().parents[1]
CAMPAIGN = REPO / "results" / "smol" / "campaign"


# -- sealed documents -------------------------------------------------------------------------------

def test_committed_campaign_files_keep_their_digests():
    """Every committed campaign file reads whole with the sealing now in core, and sealing its
    content again writes the very bytes on disk (what CampaignFiles.write writes)."""
    files = sorted(CAMPAIGN.rglob("*.json"))
    assert files, f"no committed campaign files under {CAMPAIGN}"
    for path in files:
        doc, problem = sealed.read_sealed(path)
        assert problem is None, (path, problem)
        body = {k: v for k, v in doc.items() if k != sealed.DIGEST}
        text = json.dumps(sealed.seal(body), indent=1, allow_nan=False, sort_keys=True) + "\n"
        assert text == path.read_text(), path
        # the digest is the sha256 of the body's canonical JSON, computed here without uds_core.sealed
        canon = json.dumps(body, sort_keys=True, allow_nan=False).encode()
        assert doc[sealed.DIGEST] == hashlib.sha256(canon).hexdigest()


def test_read_checked_tells_whole_damaged_and_legacy(tmp_path):
    path = tmp_path / "entry.json"
    legacy = frozenset({"a", "b"})
    assert sealed.read_checked(path, legacy) == sealed.Checked(None)        # absent
    path.write_text(json.dumps(sealed.seal({"a": 1.25, "b": [3, 4]})))
    assert sealed.read_checked(path, legacy) == sealed.Checked({"a": 1.25, "b": [3, 4]})
    flip_digit_near_middle(path)
    checked = sealed.read_checked(path, legacy)
    assert checked.doc is None and "content digest does not match" in checked.problem
    path.write_text(json.dumps({"a": 1.25, "b": [3, 4]}))                   # the older format, exactly
    assert sealed.read_checked(path, legacy) == sealed.Checked({"a": 1.25, "b": [3, 4]}, legacy=True)
    path.write_text(json.dumps({"a": 1.25, "b": [3, 4], "digesu": "0"}))    # a flip inside the key "digest"
    assert sealed.read_checked(path, legacy).problem.startswith("no content digest")
    for text in ('{"a": 1.2', "[1, 2]", "\xff"):
        path.write_text(text, encoding="latin-1")
        assert sealed.read_checked(path, legacy).problem, text


# -- folder manifests -------------------------------------------------------------------------------

@pytest.fixture
def folder(tmp_path) -> Path:
    f = tmp_path / "model"
    f.mkdir()
    save_file({"w": torch.arange(4096, dtype=torch.float32)}, str(f / "model.safetensors"))
    (f / "config.json").write_text('{"hidden_size": 64}')
    (f / ".model.lock").write_text("")    # hidden files (locks, temp files) are not listed
    manifest.record(f)
    return f


def test_manifest_lists_every_file_and_verifies_them(folder):
    doc = json.loads((folder / manifest.MANIFEST).read_text())
    assert sorted(doc["files"]) == ["config.json", "model.safetensors"] and doc["hash"] == "xxh3_128"
    want = xxhash.xxh3_128((folder / "model.safetensors").read_bytes()).hexdigest()
    size = (folder / "model.safetensors").stat().st_size
    assert doc["files"]["model.safetensors"] == {"bytes": size, "digest": want} and size > 4 * 4096
    assert manifest.verify(folder) is None


@pytest.mark.parametrize("damage, said", [
    (lambda f: flip_middle_byte(f / "model.safetensors"), "model.safetensors: content differs"),
    (lambda f: (f / "model.safetensors").write_bytes(b"x" * 10), "model.safetensors: 10 bytes where"),
    (lambda f: (f / "config.json").unlink(), "config.json: missing"),
    (lambda f: (f / "extra.safetensors").write_bytes(b"x"), "extra.safetensors: not listed"),
    (lambda f: flip_digit_near_middle(f / manifest.MANIFEST), "digest manifest unreadable"),
    (lambda f: (f / manifest.MANIFEST).write_text('{"files": {'), "digest manifest unreadable"),
    (lambda f: (f / manifest.MANIFEST).write_text("[]"), "digest manifest unreadable"),
    (lambda f: (f / manifest.MANIFEST).write_text(json.dumps(sealed.seal({"files": {"a": 1}}))),
     "digest manifest unreadable"),
    (lambda f: (f / manifest.MANIFEST).write_text(json.dumps(sealed.seal(
        {**json.loads((f / manifest.MANIFEST).read_text()), "hash": "md4"}))), "digest manifest unreadable"),
])
def test_every_difference_is_one_line_naming_the_file(folder, damage, said):
    damage(folder)
    problem = manifest.verify(folder)
    assert problem is not None and said in problem and "\n" not in problem
    assert str(folder) in problem


def test_a_folder_without_manifest_is_recorded_once_then_verified(folder):
    (folder / manifest.MANIFEST).unlink()
    said = []
    assert manifest.verify_or_record(folder, said.append) is None
    assert len(said) == 1 and "before content digests" in said[0] and str(folder) in said[0]
    assert manifest.verify_or_record(folder, said.append) is None and len(said) == 1
    flip_middle_byte(folder / "model.safetensors")
    assert "content differs" in manifest.verify_or_record(folder, said.append)


def test_a_truncated_folder_without_manifest_is_not_recorded(tmp_path):
    save_file({"w": torch.ones(100)}, str(tmp_path / "model.safetensors"))
    whole = (tmp_path / "model.safetensors").read_bytes()
    (tmp_path / "model.safetensors").write_bytes(whole[:-8])
    problem = manifest.verify_or_record(tmp_path, lambda s: None)
    assert "model.safetensors" in problem and not manifest.has_manifest(tmp_path)


# -- digests remembered within a process -------------------------------------------------------------

def test_a_file_is_hashed_once_per_process_until_it_changes(tmp_path, monkeypatch):
    path = tmp_path / "w.bin"
    path.write_bytes(b"a" * 1000)
    old = time.time() - 60
    os.utime(path, (old, old))      # written a minute ago: no longer racy
    reads = []

    def counting():
        reads.append(1)
        return hashlib.sha256()

    monkeypatch.setattr(digests, "_DIGESTS", {})
    monkeypatch.setitem(digests.HASHES, "sha256", counting)
    want = hashlib.new("sha256", b"a" * 1000).hexdigest()
    assert digests.file_sha256(path) == digests.file_sha256(path) == want and len(reads) == 1
    with open(path, "r+b") as fh:   # same size, same inode, new mtime
        fh.write(b"b")
    assert digests.file_sha256(path) == hashlib.new("sha256", b"b" + b"a" * 999).hexdigest() and len(reads) == 2
    assert digests.file_sha256(path) == digests.file_sha256(path) and len(reads) == 4   # just written: racy


def test_a_change_within_one_clock_tick_is_still_seen(tmp_path, monkeypatch):
    """Two writes that leave the same mtime (a coarse filesystem clock): the second is seen
    because a file modified this recently is never remembered."""
    monkeypatch.setattr(digests, "_DIGESTS", {})
    path = tmp_path / "w.bin"
    path.write_bytes(b"a" * 1000)
    stamp = os.stat(path).st_mtime_ns
    first = digests.file_sha256(path)
    with open(path, "r+b") as fh:
        fh.write(b"b")
    os.utime(path, ns=(stamp, stamp))   # the tick did not advance
    assert digests.file_sha256(path) != first


def test_a_deliberate_edit_is_recorded_and_other_damage_still_seen(folder):
    (folder / "config.json").write_text('{"hidden_size": 64, "rope_theta": 10000.0}')
    flip_middle_byte(folder / "model.safetensors")
    manifest.update(folder, ["config.json"])
    problem = manifest.verify(folder)
    assert "model.safetensors: content differs" in problem


def test_legacy_fields_written_into_a_built_folder_keep_it_whole(tmp_path):
    """experiments/ou_integration.py adds the transformers-4.x fields to copies of built folders:
    the edited files' digests are recorded with them, so the copy is not taken for damaged."""
    from checkpoints.world.store import write_legacy_fields

    (tmp_path / "config.json").write_text(json.dumps({"rope_parameters": {"rope_theta": 5e5}, "dtype": "float32"}))
    manifest.record(tmp_path)
    write_legacy_fields(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["rope_theta"] == 5e5
    assert manifest.verify(tmp_path) is None
