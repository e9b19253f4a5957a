"""`uds report` driven in headless Chromium from file://: leaderboard sort / filter / columns / CSV,
model page numbers and hover, example drill-down (highlighted entity, per-layer deltas), compare,
meta-evaluation, probe, audit, and the injection strings staying text. Expected values come from
the input files (recomputed here), never from the site's own data files."""

from __future__ import annotations

import csv
import io
import json
import statistics
import time

import pytest

from tests import browser
from tests.browser import driver, go, texts  # noqa: F401 (driver: the module's Chromium fixture)
from tests.report_fixtures import (INJECTIONS, qa_records, uds_of, write_audit, write_meta_eval, write_probe,
                                   write_score_run)
from uds.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))]

NAMES = (INJECTIONS[1] + "tiny:test/npo_a", "tiny:test/rmu_b", "tiny:test/graddiff_c")
NAME_CELLS = "#lb-table tbody td.name a"


def short(spec: str) -> str:
    """The name the leaderboard shows for these specs: the part after the last slash."""
    return spec.split("/")[-1]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("report")
    summaries = {n: write_score_run(root / "in" / f"run{i}", n, n_examples=10, n_layers=6, seed=i, depth=0.3 * (i + 1),
                                    inject=True) for i, n in enumerate(NAMES)}
    meta = write_meta_eval(root / "in" / "meta", inject=True)
    write_probe(root / "in" / "probe")
    write_audit(root / "in" / "audit")
    assert main(["report", "--results", str(root / "in"), "--out", str(root / "site")]) == 0
    rows = json.loads((root / "in" / "meta" / "results.json").read_text())
    examples = {n: [json.loads(x) for x in (root / "in" / f"run{i}" / "examples.jsonl").read_text().splitlines()]
                for i, n in enumerate(NAMES)}
    return {"root": root, "url": (root / "site" / "index.html").as_uri(), "summaries": summaries, "meta": meta,
            "rows": rows, "examples": examples, "shots": root / "shots"}


def not_pwned(driver) -> None:
    assert driver.execute_script("return window.__pwned === undefined")
    assert driver.execute_script("return document.querySelectorAll("
                                 "'img[src=x], main script, main svg[onload]').length") == 0


def model_id(driver, name: str) -> int:
    return driver.execute_script("return UDSreport.data.models.find(m => m.name === arguments[0]).id", name)


def shot(driver, site, name: str) -> None:
    site["shots"].mkdir(exist_ok=True)
    path = site["shots"] / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 5000


def test_leaderboard_sorts_filters_chooses_columns_and_exports(driver, site):
    go(driver, site["url"], "#lb-table tbody tr")
    # every score run's UDS and every results.json row's, from the input files
    uds = {short(n): s["uds"] for n, s in site["summaries"].items()} | {r["model"]: r["uds"] for r in site["rows"]}
    refs = ["full", "retain"]                       # the reference rows stay on top in any sort
    unlearned = [n for n in uds if n not in refs]
    driver.find_element("css selector", "th[data-key=uds]").click()
    assert texts(driver, NAME_CELLS) == sorted(refs, key=lambda n: -uds[n]) + sorted(unlearned, key=lambda n: -uds[n])
    driver.find_element("css selector", "th[data-key=uds]").click()
    assert texts(driver, NAME_CELLS) == sorted(refs, key=lambda n: uds[n]) + sorted(unlearned, key=lambda n: uds[n])
    first = site["summaries"][NAMES[0]]
    row = driver.find_element("css selector",
                              f"#lb-table tr[data-id='{model_id(driver, short(NAMES[0]))}'] td[data-col=uds]").text
    assert row == f"{first['uds']:.4f} [{first['ci95'][0]:.3f}, {first['ci95'][1]:.3f}]"
    shot(driver, site, "leaderboard")
    not_pwned(driver)

    from selenium.webdriver.support.ui import Select
    Select(driver.find_element("css selector", "#lb-method")).select_by_value("rmu")
    want = [n for n in uds if n.startswith("rmu")]
    assert sorted(texts(driver, NAME_CELLS)) == sorted(want)
    Select(driver.find_element("css selector", "#lb-method")).select_by_value("")
    box = driver.find_element("css selector", "#lb-filter")
    box.send_keys("graddiff")
    assert sorted(texts(driver, NAME_CELLS)) == sorted(n for n in uds if "graddiff" in n)
    box.clear()
    box.send_keys("x")           # clear() fires no input event: type and delete a letter
    box.send_keys("\b")

    # the headline columns only, until a group is switched on; the CSV is the current view
    assert not driver.find_elements("css selector", "th[data-key=es]")
    table = list(csv.reader(io.StringIO(driver.execute_script("return UDSreport.csvText()"))))
    assert "es" not in table[0] and "overall" in table[0] and len(table) == 1 + len(uds)
    got = {r[0]: float(r[table[0].index("uds")]) for r in table[1:]}
    assert got == pytest.approx(uds, abs=5e-5)                  # UDS printed to 4 decimals
    driver.find_element("css selector", "#lb-groups input[data-group=memorisation]").click()
    assert driver.find_elements("css selector", "th[data-key=es]")
    table = list(csv.reader(io.StringIO(driver.execute_script("return UDSreport.csvText()"))))
    es = {r["model"]: r["es"] for r in site["rows"]}
    assert {r[0]: r[table[0].index("es")] for r in table[1:] if r[0] in es} == {m: f"{v:.3f}" for m, v in es.items()}
    driver.find_element("css selector", "#lb-groups input[data-group=memorisation]").click()


def test_model_page_numbers_and_layer_hover(driver, site):
    name = NAMES[1]
    go(driver, site["url"], "#lb-table")
    driver.find_element("link text", short(name)).click()
    go_ready = "#layer-chart rect.hover"
    for _ in range(100):
        if driver.find_elements("css selector", go_ready):
            break
        time.sleep(0.05)
    s = site["summaries"][name]
    assert driver.find_element("css selector", "#model-uds").text == f"{s['uds']:.4f}"
    assert driver.find_element("css selector", "#model-ci").text == f"95% CI [{s['ci95'][0]:.4f}, {s['ci95'][1]:.4f}]"
    scored = [e for e in site["examples"][name] if e["s1_delta"]]
    layer = 2
    from selenium.webdriver import ActionChains
    ActionChains(driver).move_to_element(driver.find_element("css selector",
                                                             f"#layer-chart rect[data-layer='{layer}']")).perform()
    tip = driver.find_element("css selector", "#tip").text
    assert f"mean Δ S1  {statistics.mean(e['s1_delta'][layer] for e in scored):.4f}" in tip
    assert f"mean Δ S2  {statistics.mean(e['s2_delta'][layer] for e in scored):.4f}" in tip
    assert f"KE in {sum(layer in e['ke_layers'] for e in scored)} examples" in tip
    heights = driver.execute_script("return Array.from(document.querySelectorAll('#ke-hist rect')).length")
    assert heights == 6
    assert driver.find_elements("css selector", "#population tr[data-key=uds]")
    shot(driver, site, "model")
    not_pwned(driver)


def text_when(driver, selector: str, expected: str, tries: int = 100) -> str | None:
    """The element's text once it is `expected` (read in the page by script, so a re-render
    between finding and reading it cannot fail the read), or its last text after `tries` polls."""
    text = None
    for _ in range(tries):
        text = driver.execute_script("const e = document.querySelector(arguments[0]);"
                                     "return e ? e.textContent.trim() : null;", selector)
        if text == expected:
            break
        time.sleep(0.05)
    return text


def test_example_page_span_numbers_and_paging(driver, site):
    name = NAMES[0]
    mid = None
    go(driver, site["url"], "#lb-table")
    mid = model_id(driver, short(name))
    items = {r["idx"]: r for r in qa_records(10, 0, inject=True)}
    pos = 1
    go(driver, site["url"].split("#")[0] + f"#/example/{mid}/{pos}", "#ex-question")
    rec = site["examples"][name][pos]
    item = items[rec["idx"]]
    assert driver.find_element("css selector", "#ex-question").text == item["question"]
    assert texts(driver, "#ex-answer")[0] == item["answer"]
    assert texts(driver, "#ex-entity") == [item["entity"]]          # the entity holds an injection string: text
    assert driver.find_element("css selector", "#ex-uds").text == f"{uds_of(rec['s1_delta'], rec['s2_delta']):.4f}"
    assert driver.find_element("css selector", "#ex-ke").text == ", ".join(map(str, rec["ke_layers"]))
    cells = [t.split("\t") for t in driver.execute_script(
        "return Array.from(document.querySelectorAll('#ex-layers tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.textContent).join('\\t'))")]
    assert [float(c[1]) for c in cells] == pytest.approx(rec["s1_delta"], abs=1e-6)
    assert [float(c[2]) for c in cells] == pytest.approx(rec["s2_delta"], abs=1e-6)
    assert [c[4] == "KE" for c in cells] == [j in rec["ke_layers"] for j in range(6)]
    shot(driver, site, "example")
    not_pwned(driver)
    driver.find_element("css selector", "#ex-next").click()
    assert text_when(driver, "#ex-idx", str(site["examples"][name][pos + 1]["idx"])) == \
        str(site["examples"][name][pos + 1]["idx"])
    driver.find_element("css selector", "#ex-prev").click()
    assert text_when(driver, "#ex-idx", str(rec["idx"])) == str(rec["idx"])
    box = driver.find_element("css selector", "#ex-jump")
    box.send_keys("Author 7 ")
    assert [t.split(" · ")[0] for t in texts(driver, "#ex-list a")] == ["7"]
    skipped = site["examples"][name][3]       # entity_span_not_found: no UDS_i, no deltas
    go(driver, site["url"].split("#")[0] + f"#/example/{mid}/3", "#ex-uds")
    assert driver.find_element("css selector", "#ex-uds").text == "–" and skipped["uds"] is None
    not_pwned(driver)


def test_compare_meta_probe_audit_pages(driver, site):
    base = site["url"].split("#")[0]
    go(driver, base, "#lb-table")
    a, b = model_id(driver, short(NAMES[0])), model_id(driver, short(NAMES[2]))
    go(driver, base + f"#/compare/{a}/{b}", "#cmp-table tbody tr")
    ea = {e["idx"]: e for e in site["examples"][NAMES[0]]}
    eb = {e["idx"]: e for e in site["examples"][NAMES[2]]}
    rows = driver.execute_script("return Array.from(document.querySelectorAll('#cmp-table tbody tr'))"
                                 ".map(r => [r.dataset.idx, r.cells[3].textContent])")
    assert len(rows) == len(ea)
    for idx, diff in rows:
        x, y = ea[int(idx)]["uds"], eb[int(idx)]["uds"]
        assert diff == ("–" if x is None or y is None else f"{y - x:.4f}")
    shot(driver, site, "compare")
    not_pwned(driver)

    go(driver, base + "#/meta", "#meta-table tbody tr")
    meta = site["meta"]
    keys = driver.execute_script("return Array.from(document.querySelectorAll('#meta-table tbody tr'))"
                                 ".map(r => r.dataset.key)")
    assert sorted(keys) == sorted(meta["faithfulness"])
    assert sorted(texts(driver, "#meta-table tbody td:first-child")) == ["ES", "ROUGE", "UDS"]   # their labels
    driver.find_element("css selector", "#meta-table tr[data-key=es]").click()
    pools = sum(m["kind"] == "pool" for m in meta["members"].values())
    bars = {lab: driver.execute_script("return document.querySelectorAll('#pn-hist rect[data-pool=' + "
                                       "arguments[0] + ']').length", lab)
            for lab in "PN"}
    assert bars["P"] == bars["N"] >= 12                       # P and N bars, one of each per bin
    unlearned = [n for n, m in meta["members"].items() if m["kind"] == "unlearned"]
    dropped = sorted(set(unlearned) - set(meta["robustness"]["es"]["kept"]))
    assert sorted(texts(driver, "#meta-dropped td:first-child")) == dropped and pools == 10
    assert driver.execute_script("return document.querySelectorAll('#scatter-nf4 circle').length") == len(unlearned)
    shot(driver, site, "meta")
    not_pwned(driver)

    go(driver, base + "#/probe", "#probe-table-0 tbody tr")
    # 0: below 1e-6
    assert texts(driver, "#probe-table-0 tbody tr:first-child td")[1:5] == ["0", "0.25", "0.50", "0.75"]
    shot(driver, site, "probe")
    go(driver, base + "#/audit", "#audit-table-0 tbody tr")
    assert texts(driver, "#audit-table-0 tbody tr:last-child td") == ["noise", "0", "0.770", "0.230", "0.970", "30"]
    shot(driver, site, "audit")
    not_pwned(driver)


def test_the_small_worlds_committed_meta_eval_output(driver, tmp_path):
    """The `small` world's committed benchmark rows (results/meta_eval_small, a real `uds meta-eval`
    run): 50 models, sorted by UDS and filtered by method as the file says."""
    from pathlib import Path

    src = Path(__file__).resolve().parents[1] / "results" / "meta_eval_small"
    rows = json.loads((src / "results.json").read_text())
    assert main(["report", "--results", str(src), "--out", str(tmp_path / "site")]) == 0
    go(driver, (tmp_path / "site" / "index.html").as_uri(), "#lb-table tbody tr")
    assert len(texts(driver, NAME_CELLS)) == len(rows) == 50
    driver.find_element("css selector", "th[data-key=uds]").click()
    shown = {r["model"]: r["uds"] for r in rows}
    names = texts(driver, NAME_CELLS)
    assert names[:2] == ["retain", "full"]                    # the reference rows first (UDS 1, 0), then sorted
    order = [shown[n] for n in names[2:]]
    scored = [u for u in order if u is not None]
    assert scored == sorted(scored, reverse=True) and len(scored) + 2 == sum(r["uds"] is not None for r in rows)
    from selenium.webdriver.support.ui import Select
    Select(driver.find_element("css selector", "#lb-method")).select_by_value("npo")
    assert sorted(texts(driver, NAME_CELLS)) == sorted(r["model"] for r in rows if r["method"] == "npo")
    not_pwned(driver)
