"""The curves page of `uds report` in headless Chromium from file://: one chart per curve
file with a line per recorded key, the chosen checkpoint starred where the rule put it, the table of
records with the values of the file, a failed evaluation shown as failed, no console errors."""

from __future__ import annotations

import random
import time

import pytest

from uds_core.curves import append_record, start_curve
from tests import browser
from uds.callbacks.best import BestRule
from uds.cli import main

pytestmark = [pytest.mark.browser, pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing()))]
ORIENTATION = {"uds": "erasure", "prob": "knowledge", "retain_q_prob": "utility"}
RULE = "max:uds, retain_q_prob>=0.9x"


def write_curve(path, seed: int) -> list[dict]:
    rng, rule = random.Random(seed), BestRule.parse(RULE, ORIENTATION)
    recs = [{"step": 3 * i, "epoch": 0.6 * i, "uds": rng.random(), "prob": rng.random(),
             "retain_q_prob": 0.7 + 0.3 * rng.random(), "eval_seconds": 1.0} for i in range(8)]
    recs[5] = {"step": 15, "epoch": 3.0, "error": "RuntimeError: boom"}
    for i, r in enumerate(recs):
        r["best_step"] = rule.best_step(recs[:i + 1])
    start_curve(path, {"name": path.stem, "every": 3, "metrics": ["prob", "retain_q_prob"], "orientation": ORIENTATION,
                       "best": RULE, "full": "F", "retain": "R"}, 0)
    for r in recs:
        append_record(path, r)
    return recs


def test_curves_page_draws_each_curve_with_its_values_and_chosen_step(tmp_path):
    curves = {name: write_curve(tmp_path / "in" / f"{name}.jsonl", seed) for seed, name in enumerate(("npo", "rmu"))}
    assert main(["report", "--results", str(tmp_path / "in"), "--out", str(tmp_path / "site")]) == 0
    driver = browser.chromium_driver()
    try:
        driver.get((tmp_path / "site" / "index.html").as_uri() + "#/curves")
        for _ in range(100):
            if driver.execute_script("return !!document.querySelector('#curve-table-1')"):
                break
            time.sleep(0.05)
        assert driver.find_element("css selector", "#nav-curves")
        for i, (name, recs) in enumerate(sorted(curves.items())):
            series = driver.execute_script(
                "return Array.from(document.querySelectorAll('#curve-chart-' + arguments[0] + ' path'))"
                ".map(p => p.getAttribute('data-series'))", i)
            assert series == ["uds", "prob", "retain_q_prob"]
            best = recs[-1]["best_step"]
            rows = driver.execute_script(
                "return Array.from(document.querySelectorAll('#curve-table-' + arguments[0] + ' tbody tr'))"
                ".map(r => Array.from(r.cells).map(c => c.textContent))", i)
            assert [r[0] for r in rows] == [f"{x['step']}" + (" ★" if x["step"] == best else "") for x in recs]
            for r, x in zip(rows, recs):
                assert r[2] == ("failed" if "error" in x else f"{x['uds']:.4f}")
            assert driver.execute_script("return document.querySelectorAll('#curve-chart-' + arguments[0] + "
                                         "' text.star').length", i) == 1
        logs = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert logs == []
    finally:
        driver.quit()
