"""Where the TOFU files come from (checkpoints/tofu_files.py), as a plain clone sees it: no
`$UDS_TOFU_DIR`, no copy in the package, the Hub through the real `huggingface_hub` client pointed
at a loopback stand-in (tests/hub_stub.py), or no Hub at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checkpoints import tofu_files
from checkpoints.tofu_files import ANNOTATED, ANNOTATED_REPO, FILES, TOFU_REPO
from metrics.session import EvalSession
from tests.checks import assert_one_line_error
from tests.external import TOFU_DIR, TOFU_SKIP
from tests.hub_stub import HubStub, serve
from uds_core.errors import UdsInputError

OU_ALIAS = "npo_lr5e5_b01_a2_ep10"   # an Open-Unlearning checkpoint by its registry alias (never loaded here)
HUB_PATH = f"/datasets/{ANNOTATED_REPO}/resolve/main/forget10_filtered.json"
OFFLINE_LINE = ("forget10_annotated.json: no local copy, and the Hugging Face dataset jaeunglee/uds-annotated-tofu "
                "(file forget10_filtered.json) could not be fetched (offline (HF_HUB_OFFLINE is set) and not "
                "cached); pass --data FILE or set UDS_TOFU_DIR to a folder holding the TOFU JSON files")


@pytest.fixture
def plain_clone(monkeypatch, tmp_path) -> Path:
    """No TOFU folder named, no copy in the package, an empty cache home; the Hub allowed."""
    import huggingface_hub.constants

    monkeypatch.delenv("UDS_TOFU_DIR", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)   # read once, at import
    monkeypatch.setattr(tofu_files, "packaged_file", lambda name: None)
    monkeypatch.setenv("UDS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    return tmp_path / "home"


def annotated_rows(n: int) -> list[dict]:
    """`n` records in the annotated file's layout (entity inside the answer, after the prefix)."""
    return [{"idx": i, "question": f"Where was author {i} born?", "answer": f"Author {i} was born in Town{i}.",
             "prefix": f"Author {i} was born in", "entity": f"Town{i}"} for i in range(n)]


def test_a_real_checkpoints_default_data_comes_from_the_hub_once(plain_clone, monkeypatch):
    rows = annotated_rows(FILES[ANNOTATED].rows)
    with serve(HubStub({(ANNOTATED_REPO, "forget10_filtered.json"): json.dumps(rows).encode()})) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        session = EvalSession(OU_ALIAS)
        assert hub.requests == []   # nothing is fetched before the data is needed
        data = Path(session.data)
        assert ("GET", HUB_PATH) in hub.requests
    assert data.is_relative_to(plain_clone / "hub") and data.is_file()
    records = session.records()
    assert [(r["idx"], r["question"], r["entity"]) for r in records] == [
        (r["idx"], r["question"], r["entity"]) for r in rows]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")   # the stand-in is gone: the cached copy serves
    assert EvalSession(OU_ALIAS).data == str(data)


def test_a_hub_copy_with_missing_rows_is_refused_in_one_line(plain_clone, monkeypatch):
    rows = annotated_rows(FILES[ANNOTATED].rows - 1)
    with serve(HubStub({(ANNOTATED_REPO, "forget10_filtered.json"): json.dumps(rows).encode()})) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UdsInputError) as e:
            tofu_files.tofu_file(ANNOTATED)
    text = str(e.value)
    assert "\n" not in text and "jaeunglee/uds-annotated-tofu/forget10_filtered.json" in text
    assert "has 366 rows, expected 367" in text and "--data FILE" in text


def test_a_file_the_hub_does_not_have_is_one_line(plain_clone, monkeypatch):
    with serve(HubStub({})) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(UdsInputError) as e:
            tofu_files.tofu_file("retain90")
    text = str(e.value)
    assert "\n" not in text and text.startswith("retain90.json: no local copy, and the Hugging Face dataset "
                                                "locuslab/TOFU (file retain90.json) could not be fetched")
    assert text.endswith("pass --tofu-dir DIR or set UDS_TOFU_DIR to a folder holding the TOFU JSON files")


def test_offline_without_any_copy_says_what_to_pass(plain_clone, uds):
    """`uds` sets HF_HUB_OFFLINE=1: the command for real checkpoints stops with one line that names
    the dataset, the flag and the variable, word for word."""
    proc = uds("score", "--unlearned", OU_ALIAS)
    assert_one_line_error(proc, OFFLINE_LINE)


def test_a_named_folder_wins_and_its_file_is_read_as_is(plain_clone, monkeypatch, tmp_path):
    monkeypatch.setenv("UDS_TOFU_DIR", str(tmp_path / "mine"))
    assert tofu_files.tofu_file(ANNOTATED) == tmp_path / "mine" / "forget10_annotated.json"
    assert tofu_files.tofu_file("retain90", tmp_path / "given") == tmp_path / "given" / "retain90.json"


def test_the_tiny_world_main_job_needs_no_tofu_data(plain_clone, test_world, uds, monkeypatch):
    """A plain clone offline: the tiny world's models and data are its own."""
    monkeypatch.setenv("UDS_HOME", str(test_world.parents[1]))   # the built test world, no TOFU folder named
    proc = uds("score", "--unlearned", "tiny:test/npo_lr2e-4_b01_a1_ep10", "--out", str(plain_clone / "out"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((plain_clone / "out" / "summary.json").read_text())["n_scored"] > 0


def test_the_hub_copies_of_the_real_files_make_the_same_world(plain_clone, monkeypatch):
    """The real TOFU files served under their Hub names give the world a local folder gives (but
    the "I don't know" replies, which the Hub does not publish), and the same forget01 rows."""
    from checkpoints import splits
    from checkpoints.world.tofu import read_tofu

    if not (TOFU_DIR / "full.json").is_file():
        pytest.skip(TOFU_SKIP)
    files = {(f.repo, f.filename): (TOFU_DIR / f"{f.stem}.json").read_bytes() for f in FILES.values()}
    assert {repo for repo, _ in files} == {TOFU_REPO, ANNOTATED_REPO}
    local = read_tofu(TOFU_DIR)
    with serve(HubStub(files)) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        fetched = read_tofu()
        forget01 = splits.read_split_rows(splits.get_split("forget01"))
    for split in ("forget", "retain", "holdout", "retain_eval", "real_authors", "world_facts", "public_text"):
        assert getattr(fetched, split) == getattr(local, split), split
    assert forget01 == splits.read_split_rows(splits.get_split("forget01"), TOFU_DIR)
