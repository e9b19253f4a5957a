"""The report as its readers use it, in headless Chromium from file://: one row per model with the
differences between runs shown, the rows, values and order of `uds leaderboard`, sorting both
ways, column groups and the view kept in the URL, numbers to 3 decimals (UDS 4) with tiny values
as 0 and the exact value on hover, directions and the ranks that use them, the markdown and CSV
exports, honest empty states, and the meta-evaluation beside the published spec §5.7 values (also
for a partial run). Expected values come from the input files or `uds leaderboard`'s output."""

from __future__ import annotations

import csv
import io
import json
from contextlib import redirect_stdout

import pytest

from meta_eval.published import PUBLISHED
from tests import browser
from tests.browser import driver, go, texts  # noqa: F401 (driver: the module's Chromium fixture)
from tests.report_fixtures import (write_meta_eval, write_model_folders, write_partial_meta_eval, write_probe,
                                   write_results_json, write_score_run)
from uds.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))]

NAMES = "#lb-table tbody td.name a"
TINY = 6.999999999770142e-12          # spec §6.3: the full model's Overall, HM_eps of a zero term


def build(root, *inputs) -> str:
    assert main(["report", "--results", *map(str, inputs), "--out", str(root)]) == 0
    return (root / "index.html").as_uri()


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("views")
    inp = root / "mixed"
    a = write_score_run(inp / "run_a", "tiny:test/npo_lr3e-5_ep5", seed=1, depth=0.3)
    b = write_score_run(inp / "run_b", "tiny:test/npo_lr3e-5_ep5", seed=2, depth=0.6)
    ou = write_score_run(inp / "ou", "tiny:test/rmu_lr1e-5_ep5", seed=3)
    (inp / "ou" / "examples.jsonl").unlink()                # an OU eval run keeps the summary only
    (inp / "ou" / "summary.json").rename(inp / "ou" / "uds_score_rmu.json")
    rows = write_results_json(inp / "results.json", 8, seed=2)
    rows.append({"model": "stored_only_ep5", "method": "npo", "epoch": 5, "overall": TINY, "mem": 0.5})
    (inp / "results.json").write_text(json.dumps(rows))
    write_score_run(inp / "broken", "tiny:test/graddiff_lr9e-5_ep5", seed=4)
    (inp / "broken" / "examples.jsonl").write_text("{not json\n")
    write_meta_eval(root / "meta", n_unlearned=16)
    write_partial_meta_eval(root / "partial")
    write_results_json(root / "cli" / "results.json", 14, seed=6)
    write_model_folders(root / "folders", 10, seed=7)
    write_probe(root / "probe_only")
    return {"root": root, "mixed": build(root / "site", inp), "a": a, "b": b, "ou": ou, "rows": rows,
            "meta": build(root / "site_meta", root / "meta"), "partial": build(root / "site_partial", root / "partial"),
            "cli": build(root / "site_cli", root / "cli" / "results.json"),
            "folders": build(root / "site_folders", root / "folders"),
            "probe_only": build(root / "site_probe", root / "probe_only")}


def attrs(driver, css: str, name: str) -> list[str]:
    return driver.execute_script("return Array.from(document.querySelectorAll(arguments[0]))"
                                 ".map(e => e.getAttribute(arguments[1]))",
                                 css, name)


def skipped_groups(driver) -> dict[str, list[str]]:
    """The passed-over page: reason -> its paths."""
    return driver.execute_script("const out = {}; document.querySelectorAll('#skipped section').forEach(s => "
                                 "out[s.querySelector('h2').firstChild.textContent] = "
                                 "Array.from(s.querySelectorAll('li'))"
                                 ".map(l => l.textContent)); return out;")


def cli(fmt: str, results) -> str:
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["leaderboard", "--results", str(results), "--format", fmt]) == 0
    return buf.getvalue()


def shown(value: float, decimals: int = 3) -> str:
    """The printing the issue asks for, written out again: fixed decimals, 0 below 1e-6 in magnitude."""
    return "0" if abs(value) < 1e-6 else f"{value:.{decimals}f}"


def md_table(text: str) -> list[dict]:
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip().strip("*") for c in ln.strip("|").split("|")))) for ln in lines[2:]]


def cell(driver, model: str, key: str):
    return driver.find_element("css selector",
                               f"#lb-table tr[data-id='{model_id(driver, model)}'] td[data-col='{key}']")


def model_id(driver, name: str) -> int:
    return driver.execute_script("return UDSreport.data.models.find(m => m.name === arguments[0]).id", name)


@pytest.mark.parametrize("which", ["cli", "folders"])
def test_rows_values_and_order_are_those_of_uds_leaderboard(driver, sites, which):
    given = sites["root"] / ("cli/results.json" if which == "cli" else "folders")
    want = list(csv.DictReader(io.StringIO(cli("csv", given))))
    md = md_table(cli("md", given))
    go(driver, sites[which], "#lb-table tbody tr")
    assert texts(driver, NAMES) == [r["model"] for r in want] == [r["model"] for r in md]
    for r, m in zip(want, md):
        for key in ("mem", "privacy", "utility_rel", "overall", "uds"):
            td = cell(driver, r["model"], key)
            assert td.text.split(" [")[0] == (m[key] or "–"), (r["model"], key)       # the same printed value
            if r[key]:                                                                 # and the same exact one
                assert (td.get_attribute("title").startswith("exact value ")
                        and float(td.get_attribute("title")[12:]) == float(r[key]))
        assert cell(driver, r["model"], "method").text == r["method"]


def test_one_row_per_model_and_where_runs_differ(driver, sites):
    go(driver, sites["mixed"], "#lb-table tbody tr")
    names = texts(driver, NAMES)
    assert len(names) == len(set(names)) and names.count("npo_lr3e-5_ep5") == 1
    a, b = sites["a"], sites["b"]
    td = cell(driver, "npo_lr3e-5_ep5", "uds")
    assert "differs" in td.get_attribute("class") and td.text.startswith(f"{a['uds']:.4f}")
    title = td.get_attribute("title")        # each run's value as the column prints it, with its folder
    run_a, run_b = sites["root"] / "mixed" / "run_a", sites["root"] / "mixed" / "run_b"
    assert f"{a['uds']:.4f}  {run_a}" in title and f"{b['uds']:.4f}  {run_b}" in title
    assert driver.find_element("css selector", "#lb-conflicts").text.startswith("1 model(s)")
    assert driver.find_element("css selector", "#lb-skipped a").get_attribute("href").endswith("#/skipped")
    driver.find_element("link text", "npo_lr3e-5_ep5").click()
    go(driver, driver.current_url, "#model-differs")
    paths = texts(driver, "#model-runs td.path")
    assert paths[:2] == [str(run_a), str(run_b)]
    spread = texts(driver, "#model-differs tr[data-key=uds] td.spread")[0]          # folded: read as text
    assert spread == f"{abs(a['uds'] - b['uds']):.4f}"
    assert driver.find_elements("css selector", "#layer-chart")            # its first run has per-layer data


def test_sorting_both_ways_groups_and_the_view_in_the_url(driver, sites):
    go(driver, sites["mixed"], "#lb-table tbody tr")
    mem = {r["model"]: r.get("mem") for r in sites["rows"]}
    th = driver.find_element("css selector", "th[data-key=mem]")
    th.click()
    shown = [n for n in texts(driver, NAMES)]
    assert set(shown[:2]) == {"full", "retain"}          # the reference rows stay on top
    shown = shown[2:]
    values = [driver.execute_script("return UDSreport.data.models.find(m => m.name === arguments[0]).cells.mem", n)
              for n in shown]
    have = [v for v in values if v is not None]
    assert have == sorted(have, reverse=True) and values[len(have):] == [None] * (len(values) - len(have))
    assert sum(v is not None for v in mem.values()) <= len(have)
    driver.find_element("css selector", "th[data-key=mem]").click()
    values = [driver.execute_script("return UDSreport.data.models.find(m => m.name === arguments[0]).cells.mem", n)
              for n in texts(driver, NAMES)[2:]]
    have = [v for v in values if v is not None]
    # empty cells last both ways
    assert have == sorted(have) and values[len(have):] == [None] * (len(values) - len(have))
    assert not driver.find_elements("css selector", "th[data-key=s_mia_loss]")
    driver.find_element("css selector", "#lb-groups input[data-group=mia]").click()
    driver.find_element("css selector", "th[data-key=s_mia_loss]").click()
    from selenium.webdriver.support.ui import Select
    Select(driver.find_element("css selector", "#lb-method")).select_by_value("npo")
    url = driver.current_url
    assert url.endswith("#/?show=mia&sort=-s_mia_loss&method=npo")
    keys, order = attrs(driver, "#lb-table thead tr:last-child th", "data-key"), texts(driver, NAMES)
    driver.get("about:blank")
    go(driver, url, "#lb-table tbody tr")
    assert attrs(driver, "#lb-table thead tr:last-child th", "data-key") == keys and texts(driver, NAMES) == order
    assert driver.find_element("css selector", "#lb-groups input[data-group=mia]").is_selected()
    driver.find_element("css selector", "#lb-default").click()
    assert "sort=" not in driver.current_url


def test_numbers_directions_and_ranks(driver, sites):
    go(driver, sites["mixed"], "#lb-table tbody tr")
    td = cell(driver, "stored_only_ep5", "overall")
    assert td.text == "0" and td.get_attribute("title") == f"exact value {TINY!r}"
    row = next(r for r in sites["rows"] if r["model"] == "retain")
    assert cell(driver, "retain", "mem").get_attribute("title").startswith("exact value 0.")
    assert (texts(driver, "th[data-key=mem] small") == ["↑ erased"]
            and texts(driver, "th[data-key=overall] small") == ["↑ better"])
    driver.find_element("css selector", "#lb-groups input[data-group=memorisation]").click()
    assert texts(driver, "th[data-key=es] small") == ["↑ knowledge"]
    assert cell(driver, "retain", "es").text == f"{row['es']:.3f}"
    # the population rank of a knowledge metric counts the unlearned models with less of it
    unlearned = [r for r in sites["rows"] if r["method"] not in ("full", "retain") and "es" in r]
    mine = unlearned[2]
    go(driver, sites["mixed"].split("#")[0] + f"#/model/{model_id(driver, mine['model'])}",
       "#population tr[data-key=es]")
    want = 1 + sum(r["es"] < mine["es"] for r in unlearned)
    assert texts(driver, "#population tr[data-key=es] td.rank") == [f"{want} of {len(unlearned)}"]
    assert "knowledge" in texts(driver, "#population tr[data-key=es] td")[1]
    go(driver, sites["mixed"].split("#")[0] + f"#/model/{model_id(driver, 'retain')}", "#population tr[data-key=es]")
    assert texts(driver, "#population tr[data-key=es] td.rank") == ["–"]         # a reference is not ranked


def test_markdown_and_csv_exports_are_the_paper_table(driver, sites):
    go(driver, sites["cli"], "#lb-table tbody tr")
    rows = {r["model"]: r for r in csv.DictReader(io.StringIO(cli("csv", sites["root"] / "cli" / "results.json")))}
    driver.find_element("css selector", "#lb-md").click()
    md = driver.find_element("css selector", "#lb-md-text").get_attribute("value")
    table = md_table(md)
    assert list(table[0]) == ["model", "UDS [95% CI] ↑", "Mem ↑",
                              "Privacy ↑", "Utility ↑", "Overall ↑", "method", "epoch"]
    assert [r["model"] for r in table] == texts(driver, NAMES)
    for r in table:
        want = rows[r["model"]]
        assert r["Overall ↑"] == shown(float(want["overall"]))
        assert r["UDS [95% CI] ↑"] == shown(float(want["uds"]), 4)            # results.json rows carry no interval
    exported = list(csv.DictReader(io.StringIO(driver.execute_script("return UDSreport.csvText()"))))
    assert list(exported[0])[:6] == ["model", "uds", "uds_ci_low", "uds_ci_high", "mem", "privacy"]
    for r in exported:
        if rows[r["model"]]["mem"]:
            assert r["mem"] == shown(float(rows[r["model"]]["mem"]))


def test_empty_states_say_what_the_run_lacks(driver, sites):
    base = sites["mixed"].split("#")[0]
    go(driver, base, "#lb-table tbody tr")
    rmu = model_id(driver, "rmu_lr1e-5_ep5")
    go(driver, base + f"#/model/{rmu}", "#model-empty")
    text = driver.find_element("css selector", "#model-empty").text
    assert ("no per-layer data" in text and "uds score --unlearned SPEC --out DIR" in text
            and "uds_score_rmu.json" in text)
    assert not driver.find_elements("css selector", "#layer-chart, #ke-hist, svg[id=layer-chart]")
    assert driver.find_element("css selector", "#model-uds").text == f"{sites['ou']['uds']:.4f}"
    only_row = model_id(driver, "stored_only_ep5")
    go(driver, base + f"#/model/{only_row}", "#model-empty")
    assert "No `uds score` run" in driver.find_element("css selector", "#model-empty").text
    assert not driver.find_elements("css selector", "#layer-chart, #ke-hist, #ex-table")
    assert driver.find_elements("css selector", "#population tr[data-key=overall]")
    go(driver, sites["probe_only"], "#lb-empty")                     # no per-model result: no empty table
    assert not driver.find_elements("css selector", "#lb-table") and "no leaderboard" in texts(driver, "#lb-empty")[0]
    go(driver, base + "#/skipped", "#skipped li")
    skipped = {p: g for g, paths in skipped_groups(driver).items() for p in paths}
    broken = str(sites["root"] / "mixed" / "broken" / "examples.jsonl")
    assert broken in skipped and "summary only" in skipped[broken]


def test_meta_evaluation_beside_the_published_table(driver, sites):
    from scipy.stats import spearmanr

    base = sites["meta"].split("#")[0]
    meta = json.loads((sites["root"] / "meta" / "meta_eval.json").read_text())
    go(driver, base + "#/meta", "#meta-table tbody tr")
    keys = list(meta["faithfulness"])
    for k in keys:
        row = f"#meta-table tr[data-key='{k}']"
        assert texts(driver, f"{row} td[data-col=pub_overall]") == [f"{PUBLISHED[k]['overall']:.3f}"]
        assert texts(driver, f"{row} td[data-col=pub_q]") == [f"{PUBLISHED[k]['q']:.4f}"]
        assert texts(driver, f"{row} td[data-col=overall]") == [f"{meta['overall'][k]:.3f}"]
        pub_rank = 1 + sum(PUBLISHED[j]["overall"] > PUBLISHED[k]["overall"] for j in keys)
        assert texts(driver, f"{row} td[data-col=pub_rank]") == [str(pub_rank)]
    assert all(meta["robustness"][k]["n_kept"] >= 5 for k in keys)        # all ranked (thin runs: their own test)
    rho = spearmanr([meta["overall"][k] for k in keys], [PUBLISHED[k]["overall"] for k in keys])[0]
    assert f"by overall ρ = {rho:.3f} over {len(keys)} metrics" in driver.find_element("css selector",
                                                                                       "#meta-spearman").text
    driver.find_element("css selector", "#meta-table tr[data-key=es]").click()
    pools = {lab: {n for n, m in meta["members"].items() if m["kind"] == "pool" and m["pool"] == lab} for lab in "PN"}
    for lab in "PN":
        named = set("\n".join(attrs(driver, f"#pn-hist rect[data-pool={lab}]", "data-names")).split("\n")) - {""}
        assert named == pools[lab]
    from selenium.webdriver import ActionChains
    bar = next(r for r in driver.find_elements("css selector", "#pn-hist rect[data-pool=P]")
               if r.get_attribute("data-names"))
    ActionChains(driver).move_to_element(bar).perform()
    tip = driver.find_element("css selector", "#tip").text
    assert all(n in tip for n in bar.get_attribute("data-names").split("\n"))


def test_a_partial_meta_evaluation_shows_its_n_and_what_it_lacks(driver, sites):
    go(driver, sites["partial"] + "#/meta", "#meta-table tbody tr")
    n = driver.find_element("css selector", "#meta-n").text
    assert "1 unlearned" in n and "1 pool P" in n and "1 pool N" in n
    assert set(texts(driver, "#meta-table td[data-col=n_pn]")) == {"1 / 1"}
    lacks = texts(driver, "#meta-lacks li")
    path = str(sites["root"] / "partial" / "meta_eval.json")
    assert any(t.startswith(path) and "no robustness" in t for t in lacks)
    assert any("2 models in each of the P and N pools" in t for t in lacks)
    assert "by overall n/a (0 metrics ranked in both" in driver.find_element("css selector", "#meta-spearman").text
    assert set(texts(driver, "#meta-table td[data-col=overall]")) == {"–"}
    assert texts(driver, "#meta-table td[data-col=pub_overall]")          # the published column is still there
    assert driver.find_elements("css selector", "#pn-hist") and not driver.find_elements("css selector", "#scatter-nf4")
