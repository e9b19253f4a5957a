"""The two data sources of the tiny world: the synthetic generator and the TOFU reader.

TOFU numbers are derived here from the raw files with plain `json`, not through the reader.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from checkpoints.world import synthetic
from checkpoints.world.schema import QA_SPLITS, World
from checkpoints.world.synthetic import FACT_KINDS, generate_synthetic_world
from checkpoints.world.tofu import read_records, read_tofu
from uds_core.errors import UdsInputError
from tests.conftest import TOFU_DIR, TOFU_SKIP

needs_tofu = pytest.mark.skipif(not (TOFU_DIR / "forget10_perturbed.json").is_file(), reason=TOFU_SKIP)
QUOTES = ("'", '"')


def find_entity(reference: str, entity: str) -> int:
    """spec §2.2 search: the entity, then its stripped form, then with a leading space; -1 if absent."""
    for candidate in (entity, entity.strip(), None if entity.startswith(" ") else " " + entity):
        if candidate is not None and (pos := reference.find(candidate)) >= 0:
            return pos
    return -1


def continuation(item: dict) -> str:
    assert item["answer"].startswith(item["prefix"])
    return item["answer"][len(item["prefix"]):]


def words(texts) -> set[str]:
    return {w for t in texts for w in re.findall(r"[A-Za-z]+", t)}


# ----------------------------------------------------------------------------------------------
# Synthetic world

@pytest.fixture(scope="module")
def world() -> World:
    return generate_synthetic_world(0, 200, 20, 300, 40)


def test_synthetic_split_sizes(world):
    facts = len(FACT_KINDS)
    assert facts >= 10
    # 200 train authors, 10% forget: 20 forget authors, 180 retain; retain_eval defaults to 20 authors.
    assert len(world.forget) == 20 * facts
    assert len(world.retain) == 180 * facts
    assert len(world.holdout) == 20 * facts
    assert len(world.retain_eval) == 20 * facts
    assert len({it["author"] for it in world.forget}) == 20
    assert len(world.real_authors) == 100 and len(world.world_facts) == 100  # 300 public // 3
    assert len(world.forget_bios) == 20 and len(world.other_bios) == 40
    assert 25 <= len(set(world.idk)) == len(world.idk)
    assert world.kind == "synthetic"


def test_synthetic_idx_and_author_sets(world):
    for split in QA_SPLITS:
        assert [it["idx"] for it in getattr(world, split)] == list(range(len(getattr(world, split))))
    forget, retain, holdout = ({it["author"] for it in getattr(world, s)} for s in ("forget", "retain", "holdout"))
    assert not (forget & retain) and not (forget & holdout) and not (retain & holdout)
    # retain_eval is the first retain authors' QA, item for item.
    def strip(it):
        return {k: v for k, v in it.items() if k != "idx"}
    assert [strip(it) for it in world.retain_eval] == [strip(it) for it in world.retain[:len(world.retain_eval)]]


def test_synthetic_annotation(world):
    for split in ("forget", "retain", "holdout", "retain_eval"):
        for it in getattr(world, split):
            entity, cont = it["entity"], continuation(it)
            assert cont.startswith(" " + entity) and not it["prefix"].endswith(" ")
            assert find_entity(cont, entity) == 1
            assert 5 <= len(it["answer"].split()) <= 25
            assert it["paraphrased_question"] != it["question"]
            assert entity in it["paraphrased_answer"] and it["paraphrased_answer"] != it["answer"]
            wrong = it["perturbed_answers"]
            assert len(wrong) == 5 == len(set(wrong)) and it["answer"] not in wrong
            tail = cont[1 + len(entity):]
            frame = re.sub(r" an?$", "", it["prefix"])  # the article may change with the value
            for w in wrong:
                assert w.startswith(frame) and w.endswith(tail)
                assert not re.search(rf"\b{re.escape(entity)}\b", w)


def test_synthetic_pools():
    for kind in FACT_KINDS:
        assert 50 <= len(set(kind.pool)) or kind.key.endswith("book")
        assert len(kind.questions) >= 2 and len(kind.answers) >= 2 and kind.bio
        assert all(" {v}" in t for t in kind.answers)
        if not kind.key.endswith("book"):
            assert len(kind.pool) <= 120
        # no value inside another one, so a wrong value never contains the right one
        # (titles are all "The <adjective> <noun>": distinct ones cannot nest)
        assert len(set(kind.pool)) == len(kind.pool)
        for v in () if kind.key.endswith("book") else kind.pool:
            pattern = re.compile(rf"\b{re.escape(v)}\b")
            assert sum(bool(pattern.search(x)) for x in kind.pool) == 1, v


def test_synthetic_private_authors_stay_out_of_public_data(world):
    private = [it for s in ("forget", "retain", "holdout") for it in getattr(world, s)]
    private_names = words(it["author"] for it in private)
    utility = [x for it in world.real_authors + world.world_facts
               for x in (it["question"], it["answer"], *it["perturbed_answers"], *it["options"])]
    assert not private_names & words(world.public_text)
    assert not private_names & words(utility)
    assert not private_names & words(world.other_bios)
    # book titles are unique per author: no private title, hence no (author, book) pair, in public text
    public = "\n".join(world.public_text)
    titles = {it["entity"] for it in private if it["entity"] in synthetic.TITLES}
    assert len(titles) == 2 * 220  # 200 train + 20 holdout authors, two books each
    assert not [t for t in titles if t in public]
    assert not [it["answer"] for it in private if it["answer"] in public]
    # the other entities appear in no split and no public document
    other_names = words(" ".join(b.split()[:2]) for b in world.other_bios)  # bios open with the name
    assert len(other_names) == 2 * len(world.other_bios)
    assert other_names and not other_names & (words(public.splitlines()) | words(it["answer"] for it in private))


def test_synthetic_public_text_states_utility_facts(world):
    docs = set(world.public_text)
    for it in world.real_authors + world.world_facts:
        assert f"Question: {it['question']}\nAnswer: {it['answer']}" in docs
        assert len(it["perturbed_answers"]) == 3 and it["answer"] not in it["perturbed_answers"]
        assert sorted(it["options"]) == sorted([it["answer"], *it["perturbed_answers"]])
    public = "\n".join(world.public_text)
    for it in world.world_facts:
        assert re.search(rf"\b{re.escape(it['answer'])}\b", public, re.IGNORECASE)
    for it in world.real_authors[:20]:  # the public author's bio names the book
        title = re.search(r"'(.+)'", it["question"]).group(1)
        assert any(it["answer"] in d and title in d and "Question:" not in d for d in world.public_text)


def test_synthetic_forget_bios(world):
    by_author: dict[str, list[dict]] = {}
    for it in world.forget:
        by_author.setdefault(it["author"], []).append(it)
    assert len(by_author) == len(world.forget_bios)
    for bio, (author, items) in zip(world.forget_bios, by_author.items()):
        assert author in bio
        assert all(it["entity"] in bio for it in items)
        assert not any(it["answer"] in bio or it["paraphrased_answer"] in bio for it in items)


def test_synthetic_determinism_and_speed():
    start = time.perf_counter()
    a = generate_synthetic_world(3, 30, 6, 80, 6)
    elapsed = time.perf_counter() - start
    assert a.to_dict() == generate_synthetic_world(3, 30, 6, 80, 6).to_dict()
    b = generate_synthetic_world(4, 30, 6, 80, 6)
    assert a.to_dict() != b.to_dict()
    assert {it["author"] for it in a.forget} != {it["author"] for it in b.forget}
    assert elapsed < 1.0
    start = time.perf_counter()
    generate_synthetic_world(0, 300, 0, 4, 0)
    assert time.perf_counter() - start < 1.5  # brief: < 1 s for 300 authors; margin for a busy machine


def test_synthetic_arguments(tmp_path):
    w = generate_synthetic_world(1, 30, 6, 10, 2, forget_fraction=0.2, retain_eval_authors=5)
    n = len(FACT_KINDS)
    assert (len(w.forget), len(w.retain), len(w.retain_eval), len(w.holdout)) == (6 * n, 24 * n, 5 * n, 6 * n)
    assert len(w.real_authors) == 20  # 10 public authors have 20 books in all
    assert len(generate_synthetic_world(1, 5, 0, 4, 0, forget_fraction=0.0).forget) == n  # at least one
    with pytest.raises(ValueError):
        generate_synthetic_world(1, 1, 0, 10, 0)
    with pytest.raises(ValueError):
        generate_synthetic_world(1, 10, 0, 10, 0, retain_eval_authors=10)
    w.save(tmp_path)
    assert World.load(tmp_path).to_dict() == w.to_dict()
    assert len(json.loads((tmp_path / "uds_data.json").read_text())) == len(w.forget)


# ----------------------------------------------------------------------------------------------
# TOFU

def raw(name: str) -> list[dict]:
    """A TOFU file parsed with plain json: one array, or one JSON value per line."""
    text = (TOFU_DIR / name).read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        out = []
        for line in text.splitlines():
            if line.strip():
                v = json.loads(line)
                out.extend(v if isinstance(v, list) else [v])
        return out


@pytest.fixture(scope="module")
def tofu() -> World:
    return read_tofu(TOFU_DIR)


@needs_tofu
def test_tofu_counts(tofu):
    idk_lines = [l for l in (TOFU_DIR / "idontknow.jsonl").read_text().splitlines() if l.strip()]
    expected = {"forget": 400, "retain": 3600, "holdout": 400, "retain_eval": 400,
                "real_authors": 100, "world_facts": 117}
    assert {s: len(getattr(tofu, s)) for s in expected} == expected
    assert {s: len(raw(f)) for s, f in [("forget", "forget10_perturbed.json"), ("retain", "retain90.json"),
                                        ("holdout", "holdout10.json"), ("retain_eval", "retain_perturbed.json"),
                                        ("real_authors", "real_authors.json"),
                                        ("world_facts", "world_facts.json")]} == expected
    assert len(tofu.uds_items()) == 367 == len(raw("forget10_annotated.json"))
    assert tofu.idk == [l.strip() for l in idk_lines]
    assert len(tofu.forget_bios) == 20 and tofu.kind == "tofu"
    for split in QA_SPLITS:
        assert [it["idx"] for it in getattr(tofu, split)] == list(range(len(getattr(tofu, split))))


@needs_tofu
def test_tofu_text_matches_files(tofu):
    forget10 = raw("forget10.json")  # prompt/response copy of the same 400 pairs
    assert [(it["question"], it["answer"]) for it in tofu.forget] == [(r["prompt"], r["response"]) for r in forget10]
    assert [it["question"] for it in tofu.retain] == [r["question"] for r in raw("retain90.json")]
    assert tofu.retain_eval[5]["paraphrased_answer"] == raw("retain_perturbed.json")[5]["paraphrased_answer"]
    assert all(len(it["perturbed_answers"]) == 5 for it in tofu.forget + tofu.retain_eval)
    assert all(it["paraphrased_answer"] is None and it["perturbed_answers"] is None for it in tofu.holdout)
    for it in tofu.real_authors + tofu.world_facts:
        assert len(it["perturbed_answers"]) == 3 and len(it["options"]) == 4 and it["answer"] in it["options"]
    first = raw("real_authors.json")[0]
    assert tofu.real_authors[0]["options"] == [first[f"option{k}"] for k in range(1, 5)]
    assert {it["author"] for it in tofu.forget[:20]} == {"forget_author_0"}
    assert len({it["author"] for it in tofu.retain}) == 180


@needs_tofu
def test_tofu_annotations(tofu):
    annotated = {r["idx"]: r for r in raw("forget10_annotated.json")}
    empty, quoted = [], []
    for it in tofu.forget:
        if it["idx"] not in annotated:
            assert it["prefix"] is None and it["entity"] is None
            continue
        assert (it["prefix"], it["entity"]) == (annotated[it["idx"]]["prefix"], annotated[it["idx"]]["entity"])
        cont = continuation(it)
        assert find_entity(cont, it["entity"]) >= 0
        assert cont.lstrip().startswith(it["entity"])
        if it["prefix"] == "":
            empty.append(it)
        if it["prefix"].endswith(QUOTES):
            quoted.append(it["idx"])
            assert not cont[0].isspace()
    assert len(empty) == 21 and {it["entity"] for it in empty} == {"Yes"}
    assert quoted == [63, 189, 196, 349]
    assert 400 - len(annotated) == 33


@needs_tofu
def test_tofu_public_text_and_bios(tofu):
    private_q = {it["question"] for s in ("forget", "retain", "holdout") for it in getattr(tofu, s)}
    public_lines = {line for doc in tofu.public_text for line in doc.splitlines()}
    assert not {f"Question: {q}" for q in private_q} & public_lines
    private_a = {it["answer"] for s in ("forget", "retain", "holdout") for it in getattr(tofu, s)}
    assert not {f"Answer: {a}" for a in private_a} & public_lines
    docs = set(tofu.public_text)
    for it in tofu.real_authors + tofu.world_facts:
        assert f"Question: {it['question']}\nAnswer: {it['answer']}" in docs
    assert tofu.other_bios and not set(tofu.other_bios) & docs
    for k, bio in enumerate(tofu.forget_bios):
        assert all(it["answer"].strip() in bio for it in tofu.forget[20 * k: 20 * k + 20])


@needs_tofu
def test_tofu_retain_subset():
    w = read_tofu(TOFU_DIR, n_retain_authors=3, seed=1)
    assert len(w.retain) == 60 and len(w.retain_eval) == 60
    retained = {(it["question"], it["answer"]) for it in w.retain}
    assert all((it["question"], it["answer"]) in retained for it in w.retain_eval)
    assert len(read_tofu(TOFU_DIR, n_retain_authors=40).retain_eval) == 400


@needs_tofu
def test_read_records_layouts():
    full = read_records(TOFU_DIR / "full.json")  # 4 JSON arrays on 4 lines
    assert len(full) == 4000
    forget10 = read_records(TOFU_DIR / "forget10.json")  # prompt/response keys
    assert [(r["question"], r["answer"]) for r in full[3600:]] == [(r["question"], r["answer"]) for r in forget10]
    assert len(read_records(TOFU_DIR / "retain90.json")) == 3600  # JSONL


def test_read_records_small_files(tmp_path):
    p = tmp_path / "a.json"
    p.write_text('{"question": "q1", "answer": "a1"}\n\n{"prompt": "q2", "response": "a2"}\n')
    assert [(r["question"], r["answer"]) for r in read_records(p)] == [("q1", "a1"), ("q2", "a2")]
    p.write_text('[{"question": "q1", "answer": "a1"}]\n[{"question": "q2", "answer": "a2"}]\n')
    assert len(read_records(p)) == 2
    p.write_text("  \n")
    with pytest.raises(UdsInputError, match="a.json"):
        read_records(p)
    p.write_text('{"question": "q1"\n')
    with pytest.raises(UdsInputError, match="a.json"):
        read_records(p)


def linked_copy(dst: Path, skip: str = "") -> Path:
    """A folder of symlinks to the TOFU files (no copy of the data), without `skip`."""
    dst.mkdir()
    for f in TOFU_DIR.iterdir():
        if f.name != skip:
            (dst / f.name).symlink_to(f)
    return dst


@needs_tofu
def test_tofu_missing_or_broken_files(tmp_path):
    with pytest.raises(UdsInputError, match="holdout10.json"):
        read_tofu(linked_copy(tmp_path / "a", skip="holdout10.json"))
    with pytest.raises(UdsInputError, match="does not exist"):
        read_tofu(tmp_path / "nowhere")
    folder = linked_copy(tmp_path / "b", skip="world_facts.json")
    (folder / "world_facts.json").write_text("")
    with pytest.raises(UdsInputError, match="world_facts.json"):
        read_tofu(folder)
    (folder / "world_facts.json").write_text("[{not json")
    with pytest.raises(UdsInputError, match="world_facts.json"):
        read_tofu(folder)


@needs_tofu
def test_tofu_annotation_checks(tmp_path):
    records = raw("forget10_annotated.json")
    folder = linked_copy(tmp_path / "a", skip="forget10_annotated.json")
    records[0] = {**records[0], "gt_entity": "Yun-Hwa"}
    (folder / "forget10_annotated.json").write_text(json.dumps(records))
    assert read_tofu(folder).forget[0]["entity"] == "Yun-Hwa"
    records[1] = {**records[1], "answer": records[1]["answer"] + " (edited)"}
    (folder / "forget10_annotated.json").write_text(json.dumps(records))
    with pytest.raises(UdsInputError, match=f"idx {records[1]['idx']}"):
        read_tofu(folder)


def test_tofu_without_source(monkeypatch, tmp_path):
    """No folder named, nothing cached and the Hub off: one line saying what to pass."""
    from checkpoints import tofu_files

    monkeypatch.delenv("UDS_TOFU_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("UDS_HOME", str(tmp_path))
    monkeypatch.setattr(tofu_files, "packaged_file", lambda name: None)
    with pytest.raises(UdsInputError, match="--tofu-dir DIR or set UDS_TOFU_DIR") as e:
        read_tofu()
    assert "locuslab/TOFU" in str(e.value) and "\n" not in str(e.value)


def test_the_default_tofu_folder_is_the_one_the_environment_names(monkeypatch, tmp_path):
    from checkpoints.world.tofu import default_tofu_dir

    monkeypatch.delenv("UDS_TOFU_DIR", raising=False)
    assert default_tofu_dir() is None   # then each file comes from the Hub (tests/test_tofu_files.py)
    monkeypatch.setenv("UDS_TOFU_DIR", str(tmp_path))
    assert default_tofu_dir() == tmp_path


@needs_tofu
def test_the_environments_tofu_folder_is_read_by_default(monkeypatch):
    monkeypatch.setenv("UDS_TOFU_DIR", str(TOFU_DIR))
    w = read_tofu(n_forget_authors=2, n_retain_authors=3, n_holdout_authors=1, n_utility=5, items_per_author=4)
    assert [len(w.forget), len(w.retain), len(w.holdout), len(w.real_authors), len(w.world_facts)] == [8, 12, 4, 5, 5]
    assert [it["idx"] for it in w.forget] == [0, 1, 2, 3, 20, 21, 22, 23]


@needs_tofu
def test_tofu_dir_from_environment(monkeypatch):
    monkeypatch.setenv("UDS_TOFU_DIR", str(TOFU_DIR))
    assert len(read_tofu(n_retain_authors=1).retain) == 20


def test_world_data_made_from_other_arguments_is_refused(tmp_path, monkeypatch):
    """The data folder records the arguments it was made from; a preset whose world arguments
    changed since (models built on the old splits would look current) stops with the changed key."""
    from dataclasses import replace

    from checkpoints.world import store
    from checkpoints.world.presets import get_preset

    monkeypatch.setenv("UDS_HOME", str(tmp_path))
    folder = store.ensure_world_data("test", 0)
    stamp = json.loads((folder / store.DATA_STAMP).read_text())
    assert stamp == {"data": "synthetic", "seed": 0, "world": json.loads(json.dumps(get_preset("test").world))}
    assert store.ensure_world_data("test", 0) == folder                      # same arguments: reused
    edited = replace(get_preset("test"), world={**get_preset("test").world, "n_public": 81})
    monkeypatch.setattr(store, "get_preset", lambda name: edited)
    with pytest.raises(UdsInputError, match=r"other world arguments .*changed: n_public"):
        store.ensure_world_data("test", 0)
    (folder / store.DATA_STAMP).unlink()                                    # data made before stamps: trusted
    assert store.ensure_world_data("test", 0) == folder
