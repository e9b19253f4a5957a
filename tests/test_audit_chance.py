"""The audit's chance level (uds_analyses/audit/chance.py) against numbers worked out by hand, on
plain lists and on a small hand-made database; and its committed result files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uds_analyses.audit.chance import chance_rate, chance_summary, majority_hit, prompt_chances, uniform_hit
from checkpoints.lmlm.db import FactDB
from checkpoints.lmlm.prompts import PromptRow, alias_groups
from checkpoints.lmlm.recipes import published_root
from tests.external import LMLM_SKIP
from uds_core.errors import UdsInputError

ROOT = Path(__file__).resolve().parents[1]


def test_one_relation_a_a_b():
    """Facts of one relation with values A, A, B. Each prompt's guesser knows the other two:
    A's prompts see {A, B} (a tie: half a hit each), B's sees {A, A} (answers A: a miss), so
    chance = (1/2 + 1/2 + 0) / 3 = 1/3. Counting the target itself (pool A, A, B for every prompt,
    always answering A) would give 2/3."""
    golds = [["A"], ["A"], ["B"]]
    assert chance_rate([["A", "B"], ["A", "B"], ["A", "A"]], golds) == pytest.approx(1 / 3)
    assert chance_rate([["A", "A", "B"]] * 3, golds) == pytest.approx(2 / 3)
    # uniform: A's prompts draw from {A, B} (1/2), B's from {A} (0)
    assert chance_rate([["A", "B"], ["A", "B"], ["A", "A"]], golds, uniform_hit) == pytest.approx(1 / 3)


def test_one_relation_a_a_a_b():
    """A, A, A, B: each A prompt sees {A, A, B} and answers A (hit), B's sees {A, A, A} (miss):
    majority 3/4; uniform 3 x 1/2 / 4 = 3/8 (the two differ once counts matter)."""
    pools = [["A", "A", "B"]] * 3 + [["A", "A", "A"]]
    golds = [["A"]] * 3 + [["B"]]
    assert chance_rate(pools, golds) == pytest.approx(3 / 4)
    assert chance_rate(pools, golds, uniform_hit) == pytest.approx(3 / 8)


def test_hits_use_the_audits_matching():
    # normalised text: punctuation and case do not make another value
    assert majority_hit(["Washington, D.C.", "washington d c", "Paris"], ["Washington D.C."]) == 1.0
    # an alias of the gold is a hit; a value that normalises to nothing is no answer
    assert majority_hit(["USD", "USD", "Euro"], ["US Dollar", "USD"]) == 1.0
    assert majority_hit(["USD", "USD", "Euro"], ["US Dollar"]) == 0.0
    assert majority_hit(["!!", "!!", "Paris"], ["Paris"]) == 1.0
    assert majority_hit([], ["Paris"]) == uniform_hit([], ["Paris"]) == 0.0   # nothing known, nothing guessed


def test_empty_or_mismatched_input_is_bad_input():
    with pytest.raises(UdsInputError, match="at least one prompt"):
        chance_rate([], [])
    with pytest.raises(UdsInputError, match="2 answer pools for 1 gold sets"):
        chance_rate([["A"], ["B"]], [["A"]])
    with pytest.raises(UdsInputError, match="without a gold"):
        chance_rate([["A"]], [[]])
    with pytest.raises(UdsInputError):
        chance_summary(FactDB.from_records([("X", "Capital", "Y")]), [])


# A hand-made database. Continent: Frankia is also stored as (the Franks, Located In, Europe), its
# alias twin (subject and relation aliases); Germania Europe, Asiana and Indica Asia. Currency:
# Gallia US Dollar (object alias USD on its prompt row), Bravia and Cordia USD, Dalia Euro.
# Motto: Gallia's only.
TRIPLES = [("Frankia", "Continent", "Europe"), ("the Franks", "Located In", "Europe"),
           ("Germania", "Continent", "Europe"), ("Asiana", "Continent", "Asia"), ("Indica", "Continent", "Asia"),
           ("Gallia", "Currency", "US Dollar"), ("Bravia", "Currency", "USD"), ("Cordia", "Currency", "USD"),
           ("Dalia", "Currency", "Euro"), ("Gallia", "Motto", "Carpe diem")]
ALIASES = {"subject": {"the Franks": "Frankia"}, "relation": {"Located In": "Continent"}}


def _row(i: int, s: str, r: str, o: str, object_aliases: tuple[str, ...] = ()) -> PromptRow:
    return PromptRow("direct", i, s, r, o, f"What is the {r} of {s}?", object_aliases=object_aliases)


ROWS = [_row(0, "Frankia", "Continent", "Europe"), _row(1, "Asiana", "Continent", "Asia"),
        _row(2, "Germania", "Continent", "Europe"), _row(3, "Gallia", "Currency", "US Dollar", ("USD",)),
        _row(4, "Dalia", "Currency", "Euro"), _row(5, "Gallia", "Motto", "Carpe diem")]


def _db() -> FactDB:
    db = FactDB.from_records(TRIPLES, ALIASES)
    db.add_alias_groups(alias_groups(ROWS))   # as AuditSet.open_db does
    return db


def test_hand_made_database():
    """Per prompt, (majority, uniform), worked out by hand:
    - Frankia: both of its triples are deleted (alias closure), leaving Europe, Asia, Asia -> Asia: 0;
      uniform over {Europe, Asia}: 1/2. (Had the twin survived, Europe and Asia would tie: 1/2.)
    - Asiana: Europe, Europe (twin), Europe, Asia -> Europe: 0; uniform 1/2.
    - Germania: Europe, Europe (twin), Asia, Asia -> tie: 1/2; uniform 1/2.
    - Gallia's currency: USD, USD, Euro -> USD, an alias of its gold: 1; uniform 1/2.
    - Dalia: US Dollar, USD, USD -> USD: 0; uniform over {us dollar, usd}: 0.
    - Gallia's motto: no other Motto triple: 0 and 0."""
    got = prompt_chances(_db(), ROWS)
    assert got == [(0, 0.5), (0, 0.5), (0.5, 0.5), (1, 0.5), (0, 0), (0, 0)]   # halves: exact in binary
    s = chance_summary(_db(), ROWS)
    assert s["n_prompts"] == 6
    assert s["chance"] == pytest.approx(1.5 / 6) and s["chance_uniform"] == pytest.approx(2 / 6)


def test_rates_carry_the_chance_level():
    """variant_summary and the grid's cross-state rates average the per-fact chance like every rate."""
    from uds_analyses.audit.protocol import STATES, FactResult
    from uds_analyses.audit.rates import cells, variant_summary
    from uds_analyses.audit.scoring import score_answer

    facts = []
    for i, (style, ch) in enumerate((("direct", 0.5), ("direct", 0.0), ("cloze", 1.0))):
        f = FactResult("base", style, i, "S", "R", "o", [i], chance=ch, chance_uniform=ch / 2)
        f.answers = dict.fromkeys(STATES, "x")
        f.scores = {st: score_answer("x", ["o"]) for st in STATES}
        facts.append(f)
    v = variant_summary(facts)["base"]
    assert (v["chance"], v["chance_uniform"]) == pytest.approx((0.5, 0.25))
    direct = [c for c in cells(facts) if c["style"] == "direct"]
    assert len(direct) == 3 and all(c["chance"] == pytest.approx(0.25) for c in direct)
    assert facts[0].row()["chance"] == 0.5


def test_attribution_figure_with_chance(tmp_path):
    from uds_analyses.audit.report import plot_attribution

    parts = {"base": {"parametric": 0.1, "near_miss_evidence": 0.0, "other_retrieval": 0.0}}
    plot_attribution(tmp_path / "a.png", parts, "t", {"base": 0.4})
    assert (tmp_path / "a.png").stat().st_size > 0


# -- committed result files ---------------------------------------------------------------------

def test_leaky_chance_file_is_the_rebuilt_worlds():
    """results/audit/leaky_test/chance.json is what `audit_leaky.py --chance-only` computes (no model),
    and the committed runs audited databases of the same variants and prompt counts."""
    from experiments.audit_leaky import check_against_runs, world_chance

    folder = ROOT / "results/audit/leaky_test"
    committed = json.loads((folder / "chance.json").read_text())
    assert world_chance("test") == committed
    check_against_runs(committed, folder)


@pytest.mark.skipif(not (published_root() / "published_outputs").is_dir(), reason=LMLM_SKIP)
def test_published_chance_is_the_shared_datas():
    from uds_analyses.audit.published import published_cells
    from experiments.audit_published_claims import chance_cells

    data = json.loads((ROOT / "results/audit/published_claims.json").read_text())
    pub = published_root() / "published_outputs"
    cells = published_cells(pub / "per_state_metrics.csv", pub / "cross_state_metrics.csv")
    assert data["cells"] == cells
    assert chance_cells(published_root(), cells) == data["chance"]
