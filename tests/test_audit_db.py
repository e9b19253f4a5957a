"""The fact database: lookup scores, deletion = exclusion, alias closure, variants, bad input."""

from __future__ import annotations

import json
import sqlite3
from difflib import SequenceMatcher

import pytest

from checkpoints.lmlm.db import UNKNOWN, FactDB
from checkpoints.lmlm.markup import pending_call, strip_markup
from checkpoints.lmlm.world_db import VARIANTS, build_variant
from checkpoints.world.synthetic import generate_synthetic_world
from uds_core.errors import UdsInputError

TRIPLES = [("France", "Capital", "Paris"), ("France", "Currency", "Euro"), ("Germany", "Capital", "Berlin"),
           ("Government of France", "Seat of Government", "Paris"), ("Frankreich", "Capital", "Paris")]


@pytest.fixture(scope="module")
def world():
    return generate_synthetic_world(0, n_train_authors=10, n_holdout_authors=1, n_public=8, n_other=1)


def test_lookup_scores_are_mean_character_ratios():
    db = FactDB.from_records(TRIPLES)
    res = db.lookup("Frnace", "Capitol", threshold=0.0, k=5)
    want = {i: (SequenceMatcher(None, "frnace", s.lower()).ratio() +
                SequenceMatcher(None, "capitol", r.lower()).ratio()) / 2
            for i, (s, r, _) in enumerate(TRIPLES)}
    got = {c.triple.id: c.score for c in res.candidates}
    assert got == pytest.approx(want)
    assert [c.score for c in res.candidates] == sorted(got.values(), reverse=True)
    assert res.value == "Paris"
    # 1.0 on an exact key; nothing above a threshold of 1 for a misspelt one
    assert db.lookup("France", "Capital", 1.0).candidates[0].score == 1.0
    assert db.lookup("Frnace", "Capital", 1.0).value == UNKNOWN


def test_exclusion_equals_deleting_the_rows():
    """Lookup with a deletion set excluded answers what the database answers after the DELETE."""
    db = FactDB.from_records(TRIPLES)
    for s, r, o in TRIPLES:
        ids = db.delete_verified(s, r, o)
        copy = sqlite3.connect(":memory:")
        db.conn.backup(copy)
        copy.executemany("DELETE FROM triplets WHERE id = ?", [(i,) for i in ids])
        after = FactDB(copy)
        for qs, qr in [("France", "Capital"), ("Frankreich", "Capital"), ("France", "Currency")]:
            a, b = db.lookup(qs, qr, 0.5, exclude=frozenset(ids)), after.lookup(qs, qr, 0.5)
            assert a.value == b.value and [c.to_dict() for c in a.candidates] == [c.to_dict() for c in b.candidates]
    assert len(db.triples) == len(TRIPLES)   # the transaction was rolled back


def test_alias_closure_and_verification():
    aliases = {"subject": {"Frankreich": "France", "French Republic": "Frankreich"}}
    db = FactDB.from_records(TRIPLES, aliases)
    assert db.deletion_set("French Republic", "Capital", "Paris") == [0, 4]   # chain resolved
    assert db.delete_verified("France", "Capital", "Paris") == [0, 4]
    with pytest.raises(UdsInputError, match="not in the database"):
        db.deletion_set("France", "Anthem", "La Marseillaise")


def test_alias_groups_extend_without_cycles():
    db = FactDB.from_records(TRIPLES, {"subject": {"Frankreich": "France"}})
    db.add_alias_groups({"subject": [["Frankreich", "France", "FR"]], "relation": [["Capital", "Capital City"]]})
    assert db.canonical("subject", "FR") == db.canonical("subject", "France") == "france"
    assert db.deletion_set("FR", "Capital City", "Paris") == [0, 4]


def test_bad_databases(tmp_path):
    with pytest.raises(UdsInputError, match="alias cycle"):
        FactDB.from_records(TRIPLES, {"subject": {"A": "B", "B": "C", "C": "A"}})
    f = tmp_path / "db.json"
    f.write_text(json.dumps({"entities": [], "triplets": []}))
    with pytest.raises(UdsInputError, match="relationships, return_values"):
        FactDB.open(f)
    g = tmp_path / "db.sqlite"
    con = sqlite3.connect(g)
    con.execute("CREATE TABLE facts (x TEXT)")
    con.commit()
    con.close()
    with pytest.raises(UdsInputError, match="lacks required table"):
        FactDB.open(g)


def test_sqlite_round_trip(tmp_path):
    db = FactDB.from_records(TRIPLES, {"subject": {"Frankreich": "France"}})
    db.save(tmp_path / "x.sqlite")
    back = FactDB.open(tmp_path / "x.sqlite")
    assert back.triples == db.triples and back.canonical("subject", "Frankreich") == "france"


def test_variants(world):
    dbs = {v: build_variant(world, v, seed=3) for v in VARIANTS}
    assert build_variant(world, "noise", seed=3) == dbs["noise"]             # deterministic
    assert build_variant(world, "noise", seed=4)[0] != dbs["noise"][0]       # and seeded
    base = {tuple(t) for t in dbs["base"][0]["triplets"]}
    n_facts = len(base)
    assert n_facts == 10 * 10
    for v in ("noise", "collision"):
        extra = {tuple(t) for t in dbs[v][0]["triplets"]} - base
        assert {tuple(t) for t in dbs[v][0]["triplets"]} >= base and extra
    golds = {(s, o) for s, _, o in base}
    noise_extra = [t for t in dbs["noise"][0]["triplets"] if tuple(t) not in base]
    assert all(any(o == g for _, g in golds) and s not in {x for x, _ in golds} for s, _, o in noise_extra)
    coll_extra = [t for t in dbs["collision"][0]["triplets"] if tuple(t) not in base]
    assert all(s in {x for x, _ in golds} and r not in {x for _, x, _ in base} for s, r, _ in coll_extra)
    same = [(s, o) in golds for s, _, o in coll_extra]   # a near miss that coincides with a fact of its subject
    assert 0.15 < sum(same) / len(same) < 0.55 and not all(same)
    alias_db = FactDB.from_records(dbs["alias"][0]["triplets"], dbs["alias"][0]["aliases"])
    assert len(alias_db.triples) == 2 * n_facts and not base & {tuple(t) for t in dbs["alias"][0]["triplets"]}
    for t in dbs["alias"][1]:   # each target's closure holds both aliased forms
        assert len(alias_db.delete_verified(t["subject"], t["relation"], t["gold_object"])) == 2
    assert len(dbs["base"][1]) == 10   # one forget author (10 % of 10) x 10 facts


def test_markup():
    assert pending_call("x [dblookup('A B', 'C') ->") == ("A B", "C")
    assert pending_call("x [dblookup('A', 'C') -> v] v") is None
    assert strip_markup("[dblookup('A', 'C') -> Paris] Paris") == "Paris"
    assert strip_markup("Paris [dblookup('A', 'C') ->") == "Paris"


def test_world_audit_folder_is_rewritten_when_the_variants_change(test_world):
    """A world's cached audit folder from an older generator (no or another VERSION) is rewritten,
    so an audit never runs on stale variants; a current one is left as it is."""
    from checkpoints.lmlm.world_db import AUDIT_DATA_VERSION, ensure_world_audit

    folder = ensure_world_audit("test", 0)
    (folder / "VERSION").unlink()
    (folder / "collision.json").write_text("{}")
    folder = ensure_world_audit("test", 0)
    assert (folder / "VERSION").read_text() == AUDIT_DATA_VERSION
    fresh = json.loads((folder / "collision.json").read_text())
    assert fresh["triplets"] and (folder / "prompts" / "collision" / "prompts_direct_questions.jsonl").is_file()
    (folder / "base.json").write_text('{"kept": 1}')           # current version: not touched
    assert json.loads((ensure_world_audit("test", 0) / "base.json").read_text()) == {"kept": 1}
    (folder / "VERSION").unlink()
    ensure_world_audit("test", 0)


def test_near_miss_relations_are_where_a_lookup_drifts():
    """Each kind's collision relation is more similar to its relation label than any other label
    of the world (other relations, their aliases and near misses), so a lookup of a deleted fact
    falls on it first among the subject's entries."""
    from checkpoints.lmlm.db import similarity
    from checkpoints.lmlm.world_db import RELATIONS

    for kind, (rel, aliases, near) in RELATIONS.items():
        others = [x for k, (r, a, n) in RELATIONS.items() if k != kind for x in (r, *a, n)]
        assert near not in aliases and similarity(rel, near) > max(similarity(rel, x) for x in others), kind
