"""`uds attack` and its attacks on the `test` world.

Identity checks: every attack at zero strength (no relearning epoch, the direction scaled by 0, no
few-shot example, no role-play prefix) answers exactly as the plain question, and the plain share
is the knowledge check's own number (`meta_eval.knowledge.knowledge_check`, a separate code path);
the ablation of full against itself finds no direction. Orderings derivable from how the world
was trained: full (trained on the forget QA) answers more forget questions than retain (never
trained on them). Determinism: the same seed, the same hits; another seed, other halves. A
quantisation without a kernel is reported for that attack and the others go on; bad input is one
line and exit 2. The written files are re-read with plain json and the shares recomputed from the
per-question answers with a word-level match written here.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from meta_eval.attacks import ATTACKS
from meta_eval.attacks.base import AttackSettings, Target, attack_data, by_halves, split_halves, Answered
from meta_eval.attacks.run import loader, run_attacks

FULL, RETAIN = "tiny:test/full", "tiny:test/retain"


@pytest.fixture(scope="module")
def world_data(test_world):
    from checkpoints.specs import load_tokenizer
    from checkpoints.world.store import load_world

    world = load_world("test", 0)
    return attack_data(world.forget, world.retain, load_tokenizer(FULL), seed=0)


@pytest.fixture(scope="module")
def settings():
    return AttackSettings(batch_size=16, max_new_tokens=24, forms=("chat", "raw"))


def target(spec: str) -> Target:
    return Target(spec, FULL, loader("cpu"))


@pytest.fixture(scope="module")
def plain_full(world_data, settings):
    return ATTACKS["plain"].answers(target(FULL), world_data, settings).texts


def test_halves_are_disjoint_cover_everything_and_follow_the_seed():
    a, b = split_halves(11, 3)
    assert len(a) == 5 and len(b) == 6 and set(a) | set(b) == set(range(11)) and not set(a) & set(b)
    assert split_halves(11, 3) == (a, b) and split_halves(11, 4) != (a, b)


def test_by_halves_answers_each_item_once_from_the_other_half(world_data):
    seen = []

    def answer(fit, held):
        seen.append((fit, held))
        return Answered([f"item {i}" for i in held], {"fit": len(fit)})
    out = by_halves(world_data, answer)
    a, b = world_data.halves
    assert seen == [(a, b), (b, a)]
    assert out.texts == [f"item {i}" for i in range(len(world_data.items))]


def test_plain_is_the_knowledge_check(world_data, settings, plain_full):
    from checkpoints.specs import load_model
    from meta_eval.knowledge import knowledge_check

    check = knowledge_check(load_model(FULL), world_data.tok, list(world_data.items), max_new_tokens=24, batch_size=16)
    hits = [_hit(a, e) for a, e in zip(plain_full, world_data.entities)]
    assert sum(hits) / len(hits) == pytest.approx(check["forget_questions"], abs=0)
    assert check["n_forget_questions"] == len(world_data.items)


@pytest.mark.parametrize("name,zero", [("relearn", {"relearn_epochs": 0}), ("ablate", {"ablate_scale": 0.0}),
                                       ("fewshot", {"fewshot_k": 0}), ("roleplay", {"roleplay": ""})])
def test_every_attack_at_zero_strength_is_the_plain_question(name, zero, world_data, settings):
    plain = ATTACKS["plain"].answers(target(RETAIN), world_data, settings).texts
    assert ATTACKS[name].answers(target(RETAIN), world_data, replace(settings, **zero)).texts == plain


def test_ablating_full_against_itself_finds_no_direction(world_data, settings, plain_full):
    out = ATTACKS["ablate"].answers(target(FULL), world_data, settings)
    assert out.texts == plain_full
    assert [h["site"] for h in out.detail["halves"]] == [None, None]


def test_full_knows_more_than_retain_under_the_plain_question(world_data, settings):
    out = {spec: run_attacks(target(spec), world_data, ["plain"], settings)["plain"].share for spec in (FULL, RETAIN)}
    assert out[FULL] > out[RETAIN] + 0.3


def test_relearning_is_deterministic_and_seeded(world_data, settings):
    first = run_attacks(target(RETAIN), world_data, ["relearn"], settings)["relearn"]
    again = run_attacks(target(RETAIN), world_data, ["relearn"], settings)["relearn"]
    assert first.hits == again.hits and first.answers == again.answers and first.share == again.share
    assert [h["steps"] for h in first.detail["halves"]] == [
        settings.relearn_epochs * -(-len(half) * len(settings.forms) // settings.relearn_batch)
        for half in world_data.halves]
    other = attack_data(list(world_data.items), list(world_data.others), world_data.tok, seed=1)
    assert other.halves != world_data.halves


def test_quantised_attacks_run_on_the_cpu(world_data, settings):
    out = run_attacks(target(FULL), world_data, ["quant_int8", "quant_fp4"], settings)
    for o in out.values():
        assert o.error is None and 0.0 <= o.share <= 1.0 and len(o.hits) == len(world_data.items)


def test_a_missing_kernel_is_reported_and_the_other_attacks_go_on(world_data, settings, monkeypatch):
    import meta_eval.attacks.quantise as q

    def no_kernel(self, target, s):
        raise RuntimeError("bitsandbytes: no kernel for int8 matmul on this device")
    monkeypatch.setattr(q.Quantised, "load", no_kernel)
    said = []
    out = run_attacks(target(RETAIN), world_data, ["quant_int8", "plain"], settings, log=said.append)
    assert out["quant_int8"].unavailable and out["quant_int8"].share is None
    assert "no kernel" in out["quant_int8"].error and len(said) == 1 and "quant_int8" in said[0]
    assert out["plain"].share is not None and out["plain"].error is None


def _hit(answer: str, entity: str) -> bool:
    """A word-level match written here: the entity's words, lower-cased without punctuation, as
    consecutive words of the answer."""
    words = lambda t: re.findall(r"\w+", t.lower())  # noqa: E731
    a, e = words(answer), words(entity)
    return any(a[i:i + len(e)] == e for i in range(len(a) - len(e) + 1)) if e else False


def test_uds_attack_writes_its_files_and_the_shares_come_back_from_the_answers(uds, tmp_path, test_world):
    out = tmp_path / "attack"
    r = uds("attack", "--model", FULL, "--attacks", "plain,fewshot", "--out", str(out), "--batch-size", "16",
            "--max-new-tokens", "24")
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "attack.json").read_text())
    rows = [json.loads(line) for line in (out / "hits.jsonl").read_text().splitlines()]
    assert doc["retain"] == RETAIN and list(doc["attacks"]) == ["plain", "fewshot"]
    for name, row in doc["attacks"].items():
        for side in ("model", "retain"):
            mine = [x for x in rows if x["attack"] == name and x["model"] == side]
            assert len(mine) == doc["n_questions"]
            assert row[side] == pytest.approx(sum(_hit(x["answer"], x["entity"]) for x in mine) / len(mine), abs=0)
        assert row["above_retain"] == pytest.approx(row["model"] - row["retain"])
    assert (out / "attack.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("args,says", [
    (["--model", FULL, "--attacks", "plain,nope"], "unknown attack nope"),
    (["--attacks", "plain"], "exactly one of --model"),
    (["--model", FULL, "--batch-size", "0"], "--batch-size must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(uds, args, says):
    r = uds("attack", *args)
    assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_out_that_is_a_file_is_refused_before_any_model_loads(uds, tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    r = uds("attack", "--model", "tiny:test/no_such_model", "--out", str(f))
    assert r.returncode == 2 and "is a file" in r.stderr and f.read_text() == "x"
