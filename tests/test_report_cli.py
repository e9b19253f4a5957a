"""`uds report` end to end on real `uds score` output of the tiny `test` world: the full model
scored as the unlearned one (UDS 0 by construction) and the retain model (UDS 1), plus, where
Chromium is present, the site driven in the browser."""

from __future__ import annotations

import json
import time

import pytest

from tests import browser


@pytest.fixture(scope="module")
def scored(test_world, tmp_path_factory):
    """Two `uds score` folders (tiny:test/full and tiny:test/retain as the unlearned model) and the site."""
    from uds.cli import main

    root = tmp_path_factory.mktemp("e2e")
    for name in ("full", "retain"):
        assert main(["score", "--unlearned", f"tiny:test/{name}", "--out", str(root / name), "--device", "cpu"]) == 0
    assert main(["report", "--results", str(root / "full"), str(root / "retain"), "--out", str(root / "site")]) == 0
    return root


def _call(js: str) -> object:
    """The JSON argument of a data file's `UDSreport.index(...)` / `UDSreport.model(id, ...)` call."""
    inner = js[js.index("(") + 1:js.rindex(")")]
    return json.loads(inner.split(",", 1)[1] if js.startswith("UDSreport.model(") else inner)


def test_report_of_real_score_runs(scored):
    index = _call((scored / "site" / "data" / "index.js").read_text())
    by_name = {m["name"]: m for m in index["models"]}     # shown by short name, the specs kept
    assert by_name["full"]["specs"] == ["tiny:test/full"] and by_name["retain"]["specs"] == ["tiny:test/retain"]
    assert by_name["full"]["cells"]["uds"] == 0.0 and by_name["retain"]["cells"]["uds"] == 1.0
    for name in ("full", "retain"):
        m = by_name[name]
        doc = _call((scored / "site" / m["file"]).read_text())
        records = [json.loads(x) for x in (scored / name / "examples.jsonl").read_text().splitlines()]
        summary = json.loads((scored / name / "summary.json").read_text())
        data = {str(r["idx"]): r for r in json.loads(open(summary["data"]).read())}
        assert [e["idx"] for e in doc["examples"]] == [r["idx"] for r in records]
        shown = 0
        for e in doc["examples"]:
            item = data[str(e["idx"])]
            assert e["question"] == item["question"]
            if e["entity_span"]:
                c0, c1 = e["entity_span"]
                assert e["answer"][c0:c1].strip() == item["entity"].strip()
                shown += 1
        assert shown >= summary["n_scored"]        # every scored example has its entity highlighted


@pytest.mark.browser
@pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))
def test_real_report_in_the_browser(scored):
    d = browser.chromium_driver()
    try:
        d.get((scored / "site" / "index.html").as_uri())
        time.sleep(0.5)
        d.find_element("css selector", "th[data-key=uds]").click()
        assert [e.text for e in d.find_elements("css selector", "#lb-table td.name a")] == ["retain", "full"]
        d.find_element("link text", "retain").click()
        for _ in range(100):
            if d.find_elements("css selector", "#model-uds"):
                break
            time.sleep(0.05)
        assert d.find_element("css selector", "#model-uds").text == "1.0000"
        d.find_element("css selector", "#ex-table tbody tr").click()
        time.sleep(0.3)
        records = [json.loads(x) for x in (scored / "retain" / "examples.jsonl").read_text().splitlines()]
        assert d.find_element("css selector", "#ex-idx").text == str(records[0]["idx"])
        if records[0]["uds"] is not None:
            assert d.find_element("css selector", "#ex-uds").text == f"{records[0]['uds']:.4f}"
    finally:
        d.quit()
