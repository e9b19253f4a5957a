"""`uds audit` end to end on a small random model: output files, the input database left
byte-identical, and bad input as one line with exit status 2."""

from __future__ import annotations

import hashlib
import json

import pytest

from checkpoints.lmlm.db import FactDB

TRIPLES = [["Norvik", "Capital", "Ostmere"], ["Norvik", "Currency", "Gold Crown"],
           ["Tasseldorn", "Capital", "Varnhold"], ["Tasseldorn Republic", "Capital", "Varnhold"]]




@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """A randomly initialised one-layer Llama with the test world's tokenizer."""
    from checkpoints.world.store import ensure_tokenizer
    from tests.audit_fixtures import random_llama

    tok = ensure_tokenizer("test", 0)
    folder = tmp_path_factory.mktemp("model")
    random_llama(tok).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def _write_set(folder, triplets=TRIPLES, rows=None, aliases=None, name="base"):
    db = {"entities": sorted({t[0] for t in triplets}), "relationships": sorted({t[1] for t in triplets}),
          "return_values": sorted({t[2] for t in triplets}), "triplets": triplets}
    if aliases:
        db["aliases"] = aliases
    (folder / f"{name}.json").write_text(json.dumps(db))
    rows = rows if rows is not None else [
        {"prompt_id": i, "fact_id": i, "subject": s, "relation": r, "gold_object": o,
         "prompt_text": f"What is the {r.lower()} of {s}?"} for i, (s, r, o) in enumerate(triplets[:3])]
    p = folder / "prompts" / name
    p.mkdir(parents=True, exist_ok=True)
    (p / "prompts_direct_questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder / f"{name}.json"


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_audit_writes_files_and_leaves_databases_unchanged(uds, tiny_model, tmp_path):
    db_json = _write_set(tmp_path)
    db_sql = tmp_path / "base.sqlite"
    FactDB.open(db_json).save(db_sql)
    before = {p: _digest(p) for p in (db_json, db_sql)}
    for db in (db_json, db_sql):
        out = tmp_path / f"out_{db.suffix[1:]}"
        proc = uds("audit", "--model", tiny_model, "--db", str(db), "--prompts", str(tmp_path / "prompts"),
                   "--styles", "direct", "--max-new-tokens", "6", "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        summary = json.loads((out / "summary.json").read_text())
        v = summary["variants"]["base"]
        assert {"leakage", "retrieval_mediated", "artifact_rate", "full_em", "n_facts"} <= set(v)
        assert v["n_facts"] == 3 and len(summary["cells"]) == 3   # one style x three states
        lines = (out / "grid.csv").read_text().splitlines()
        assert len(lines) == 4 and lines[0].startswith("variant,style,state,count,exact_match")
        assert (out / "attribution.png").stat().st_size > 0 and (out / "traces.jsonl").is_file()
    assert {p: _digest(p) for p in before} == before


def _one_line_error(proc, needle: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr, proc.stderr


def test_bad_inputs(uds, tiny_model, tmp_path):
    args = ("--model", tiny_model, "--styles", "direct")
    bad_keys = tmp_path / "k"
    bad_keys.mkdir()
    db = _write_set(bad_keys)
    db.write_text(json.dumps({"triplets": TRIPLES}))
    _one_line_error(uds("audit", "--db", str(db), *args), "lacks required key(s) entities")

    missing = tmp_path / "m"
    missing.mkdir()
    db = _write_set(missing, rows=[{"subject": "Norvik", "relation": "Anthem", "gold_object": "Hymn",
                                    "prompt_text": "What is the anthem of Norvik?"}])
    _one_line_error(uds("audit", "--db", str(db), *args), "is not in the database")

    cycle = tmp_path / "c"
    cycle.mkdir()
    db = _write_set(cycle, aliases={"subject": {"Norvik": "Norvia", "Norvia": "Norvik"}})
    _one_line_error(uds("audit", "--db", str(db), *args), "alias cycle")

    nogold = tmp_path / "g"
    nogold.mkdir()
    db = _write_set(nogold, rows=[{"subject": "Norvik", "relation": "Capital", "prompt_text": "Capital of Norvik?"}])
    _one_line_error(uds("audit", "--db", str(db), *args), "without gold_object")

    import sqlite3
    empty = tmp_path / "e.sqlite"
    sqlite3.connect(empty).execute("CREATE TABLE other (x)").connection.commit()
    _one_line_error(uds("audit", "--db", str(empty), "--prompts", str(cycle / "prompts" / "base"), *args),
                    "lacks required table")
    _one_line_error(uds("audit", "--db", str(db), "--model", tiny_model, "--styles", "haiku"), "unknown prompt style")
    _one_line_error(uds("audit", "--db", str(db)), "--model is required")
    import torch

    if not torch.cuda.is_available():   # asking for a GPU that is not there is bad input
        (tmp_path / "ok").mkdir()
        ok = _write_set(tmp_path / "ok")
        _one_line_error(uds("audit", "--db", str(ok), *args, "--device", "cuda"), "no CUDA device")
