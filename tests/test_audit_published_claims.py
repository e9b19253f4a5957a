"""docs/audit.md's statements about the published audit against their result file and the CSVs."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from uds_analyses.audit.published import claims_markdown, published_cells, published_claims
from checkpoints.lmlm.recipes import published_root
from tests.external import LMLM_SKIP

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "results" / "audit" / "published_claims.json"
DOC = ROOT / "docs" / "audit.md"
CROSS_COLS = "prompt_file,database_path,count,paired_count,parametric_leakage,retrieval_mediated_correctness," \
             "retrieval_artifact_rate".split(",")


def _write(tmp: Path, cells: list[tuple[str, str, int, int, int, int, int]]) -> tuple[Path, Path]:
    """cells: (domain, variant, n, L, R, artefact, DEL-ON EM count) -> the two published CSVs."""
    per, cross = tmp / "per.csv", tmp / "cross.csv"
    with open(per, "w", newline="") as fp, open(cross, "w", newline="") as fc:
        wp = csv.writer(fp)
        wp.writerow(["prompt_file", "database_path", "state", "count", "exact_match"])
        wc = csv.writer(fc)
        wc.writerow(CROSS_COLS)
        for d, v, n, L, R, A, on in cells:
            pf, db = f"data/custom_databases/{d}/prompts/{v}/prompts_cloze.jsonl", f"data/custom_databases/{d}/{v}.json"
            for st, em in (("FULL", 1.0), ("DEL-ON", on / n), ("DEL-OFF", L / n)):
                wp.writerow([pf, db, st, n, em])
            wc.writerow([pf, db, 3 * n, n, L / n, R / n, A / n])
    return per, cross


def test_claims_on_hand_made_cells(tmp_path):
    # a: 1 leak in 50 (0.02), artefact = R; b: 2 leaks in 200 (0.01), 1 leaky fact also DEL-ON
    # correct -> artefact 6 = R 5 + 1; c: 0 of 100. Per variant (one cell each) = per cell.
    per, cross = _write(tmp_path, [("x", "base", 50, 1, 4, 4, 4), ("x", "noise", 200, 2, 5, 6, 6),
                                   ("y", "base", 100, 0, 0, 0, 0)])
    c = published_claims(published_cells(per, cross))
    assert c["n_cells"] == 3 and c["cells_with_leakage"] == 2
    assert c["max_leakage_cell"] == 0.02 and c["max_leakage_cells"] == ["x/base/cloze"]
    assert c["max_leakage_variant"] == 0.02 and c["artefact_eq_del_on_em"] == 3
    assert [(r["cell"], r["R"], r["artefact"]) for r in c["artefact_ne_R"]] == [("x/noise/cloze", 5, 6)]


def test_two_styles_pool_by_count(tmp_path):
    # one variant, cells of 100 (2 leaks) and 300 (0 leaks): per cell max 0.02, pooled 2/400 = 0.005
    per, cross = _write(tmp_path, [("x", "base", 100, 2, 0, 0, 0)])
    rows = list(csv.reader(open(cross)))
    rows.append([rows[1][0].replace("cloze", "direct_questions"), rows[1][1], 900, 300, 0.0, 0.0, 0.0])
    csv.writer(open(cross, "w", newline="")).writerows(rows)
    prow = list(csv.reader(open(per)))
    prow += [[rows[2][0], rows[2][1], st, 300, 0.0] for st in ("FULL", "DEL-ON", "DEL-OFF")]
    csv.writer(open(per, "w", newline="")).writerows(prow)
    c = published_claims(published_cells(per, cross))
    assert (c["max_leakage_cell"], c["max_leakage_variant"]) == (0.02, 0.005)


def _doc_block() -> str:
    text = DOC.read_text()
    m = re.search(r"<!-- published-claims:begin[^\n]*-->\n(.*?)<!-- published-claims:end -->", text, re.S)
    assert m, "docs/audit.md lacks the published-claims block"
    return m.group(1)


def test_doc_block_is_the_committed_file():
    claims = json.loads(CLAIMS.read_text())["claims"]
    assert _doc_block() == claims_markdown(claims)


@pytest.mark.skipif(not (published_root() / "published_outputs").is_dir(), reason=LMLM_SKIP)
def test_committed_file_and_doc_numbers_match_the_csvs():
    pub = published_root() / "published_outputs"
    fresh = published_claims(published_cells(pub / "per_state_metrics.csv", pub / "cross_state_metrics.csv"))
    assert json.loads(CLAIMS.read_text())["claims"] == fresh
    # a second reading, straight from the CSV with floats, of the numbers the doc's sentences give
    rows = list(csv.DictReader(open(pub / "cross_state_metrics.csv")))
    max_leak = max(float(r["parametric_leakage"]) for r in rows)
    ne = sum(abs(float(r["retrieval_artifact_rate"]) - float(r["retrieval_mediated_correctness"])) > 1e-9 for r in rows)
    block = _doc_block()
    assert float(re.search(r"published leakage reaches ([0-9.]+)", block).group(1)) == pytest.approx(max_leak, abs=5e-5)
    eq, total, neq = map(int, re.search(r"equals R in (\d+) of (\d+) cells, not in (\d+)", block).groups())
    assert (eq, total, neq) == (len(rows) - ne, len(rows), ne)
