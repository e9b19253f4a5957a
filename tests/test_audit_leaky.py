"""The leaky LMLM: its recipe records a seeded subset of the target facts, its data is
the LMLM's plus plain QA of exactly those facts, and (slow) the audit finds the leak there and
nowhere the weights were not taught it."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from statistics import fmean

import pytest

from checkpoints.catalogue import find_recipe
from checkpoints.lmlm import recipes as lmlm_recipes_mod
from checkpoints.lmlm.recipes import leaked_targets
from checkpoints.world.recipe_digest import recipe_digest
from checkpoints.world.presets import get_preset
from uds_core.chat import IGNORE
from uds_core.errors import UdsInputError

# forget authors x 10 fact kinds: test has 30 train authors x forget fraction 0.1 = 3 forget
# authors, small 100 x 0.1 = 10 (presets.py)
N_TARGETS = {"test": 30, "small": 100}


@pytest.mark.parametrize("preset", ["test", "small"])
def test_recipe_records_a_seeded_half_of_the_targets(preset):
    p = get_preset(preset)
    leaky, lmlm = find_recipe(p, "lmlm_leaky"), find_recipe(p, "lmlm")
    hp = leaky.hparams
    assert hp["n_targets"] == N_TARGETS[preset]
    assert len(hp["leaked"]) == N_TARGETS[preset] // 2 == len(set(hp["leaked"]))
    assert hp["leaked"] == sorted(hp["leaked"]) and set(hp["leaked"]) <= set(range(N_TARGETS[preset]))
    assert leaked_targets(N_TARGETS[preset], 0.5, hp["leak_seed"]) == hp["leaked"]      # deterministic
    assert leaked_targets(N_TARGETS[preset], 0.5, hp["leak_seed"] + 1) != hp["leaked"]  # and seeded
    # the same LMLM data settings and training as `lmlm`, plus the leak's own keys
    assert {k: v for k, v in hp.items() if k in lmlm.hparams} == lmlm.hparams and leaky.train == lmlm.train
    assert "leaked" not in lmlm.hparams and leaky.parent is None
    other = sorted(set(range(N_TARGETS[preset])) - set(hp["leaked"]))   # the complementary half
    swapped = replace(leaky, hparams={**hp, "leaked": other})
    assert recipe_digest(p, swapped, seed=0) != recipe_digest(p, leaky, seed=0)


@pytest.fixture(scope="module")
def ctx():
    from checkpoints.world.store import BuildContext

    return BuildContext(get_preset("test"), 0, False, load=lambda name: None)


def test_leaky_data_is_lmlm_data_plus_plain_qa_of_the_leaked_facts(ctx, monkeypatch):
    from checkpoints.lmlm.world_db import build_variant

    p = get_preset("test")
    leaky, lmlm = find_recipe(p, "lmlm_leaky"), find_recipe(p, "lmlm")
    got = {}
    monkeypatch.setattr(lmlm_recipes_mod, "_trained", lambda c, r, data: got.setdefault(r.name, data))
    lmlm_recipes_mod.train_lmlm(ctx, lmlm)
    lmlm_recipes_mod.train_lmlm_leaky(ctx, leaky)
    base, extra = got["lmlm_leaky"][:len(got["lmlm"])], got["lmlm_leaky"][len(got["lmlm"]):]
    assert base == got["lmlm"]   # same prompts, same seeded rotation
    # 15 leaked facts x 2 styles (direct, cloze) x leak_copies 2 plain-QA examples
    assert len(extra) == 15 * 2 * 2 and leaky.hparams["leak_copies"] == 2
    answers = [ctx.tok.decode([t for t, lab in zip(e["input_ids"], e["labels"]) if lab != IGNORE],
                              skip_special_tokens=True).strip() for e in extra]
    # the audit's own target rows (fact_id = position) say which objects these must be
    _, targets = build_variant(ctx.world, "base")
    want = sorted(targets[t]["gold_object"] for t in leaky.hparams["leaked"]) * 4
    assert sorted(answers) == sorted(want)
    assert not any("dblookup" in ctx.tok.decode(e["input_ids"]) for e in extra)


def test_a_world_with_other_targets_fails_loudly(ctx):
    leaky = find_recipe(get_preset("test"), "lmlm_leaky")
    bad = replace(leaky, hparams={**leaky.hparams, "n_targets": 31})
    with pytest.raises(UdsInputError, match="target facts"):
        lmlm_recipes_mod._leaked_prompts(ctx, bad)


# ---- slow: build the three models of the test world and audit them ----

MODELS = ("lmlm_leaky", "lmlm", "lmlm_parametric")
STYLES = "direct,cloze"   # the styles the test preset trains on: where a leak can show


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _aliases(folder) -> dict[tuple[str, int], tuple[set[str], set[str]]]:
    """(variant, fact_id) -> (subject forms, relation forms) from the world's direct prompt rows."""
    out = {}
    for f in folder.glob("prompts/*/prompts_direct_questions.jsonl"):
        for r in _jsonl(f):
            out[(f.parent.name, r["fact_id"])] = ({r["subject"], *r["subject_aliases"]},
                                                  {r["relation"], *r["relation_aliases"]})
    return out


def _gap(per_fact: dict[int, float], subset: set[int]) -> float:
    """Mean per-fact L on `subset` minus that on the other facts."""
    inside = fmean(v for f, v in per_fact.items() if f in subset)
    return inside - fmean(v for f, v in per_fact.items() if f not in subset)


@pytest.fixture(scope="module")
def audits(tmp_path_factory):
    from checkpoints.lmlm.world_db import ensure_world_audit
    from checkpoints.world.build import ensure_model
    from uds.cli import main

    out = {}
    for m in MODELS:
        ensure_model("test", 0, m, progress=False)
        d = tmp_path_factory.mktemp(m)
        assert main(["audit", "--model", f"tiny:test/{m}", "--db", "tiny:test", "--styles", STYLES,
                     "--out", str(d)]) == 0
        out[m] = (_jsonl(d / "facts.jsonl"), _jsonl(d / "traces.jsonl"))
    return out, _aliases(ensure_world_audit("test"))


@pytest.mark.slow
def test_leak_sits_on_the_leaked_subset(audits):
    runs, _ = audits
    leaked = set(find_recipe(get_preset("test"), "lmlm_leaky").hparams["leaked"])
    facts, _ = runs["lmlm_leaky"]
    per_fact = {f: fmean(r["L"] for r in facts if r["fact_id"] == f) for f in range(30)}
    gap = _gap(per_fact, leaked)
    # margin: the gap must be one that a random half of the 30 facts reaches with probability
    # <= 1 %; if the leak were spread regardless of the subset, every half would be alike
    rng = random.Random(0)
    null = [_gap(per_fact, set(rng.sample(range(30), 15))) for _ in range(2000)]
    p = (1 + sum(g >= gap for g in null)) / (1 + len(null))
    assert gap > 0 and p <= 0.01, (gap, p)
    assert sum(r["L"] for r in runs["lmlm"][0]) == 0   # the lookup-only LMLM: no leak


@pytest.mark.slow
def test_l_r_and_artefact_follow_spec_3_3(audits):
    runs, aliases = audits
    for m, (facts, traces) in runs.items():
        cands: dict[tuple[str, str, int], list[list[str]]] = {}
        for t in traces:
            if t["state"] == "DEL-ON":
                cands.setdefault((t["variant"], t["style"], t["fact_id"]), []).extend(
                    c["triple"] for c in t["candidates"])
        for r in facts:
            subj, rel = aliases[(r["variant"], r["fact_id"])]
            on, off = r["em_DEL-ON"] == 1, r["em_DEL-OFF"] == 1
            # retained evidence for the deleted fact: a candidate alias-equivalent to the target
            evidence = any(s in subj and rr in rel and o.casefold() == r["gold"].casefold()
                           for s, rr, o in cands.get((r["variant"], r["style"], r["fact_id"]), []))
            assert (r["L"], r["R"], r["artefact"]) == (int(off), int(on and not off), int(on and not evidence)), (m, r)
        n_art, n_r = sum(r["artefact"] for r in facts), sum(r["R"] for r in facts)
        both = sum(r["em_DEL-ON"] == 1 and r["em_DEL-OFF"] == 1 for r in facts)
        assert n_art - n_r == both   # verified deletion: artefact = R + (DEL-ON and DEL-OFF correct)
    leaky_facts, leaky_traces = runs["lmlm_leaky"]
    asked = {(t["variant"], t["style"], t["fact_id"]) for t in leaky_traces if t["state"] == "DEL-ON"}
    leaked_and_said = [r for r in leaky_facts if r["L"] and r["em_DEL-ON"] == 1]
    # the leak counts as artefact, not R; most of it is answered with no lookup at all
    assert leaked_and_said and all(r["artefact"] and not r["R"] for r in leaked_and_said)
    no_lookup = sum((r["variant"], r["style"], r["fact_id"]) not in asked for r in leaked_and_said)
    assert no_lookup > len(leaked_and_said) / 2
