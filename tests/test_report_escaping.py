"""Results text never becomes markup: the data files hold it as JavaScript string literals that
round-trip exactly, and the page code never parses text as HTML (the browser test runs it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.report_fixtures import INJECTIONS, write_meta_eval, write_score_run
from uds.site.readers import read_results
from uds.site.writer import ASSETS, js_literal, write_site

TRICKY = INJECTIONS + ("line\u2028sep\u2029para", "amp & gt > lt <", "quote \" back \\ slash", "é中文🙂")


def test_js_literal_round_trips_and_holds_no_markup_characters():
    value = {"names": list(TRICKY), "nested": {"<key>": [1.5, None, True]}}
    text = js_literal(value)
    assert not re.search(r"[<>&\u2028\u2029]", text)
    assert json.loads(text) == value            # \u003c etc. are JSON escapes: the same strings come back


def _call_argument(js: str, prefix: str) -> object:
    assert js.startswith(prefix) and js.endswith(");\n")
    return json.loads(js[len(prefix):-3])


def test_site_data_files_keep_injection_strings_as_data(tmp_path):
    write_score_run(tmp_path / "in" / "a", INJECTIONS[0] + "model", inject=True, seed=1)
    write_meta_eval(tmp_path / "in" / "meta", inject=True)
    site = tmp_path / "site"
    write_site(read_results([tmp_path / "in"]), site)
    index_js = (site / "data" / "index.js").read_text()
    index = _call_argument(index_js, "UDSreport.index(")
    mid = next(m["id"] for m in index["models"] if INJECTIONS[0] + "model" in m["specs"])
    model_js = (site / "data" / f"m{mid}.js").read_text()
    for js in (index_js, model_js):
        assert "<" not in js and ">" not in js
    doc = _call_argument(model_js, f"UDSreport.model({mid},")
    questions = " ".join(e["question"] for e in doc["examples"])
    assert all(s in questions for s in INJECTIONS)


def test_page_code_builds_text_nodes_only():
    scripts = sorted(ASSETS.glob("*.js"))
    assert len(scripts) >= 4
    for path in scripts:
        js = path.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
            assert sink not in js, (path.name, sink)
    html = (ASSETS / "index.html").read_text()
    assert ("Content-Security-Policy" in html and "'unsafe-inline'" not in html
            and "http" not in html.split("<title>")[1])


def test_site_needs_no_network(tmp_path):
    write_score_run(tmp_path / "in" / "a", "m")
    site = tmp_path / "site"
    write_site(read_results([tmp_path / "in"]), site)
    for f in [p for p in site.rglob("*") if p.suffix in (".html", ".js", ".css")]:
        text = f.read_text()
        assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", text), f       # no remote resource
        assert "fetch(" not in text and "XMLHttpRequest" not in text, f
    assert Path(site / "index.html").is_file()
