"""TOFU's forget01/05/10 and retain99/95/90 (checkpoints/splits.py), checked against the real
TOFU files read here independently (full.json is four JSON arrays, one per line)."""

from __future__ import annotations

import json

import pytest

from checkpoints import ou_checkpoints, splits
from uds_core.errors import UdsInputError
from meta_eval.population import OU_ZOO, parse_zoo
from metrics.session import EvalSession


def _lines_of_arrays(path) -> list[dict]:
    return [rec for line in path.read_text().splitlines() if line.strip() for rec in json.loads(line)]


@pytest.fixture(scope="module")
def tofu(tofu_dir):
    full = _lines_of_arrays(tofu_dir / "full.json")
    forget10 = [{"question": r["prompt"], "answer": r["response"]}
                for r in json.loads((tofu_dir / "forget10.json").read_text())]
    retain90 = [json.loads(line) for line in (tofu_dir / "retain90.json").read_text().splitlines() if line.strip()]
    hand = json.loads((tofu_dir / "forget10_annotated.json").read_text())
    return {"full": full, "forget10": forget10, "retain90": retain90, "hand": hand}


def _qa(rows):
    return [(r["question"], r["answer"]) for r in rows]


def test_full_ends_with_forget10_row_by_row(tofu):
    assert len(tofu["full"]) == 4000 and len(tofu["forget10"]) == 400
    for i in range(400):
        assert _qa([tofu["full"][3600 + i]]) == _qa([tofu["forget10"][i]]), f"row {i}"
    splits.check_forget10_is_tail(tofu["full"], tofu["forget10"])
    moved = tofu["full"][:3999] + [tofu["full"][0]]
    with pytest.raises(UdsInputError, match="row 3999 is not forget10 row 399"):
        splits.check_forget10_is_tail(moved, tofu["forget10"])


@pytest.mark.parametrize("name, rows, retain", [("forget01", 40, "retain99"), ("forget05", 200, "retain95"),
                                                 ("forget10", 400, "retain90")])
def test_splits_are_the_last_authors_and_retain_the_rest(tofu, name, rows, retain):
    split = splits.get_split(name)
    forget, kept = splits.derive(tofu["full"], split)
    assert split.retain == retain and len(forget) == rows == split.rows and len(kept) == 4000 - rows
    assert _qa(forget) == _qa(tofu["forget10"][400 - rows:])     # the last rows / 20 authors of forget10
    assert _qa(kept[:3600]) == _qa(tofu["retain90"])              # retain90, then forget10's first rows
    assert _qa(kept[3600:]) == _qa(tofu["forget10"][:400 - rows])
    assert not set(_qa(forget)) & set(_qa(kept[3600:]))


def test_forget10_annotations_land_on_each_splits_own_rows(tofu, tofu_dir):
    for name, rows in (("forget01", 40), ("forget05", 200)):
        split = splits.get_split(name)
        mapped = splits.annotations_for(split, tofu["hand"])
        expected = [r for r in tofu["hand"] if r["idx"] >= 400 - rows]
        assert [r["idx"] for r in mapped] == [r["idx"] - (400 - rows) for r in expected]
        rows_of_split = splits.read_split_rows(split, tofu_dir)
        assert all(rows_of_split[r["idx"]]["question"] == r["question"] and r["entity"] for r in mapped)
        splits.check_records(mapped, split, dict(enumerate(rows_of_split)), "mapped")


def test_a_file_that_is_not_the_split_is_refused(tofu, tofu_dir):
    split = splits.get_split("forget01")
    known = dict(enumerate(splits.read_split_rows(split, tofu_dir)))
    mapped = splits.annotations_for(split, tofu["hand"])
    swapped = [{**mapped[0], "question": mapped[1]["question"]}] + mapped[1:]
    with pytest.raises(UdsInputError, match=f"record idx {mapped[0]['idx']}: its question is not that of forget01"):
        splits.check_records(swapped, split, known, "f.json")
    with pytest.raises(UdsInputError, match="record idx 40 is not a row of forget01"):
        splits.check_records([{**mapped[0], "idx": 40}], split, known, "f.json")
    with pytest.raises(UdsInputError, match="unknown forget split 'forget02'"):
        splits.get_split("forget02")


def test_each_split_has_its_retain_anchor():
    assert ou_checkpoints.retain_for("full", "retain90") == "retain"
    assert ou_checkpoints.retain_for("full", "retain99") == "llama32-1b_retain99"
    assert ou_checkpoints.retain_for("llama32-3b_full", "retain95") == "llama32-3b_retain95"
    assert (ou_checkpoints.hub_id_for_alias("llama32-1b_retain99")
            == "open-unlearning/tofu_Llama-3.2-1B-Instruct_retain99")
    assert ou_checkpoints.retain_for("/some/folder", "retain99") is None
    session = EvalSession("full", split="forget05")   # resolves names only: nothing is loaded
    assert session.roles["full"] == "full" and session.roles["retain"] == "llama32-1b_retain95"
    with pytest.raises(UdsInputError, match="no retain model goes with the full model"):
        EvalSession("full", full="/tmp", split="forget01")


def test_session_and_zoo_take_the_split_by_name(tofu, tofu_dir):
    session = EvalSession("full", split="forget01", tofu_dir=str(tofu_dir))
    records = session.records()
    assert [r["idx"] for r in records] == [r["idx"] - 360 for r in tofu["hand"] if r["idx"] >= 360]
    assert len(session.world().forget) == 40 and _qa(session.world().forget) == _qa(tofu["forget10"][360:])
    assert len(session.world().retain) == 3960
    zoo = parse_zoo(OU_ZOO, split="forget05")
    assert zoo.retain == "llama32-1b_retain95" and zoo.split == "forget05" and zoo.slug.endswith("forget05")
    with pytest.raises(UdsInputError, match="tiny-world model tiny:test has one forget set"):
        parse_zoo("tiny:test", split="forget01")
