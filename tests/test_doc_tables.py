"""Every generated table of docs/probe.md, audit.md and mem_bits.md against its committed result file.

Two readings: the block must equal what its file renders (`analyses.doc_tables`), and, independently
of the renderers, the numbers in the doc's table rows must equal the file's values read here with
csv / json. A copy with one number changed, in the doc or in the file, must be reported stale.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from analyses.doc_tables.blocks import Block, doc_body, rendered, stale, write
from analyses.doc_tables.markdown import table
from analyses.doc_tables.registry import BLOCKS
from core.errors import UdsInputError

ROOT = Path(__file__).resolve().parents[1]
BY_NAME = {b.name: b for b in BLOCKS}


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_doc_block_is_what_its_file_renders(block):
    assert doc_body(block, ROOT) == rendered(block, ROOT), f"run `{block.command}` ({block.doc}, {block.name})"


def test_names_unique_and_docs_covered():
    assert len({(b.doc, b.name) for b in BLOCKS}) == len(BLOCKS)
    assert {b.doc for b in BLOCKS} == {"docs/probe.md", "docs/audit.md", "docs/mem_bits.md"}


def _rows_all(name: str) -> list[list[str]]:
    """The cells of the doc's table rows in a block (header and separator left out)."""
    lines = [ln for ln in doc_body(BY_NAME[name], ROOT).splitlines() if ln.startswith("| ")][1:]
    return [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in lines]


def _rows(name: str) -> dict[str, list[str]]:
    """First cell -> cells, of the doc's table rows in a block."""
    return {c[0]: c for c in _rows_all(name)}


def _num(cell: str) -> float:
    return float(cell.replace(",", "").replace("*", ""))


def test_capacity_default_numbers_from_the_csv():
    rows = list(csv.DictReader(open(ROOT / "docs/mem_bits/capacity_default_runs.csv")))
    doc = _rows("capacity-default")
    for r in rows:
        bits = re.search(rf"(?:^|, ){int(r['n']):,}: \**([\d,]+)", doc[r["size"]][2]).group(1)
        assert int(bits.replace(",", "")) == round(float(r["mem_bits"]))
        # capacity = the size's largest memorised bits over N, here taken from the runs themselves
        cap = max(float(s["mem_bits"]) for s in rows if s["size"] == r["size"])
        assert _num(doc[r["size"]][3]) == round(cap)
        assert _num(doc[r["size"]][4]) == pytest.approx(cap / int(r["params"]), abs=5e-3)


def test_capacity_quick_numbers_from_the_csv():
    doc = _rows_all("capacity-quick")
    rows = list(csv.DictReader(open(ROOT / "docs/mem_bits/capacity_quick_runs.csv")))
    assert len(doc) == len(rows)
    for cells, r in zip(doc, rows):
        m = min(int(r["n"]), 512)     # members: at most 512, against 512 fresh sequences
        p = m / (m + 512)
        assert (cells[0], _num(cells[2])) == (r["size"], int(r["n"]))
        assert _num(cells[3]) == round(float(r["mem_bits"]))
        assert _num(cells[6]) == pytest.approx(float(r["mia_f1"]), abs=5e-4)
        assert _num(cells[7]) == pytest.approx(2 * p / (1 + p), abs=5e-4)


@pytest.mark.parametrize("name,path", [("mem-bits-sanity-small", "docs/mem_bits/sanity_small.json"),
                                       ("mem-bits-sanity-test", "docs/mem_bits/sanity_test.json")])
def test_sanity_numbers_from_the_json(name, path):
    d = json.loads((ROOT / path).read_text())
    doc = _rows(name)
    models = {k.rsplit("/", 1)[-1]: v for k, v in d["rows"].items() if not k.startswith("interp:")}
    assert set(models) <= set(doc)
    for n, v in models.items():
        for col, key in ((1, "mem_bits"), (2, "mem_bits_per_token"), (3, "mem_bits_erased")):
            assert _num(doc[n][col]) == pytest.approx(v[key], rel=1e-3, abs=1e-9)
    interp = next(c for k, c in doc.items() if k.startswith("interpolation"))
    assert [float(x) for x in interp[1].split(", ")] == pytest.approx(d["interpolation_mem_bits"], rel=1e-3)


def test_signed_numbers_from_the_metrics_files():
    doc = _rows("mem-bits-signed-test")
    for f in (ROOT / "docs/mem_bits/signed_test").glob("*.json"):
        d = json.loads(f.read_text())
        lo, hi = d["info"]["mem_bits_signed"]["ci95"]
        cells = doc[f.stem]
        assert _num(cells[2]) == pytest.approx(d["metrics"]["mem_bits_signed"], abs=5e-3)
        assert [float(x) for x in cells[3].strip("[]").split(", ")] == pytest.approx([lo, hi], abs=5e-3)
        assert cells[4].startswith("yes") == (lo <= 0 <= hi)


def test_uds_link_numbers_from_the_summary():
    doc = _rows("audit-uds-link")
    models = json.loads((ROOT / "docs/audit_uds_link/summary.json").read_text())["models"]
    assert set(doc) == set(models)
    for n, m in models.items():
        got = [_num(c) for c in doc[n][1:5]]
        assert got == pytest.approx([m["del_off_correct"], m["uds"], m["mem_bits"], m["hidden"]], abs=5e-3)


def test_meta_eval_numbers_from_the_json():
    d = json.loads((ROOT / "docs/mem_bits/meta_eval_test.json").read_text())
    doc = _rows("mem-bits-meta-eval-test")
    for key, f in d["faithfulness"].items():
        q, r, overall = (float(x) for x in doc[key][4].split(" (")[0].split(" / "))
        assert _num(doc[key][1]) == pytest.approx(f["auc_roc"], abs=5e-3)
        assert (q, r, overall) == pytest.approx((d["robustness"][key]["quantization"],
                                                 d["robustness"][key]["relearning"], d["overall"][key]), abs=5e-4)


def test_probe_ladder_numbers_from_the_json():
    d = json.loads((ROOT / "docs/probe/ladder_test.json").read_text())["summary"]
    doc = _rows("probe-ladder-test")
    for spec, m in d["models"].items():
        cells = doc[spec.rsplit("/", 1)[-1]]
        rates = [m["levels"][lv]["verbatim_rate"] for lv in ("weak", "medium", "strong", "prefix")]
        assert [_num(c) for c in cells[1:5]] == pytest.approx(rates, abs=5e-3)
        assert _num(cells[6]) == pytest.approx(m["levels"]["prefix"]["semantic_acc"], abs=5e-3)


def _copy(tmp: Path, blocks: list[Block]) -> None:
    for b in blocks:
        for rel in (b.doc, b.source):
            src, dst = ROOT / rel, tmp / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy(src, dst)


def test_a_changed_number_in_the_doc_is_caught_and_rewritten(tmp_path):
    _copy(tmp_path, BLOCKS)
    doc = tmp_path / "docs/mem_bits.md"
    doc.write_text(doc.read_text().replace("| 18,978 | **3.04** |", "| 18,978 | **3.05** |"))
    assert [b.name for b in stale(BLOCKS, tmp_path)] == ["capacity-default"]
    assert [b.name for b in write(BLOCKS, tmp_path)] == ["capacity-default"]
    assert stale(BLOCKS, tmp_path) == [] and doc.read_text() == (ROOT / "docs/mem_bits.md").read_text()


def test_a_changed_number_in_the_file_is_caught(tmp_path):
    _copy(tmp_path, BLOCKS)
    f = tmp_path / "docs/audit_uds_link/summary.json"
    d = json.loads(f.read_text())
    d["models"]["retain"]["del_off_correct"] = 0.03
    f.write_text(json.dumps(d))
    assert [b.name for b in stale(BLOCKS, tmp_path)] == ["audit-uds-link"]


def test_check_command_exit_codes(tmp_path):
    from benchmarks.doc_tables import main
    _copy(tmp_path, BLOCKS)
    assert main(["--check", "--root", str(tmp_path)]) == 0
    doc = tmp_path / "docs/probe.md"
    doc.write_text(doc.read_text().replace("| full | 0.00 | 0.60 |", "| full | 0.00 | 0.63 |"))
    assert main(["--check", "--root", str(tmp_path)]) == 1
    doc.write_text(doc.read_text().replace("<!-- probe-ladder-test:end -->", ""))
    assert main(["--check", "--root", str(tmp_path)]) == 2


def test_missing_markers_are_bad_input(tmp_path):
    (tmp_path / "d.md").write_text("no markers here\n")
    (tmp_path / "f.json").write_text("{}")
    b = Block("d.md", "x", "f.json", lambda p: "")
    with pytest.raises(UdsInputError, match="expected one `x` block"):
        stale([b], tmp_path)


def test_table_helper():
    assert table(["a", "b"], [["1", "2"]]) == "| a | b |\n|---|---|\n| 1 | 2 |\n"
