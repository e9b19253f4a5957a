"""The report tells the truth at a glance, checked in headless Chromium on small synthetic inputs
(tests/report_fixtures.py: write_truth_inputs, write_thin_meta_eval): a value is marked only where
runs differ at the printed precision, the value shown follows the stated rule, pool and base models
stay out of the default leaderboard and its exports, ranks are counted within a model's population,
the published table sits beside ours, a robustness resting on one kept model is marked and not
ranked, the histogram's threshold is a bin edge, and the labels, sticky names, axis titles, compare
default and passed-over groups are what a reader needs. Expected values come from the fixtures'
numbers, never from the site's data."""

from __future__ import annotations

import csv
import io

import pytest

from tests import browser
from tests.browser import driver, go, texts  # noqa: F401 (driver: the module's Chromium fixture)
from tests.report_fixtures import write_thin_meta_eval, write_truth_inputs
from uds.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))]

NAMES = "#lb-table tbody td.name a"
HEADLINE = ("uds", "mem", "privacy", "utility_rel", "overall")


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("truth")
    expect = write_truth_inputs(root / "in")
    metas = write_thin_meta_eval(root / "meta")
    # a repeated --results flag: both folders are read
    assert main(["report", "--results", str(root / "in" / "main"), "--results", str(root / "in" / "extra"),
                 "--out", str(root / "site")]) == 0
    assert main(["report", "--results", str(root / "meta"), "--out", str(root / "site_meta")]) == 0
    return {"root": root, "url": (root / "site" / "index.html").as_uri(),
            "meta_url": (root / "site_meta" / "index.html").as_uri(), "expect": expect, "metas": metas}


def model_id(driver, name: str) -> int:
    return driver.execute_script("return UDSreport.data.models.find(m => m.name === arguments[0]).id", name)


def cell(driver, name: str, key: str):
    return driver.find_element("css selector", f"#lb-table tr[data-id='{model_id(driver, name)}'] td[data-col='{key}']")


def test_a_mark_only_where_the_runs_differ_at_the_printed_precision(driver, sites):
    go(driver, sites["url"], "#lb-table tbody tr")
    close, far = sites["expect"]["runs"]["npo_close_ep5"], sites["expect"]["runs"]["rmu_far_ep5"]
    td = cell(driver, "npo_close_ep5", "uds")                  # 1e-9 apart: no mark, no tag
    assert "differs" not in (td.get_attribute("class") or "") and "≠" not in td.text
    assert td.get_attribute("title") == f"exact value {close[0]!r}"
    td = cell(driver, "rmu_far_ep5", "uds")                    # 3e-4 apart: marked, both printed on hover
    assert "differs" in td.get_attribute("class") and td.text.endswith("≠")
    canon = sites["root"] / "in" / "main" / "score" / "rmu_far_ep5"
    rebuild = sites["root"] / "in" / "main" / "rebuild" / "score" / "rmu_far_ep5"
    title = td.get_attribute("title")
    assert f"{far[0]:.4f}  {canon}" in title and f"{far[1]:.4f}  {rebuild}" in title
    assert f"(spread {far[1] - far[0]:.4f})" in title
    # the rule: the canonical folder (shallower) before the rebuild nested beside it, though "rebuild" < "score"
    assert td.text.startswith(f"{far[0]:.4f}")
    assert "shallowest folder" in driver.find_element("css selector", "#lb-rule").text
    assert driver.find_element("css selector", "#lb-conflicts").text.startswith("1 model(s)")
    tags = texts(driver, f"#lb-table tr[data-id='{model_id(driver, 'npo_close_ep5')}'] td.name .tag")
    assert not any("≠" in t for t in tags)
    # the model page: the differences folded below the per-layer chart, one number format
    go(driver, sites["url"].split("#")[0] + f"#/model/{model_id(driver, 'rmu_far_ep5')}", "#layer-chart")
    order = driver.execute_script("const a = document.querySelector('#layer-chart'), "
                                  "b = document.querySelector('#model-differs');"
                                  "return a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING")
    assert order and not driver.execute_script("return document.querySelector('#model-differs-box').open")
    row = texts(driver, "#model-differs tr[data-key=uds] td")
    assert row == ["UDS", f"{far[0]:.4f}", f"{far[1]:.4f}", f"{far[1] - far[0]:.4f}"]


def test_pool_and_base_models_stay_out_of_the_default_view_and_its_exports(driver, sites):
    expect = sites["expect"]
    go(driver, sites["url"], "#lb-table tbody tr")
    shown = texts(driver, NAMES)
    assert shown[:2] == ["full", "retain"] and not set(expect["others"]) & set(shown)
    rows = list(csv.DictReader(io.StringIO(driver.execute_script("return UDSreport.csvText()"))))
    assert (not {r["model"] for r in rows} & set(expect["others"])
            and {r["population"] for r in rows} == {"reference", "unlearned"})
    md = driver.execute_script("return UDSreport.mdText()")
    assert not any(n in md for n in expect["others"])
    # sorted by UDS, neg_retain_s0 (0.999) does not come under retain: it is not in the table
    driver.find_element("css selector", "th[data-key=uds]").click()
    assert texts(driver, NAMES)[:2] == ["retain", "full"] and "neg_retain_s0" not in texts(driver, NAMES)
    driver.find_element("css selector", "#lb-others").click()
    assert "others=1" in driver.current_url
    section = texts(driver, "#lb-table tbody[data-section=others] td.name a")
    assert sorted(section) == sorted(expect["others"])
    main_rows = texts(driver, "#lb-table tbody[data-section=main] td.name a")
    assert not set(main_rows) & set(expect["others"])
    rows = list(csv.DictReader(io.StringIO(driver.execute_script("return UDSreport.csvText()"))))
    assert {r["model"]: r["population"] for r in rows if r["model"] in expect["others"]} == \
        {"pos_full_s0": "pool", "neg_retain_s0": "pool", "base": "base"}
    assert "pool and base models" in driver.execute_script("return UDSreport.mdText()")
    driver.find_element("css selector", "#lb-others").click()


def test_ranks_on_a_model_page_count_its_own_population(driver, sites):
    expect = sites["expect"]
    go(driver, sites["url"], "#lb-table tbody tr")
    unlearned = [m for m in driver.execute_script("return UDSreport.data.models.map(m => [m.name, m.population])")
                 if m[1] == "unlearned"]
    mine = expect["rows"]["simnpo_b_ep5"]
    go(driver, sites["url"].split("#")[0] + f"#/model/{model_id(driver, 'simnpo_b_ep5')}",
       "#population tr[data-key=es]")
    # unlearned: ours, the two score runs' models (no ES) and the published-only row (no ES)
    with_es = [r["es"] for n, r in expect["rows"].items() if n in {u[0] for u in unlearned}]
    assert len(unlearned) == len(expect["unlearned"]) + 1
    assert driver.find_element("css selector", "#population-title").text.startswith("Its values against the "
                                                                                    f"{len(unlearned)} unlearned")
    want = 1 + sum(v < mine["es"] for v in with_es)
    assert texts(driver, "#population tr[data-key=es] td.rank") == [f"{want} of {len(with_es)}"]
    go(driver, sites["url"].split("#")[0] + f"#/model/{model_id(driver, 'pos_full_s0')}",
       "#population tr[data-key=uds]")
    # among the two pool members: UDS 0.001 against the N member's 0.999 (higher = more erased)
    assert texts(driver, "#population tr[data-key=uds] td.rank") == ["2 of 2"]
    assert "pool members" in driver.find_element("css selector", "#population-title").text


def test_the_published_table_sits_beside_ours(driver, sites):
    pub = sites["expect"]["published"]
    go(driver, sites["url"] + "#/?show=published", "#lb-table th[data-key=pub_overall]")
    ours = sites["expect"]["rows"]["graddiff_a_ep5"]
    assert cell(driver, "graddiff_a_ep5", "pub_overall").text == f"{pub['graddiff_a_ep5']['overall']:.3f}"
    assert cell(driver, "graddiff_a_ep5", "pub_uds").text == f"{pub['graddiff_a_ep5']['uds']:.4f}"
    assert cell(driver, "graddiff_a_ep5", "uds").text == f"{ours['uds']:.4f}"      # ours stays ours, unmarked
    assert "differs" not in (cell(driver, "graddiff_a_ep5", "uds").get_attribute("class") or "")
    assert texts(driver, "#lb-table th[data-key=pub_overall]")[0].startswith("Overall (published)")
    only = model_id(driver, "altpo_paper_ep10")                   # a model of the published table only
    assert "published" in texts(driver, f"#lb-table tr[data-id='{only}'] td.name .tag")
    assert cell(driver, "altpo_paper_ep10", "overall").text == f"{pub['altpo_paper_ep10']['overall']:.3f}"


def test_readable_labels_sticky_names_and_axis_titles(driver, sites):
    go(driver, sites["url"] + "#/?show=memorisation,mia", "#lb-table th[data-key=es]")
    heads = dict(zip(driver.execute_script("return Array.from(document.querySelectorAll("
                                           "'#lb-table thead tr:last-child th'))"
                                           ".map(t => t.dataset.key)"),
                     driver.execute_script("return Array.from(document.querySelectorAll("
                                           "'#lb-table thead tr:last-child th'))"
                                           ".map(t => t.firstChild.textContent)")))
    assert heads["es"] == "ES" and heads["truth_ratio"] == "Truth Ratio" and heads["s_mia_loss"] == "S-MIA loss"
    assert heads["utility_rel"] == "Utility"
    pos = driver.execute_script("const c = document.querySelector('#lb-table td.name');"
                                "return [getComputedStyle(c).position, getComputedStyle(c).left]")
    assert pos == ["sticky", "0px"]
    # scrolled sideways, the model column is still at the left edge of the table's box
    left = driver.execute_script("const w = document.querySelector('.wrap'); w.scrollLeft = 400;"
                                 "return [document.querySelector('#lb-table td.name').getBoundingClientRect().left,"
                                 " w.getBoundingClientRect().left, w.scrollLeft]")
    assert left[2] > 0 and abs(left[0] - left[1]) < 2
    wbr = driver.execute_script("return document.querySelector('#lb-table td.name a[title=\"simnpo_b_ep5\"]')"
                                ".querySelectorAll('wbr').length")
    assert wbr == 2                                          # simnpo_ b_ ep5: wraps at underscores only
    go(driver, sites["url"].split("#")[0] + f"#/model/{model_id(driver, 'rmu_far_ep5')}", "#layer-chart")
    assert set(texts(driver, "#layer-chart text.axis-title")) == {"layer",
                                                                  "Δ log-prob of the entity (nats)", "clipped ratio"}
    assert texts(driver, "#ke-hist text.axis-title") == ["examples", "layer"]


def test_compare_opens_on_two_unlearned_models_and_passed_over_is_grouped(driver, sites):
    go(driver, sites["url"].split("#")[0] + "#/compare", "#cmp-table tbody tr")
    chosen = driver.execute_script("return Array.from(document.querySelectorAll('main .controls select'))"
                                   ".map(s => s.value)")
    pops = [driver.execute_script("return UDSreport.data.models[arguments[0]].population", int(v)) for v in chosen]
    assert pops == ["unlearned", "unlearned"] and chosen[0] != chosen[1]
    go(driver, sites["url"].split("#")[0] + "#/skipped", "#skipped section")
    groups = driver.execute_script("return Array.from(document.querySelectorAll('#skipped section')).map(s => "
                                   "[s.querySelector('h2').firstChild.textContent, "
                                   "s.dataset.count, s.querySelectorAll('li').length])")
    assert groups == [["JSON of a kind uds report does not read", "3", 3]]


def test_a_robustness_on_one_kept_model_is_marked_and_not_ranked(driver, sites):
    metas = sites["metas"]
    go(driver, sites["meta_url"] + "#/meta", "#meta-table tbody tr")
    tabs = texts(driver, "#meta-runs a")
    assert "filters off" in tabs[0] and "filters on" in tabs[1]          # the unfiltered run first
    assert tabs[1].endswith("1–8 of 16 unlearned kept")
    driver.find_element("css selector", "#meta-run-1").click()
    go(driver, driver.current_url, "#meta-thin")
    filtered = metas["filtered"]
    assert "not ranked" in driver.find_element("css selector", "#meta-verdict").text
    assert "over 1 kept unlearned model" in driver.find_element("css selector", "#meta-verdict").text
    assert texts(driver, "#meta-table tr[data-key=uds] td[data-col=rank]") == ["–"]
    assert "thin" in driver.find_element("css selector",
                                         "#meta-table tr[data-key=uds] td[data-col=robustness]").get_attribute("class")
    # the others are ranked among themselves by overall, from the file
    ranked = {k: v for k, v in filtered["overall"].items() if k != "uds"}
    for k, v in ranked.items():
        assert (texts(driver, f"#meta-table tr[data-key={k}] td[data-col=rank]")
                == [str(1 + sum(x > v for x in ranked.values()))])
    assert "by overall n/a (2 metrics ranked in both" in driver.find_element("css selector", "#meta-spearman").text
    # beside it, the same zoo without filters: UDS there rests on all 16
    unf = metas["unfiltered"]
    assert texts(driver, "#meta-table tr[data-key=uds] td[data-col=pair_overall]") == [f"{unf['overall']['uds']:.3f}"]
    headers = driver.execute_script("return Array.from(document.querySelectorAll('#meta-table thead tr:last-child th'))"
                                    ".map(t => t.title)")
    assert all(h for h in headers) and driver.find_element("css selector", "#meta-legend")


def test_the_histogram_cannot_show_an_overlap_that_is_not_there(driver, sites):
    go(driver, sites["meta_url"] + "#/meta/1", "#meta-table tbody tr")
    driver.find_element("css selector", "#meta-table tr[data-key=es]").click()
    line = driver.find_element("css selector", "#pn-hist-threshold")
    assert float(line.get_attribute("data-value")) == pytest.approx(0.305)
    bars = driver.execute_script("return Array.from(document.querySelectorAll('#pn-hist rect')).map(r => "
                                 "[r.dataset.pool, +r.dataset.bin, "
                                 "r.dataset.names ? r.dataset.names.split('\\n').length : 0])")
    filled = {}
    for pool, b, n in bars:
        if n:
            filled.setdefault(b, set()).add(pool)
    assert filled and all(len(p) == 1 for p in filled.values())      # no bin holds both pools
    assert sum(n for _, _, n in bars) == 10
    titles = texts(driver, "#pn-hist text.axis-title")
    assert titles[0].startswith("raw ES") and titles[1] == "models"
    ticks = texts(driver, "#scatter-nf4 text.ytick")
    assert len(ticks) >= 3 and driver.find_element("css selector", "#scatter-nf4-legend")
    assert texts(driver, "#scatter-nf4 text.axis-title") == ["ES before", "ES after NF4 quantisation"]
