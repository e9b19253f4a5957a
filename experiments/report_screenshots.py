"""Screenshots of each page kind of a `uds report` site (docs/report/*.png), taken in headless Chromium.

    python experiments/report_screenshots.py --site SITE_DIR --out docs/report \
        [--model NAME] [--other NAME] [--example POS]

--model / --other name the models of the model, example and compare pages (default: the first
two unlearned models with per-example data). Also taken: the leaderboard with column groups
switched on (`--groups`, sorted by UDS) and with the pool and base models shown, the model page's
runs and differences unfolded, the page of the first model without per-layer data
(model_empty.png) where there is one, the meta-evaluation's first run, its first run with the
filters on and one metric's histogram and scatters (`--metric`). PNGs are reduced to a 256-colour
palette to stay small.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import browser


def settle(driver, css: str) -> None:
    for _ in range(200):
        if driver.execute_script("return !!document.querySelector(arguments[0])", css):
            time.sleep(0.2)
            return
        time.sleep(0.05)
    raise TimeoutError(css)


def save(driver, path: Path) -> None:
    driver.save_screenshot(str(path))
    from PIL import Image

    Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    print(f"{path} ({path.stat().st_size // 1024} KB)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--other", default=None)
    ap.add_argument("--example", type=int, default=0)
    ap.add_argument("--groups", default="memorisation,mia", help="column groups of leaderboard_groups.png")
    ap.add_argument("--metric", default="es", help="the metric of meta_detail.png")
    ap.add_argument("--width", type=int, default=1280, help="window width in pixels")
    a = ap.parse_args()
    why = browser.missing()
    if why:
        print(f"report_screenshots: {why}", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    url = (a.site / "index.html").resolve().as_uri()
    d = browser.chromium_driver()
    d.set_window_size(a.width, 860)
    try:
        d.get(url)
        settle(d, "#lb-table tbody tr, #lb-empty")
        ids = d.execute_script("""return [arguments[0], arguments[1]].map((n, i) => {
            const withData = UDSreport.data.models.filter(m => m.file && m.population === 'unlearned');
            const hit = withData.find(m => m.name === n);
            return hit ? hit.id : (withData[i] || {}).id; });""", a.model, a.other)
        save(d, a.out / "leaderboard.png")                      # the default order
        empty = d.execute_script("""const m = UDSreport.data.models.find(m => !m.file ||
            !m.sources.some(s => s.layers)); return m ? m.id : null;""")
        has_rows = d.execute_script("return UDSreport.data.models.length > 0")
        pages = [("leaderboard_groups", f"#/?show={a.groups}&sort=-uds", "#lb-table tbody tr"),
                 ("leaderboard_others", "#/?others=1", "#lb-table tbody tr")] if has_rows else []
        pages += [("model", f"#/model/{ids[0]}", "#layer-chart rect.hover"),
                  ("model_runs", f"#/model/{ids[0]}", "#layer-chart rect.hover"),
                  ("example", f"#/example/{ids[0]}/{a.example}", "#ex-layers")] if ids[0] is not None else []
        pages += [("compare", f"#/compare/{ids[0]}/{ids[1]}", "#cmp-chart")] if ids[1] is not None else []
        pages += [("model_empty", f"#/model/{empty}", "#model-empty")] if empty is not None else []
        has = d.execute_script("return [UDSreport.data.meta.length, "
                               "UDSreport.data.probes.length, UDSreport.data.audits.length]")
        filtered = d.execute_script("const i = UDSreport.data.meta.findIndex(m => m.filters === true); "
                                    "return i < 0 ? null : i;")
        pages += [p for p, n in zip([("meta", "#/meta", "#meta-table tbody tr"), ("probe", "#/probe", "#probe-table-0"),
                                     ("audit", "#/audit", "#audit-table-0")], has) if n]
        if has[0] and filtered is not None:
            pages += [("meta_filtered", f"#/meta/{filtered}", "#meta-table tbody tr"),
                      ("meta_detail", f"#/meta/{filtered}", "#meta-table tbody tr")]
        for name, hash_, ready in pages:
            d.get("about:blank")        # a new hash alone would not reload the page
            d.get(url + hash_)
            settle(d, ready)
            if name == "leaderboard_others":    # their own section, under the leaderboard
                d.execute_script("const r = document.querySelector('#lb-table tbody[data-section=others] tr');"
                                 "if (r) r.scrollIntoView({block: 'center'})")
            if name == "model_runs":        # its runs and where they differ, unfolded
                d.execute_script("document.querySelectorAll('details').forEach(x => x.open = true);"
                                 "document.querySelector('#model-runs-box').scrollIntoView()")
            if name == "meta_detail":       # one metric's P/N histogram and robustness scatters
                d.execute_script("const r = "
                                 "document.querySelector('#meta-table tr[data-key=\"' + arguments[0] + '\"]');"
                                 "if (r) r.click(); document.querySelector('#meta-detail').scrollIntoView()", a.metric)
            time.sleep(0.2)
            save(d, a.out / f"{name}.png")
            if name == "model":     # then its per-layer chart, a layer hovered so it shows its numbers
                from selenium.webdriver import ActionChains
                rects = d.find_elements("css selector", "#layer-chart rect.hover")
                ActionChains(d).move_to_element(rects[len(rects) // 2]).perform()
                save(d, a.out / "model_layers.png")
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
