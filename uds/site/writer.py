"""Write the site folder: index.html, the assets, data/*.js and img/*.png.

Data travel as JavaScript files that call `UDSreport.index(...)` / `UDSreport.model(id, ...)`:
a page opened from file:// may load a <script src> but may not fetch() JSON. Per-model files are
loaded by the page when a model is opened, so the leaderboard loads only the small index.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from uds_core.errors import UdsInputError
from uds.site.model import Results
from uds.site.payload import build_payload

ASSETS = Path(__file__).resolve().parent / "assets"
ASSET_FILES = ("index.html", "app.js", "leaderboard.js", "model.js", "meta.js", "curves.js", "app.css")
OWNED = re.compile(r"^(index|m\d+)\.js$")


def js_literal(value: object) -> str:
    """JSON as a JavaScript literal that is safe anywhere in a page: `<` (so no `</script>`),
    `>`, `&` and the two line separators JavaScript strings once forbade are \\u-escaped."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch in ("<", ">", "&", "\u2028", "\u2029"):
        text = text.replace(ch, f"\\u{ord(ch):04x}")
    return text


def _clear_owned(out: Path) -> None:
    """Remove data and images of an earlier build (only files this writer names)."""
    for p in (out / "data").glob("*.js"):
        if OWNED.match(p.name):
            p.unlink()
    for p in (out / "img").glob("*.png"):
        p.unlink()


def image_names(results: Results) -> dict[Path, str]:
    """Source PNG -> its path in the site (img/<n>_<name>.png, unique)."""
    sources = [p for m in results.meta for p in m.images.values()]
    sources += [r.image for r in results.probes + results.audits if r.image is not None]
    names: dict[Path, str] = {}
    for p in sources:
        if p not in names:
            names[p] = f"img/{len(names)}_{re.sub(r'[^A-Za-z0-9._-]+', '_', p.name)}"
    return names


def write_site(results: Results, out: str | Path) -> Path:
    """Write the site into `out` (created; earlier report files there replaced). Returns index.html."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UdsInputError(f"--out {out}: exists and is not a folder")
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "img").mkdir(exist_ok=True)
    _clear_owned(out)
    images = image_names(results)
    index, per_model = build_payload(results, images)
    for src, rel in images.items():
        shutil.copyfile(src, out / rel)
    for mid, doc in per_model.items():
        (out / "data" / f"m{mid}.js").write_text(f"UDSreport.model({mid},{js_literal(doc)});\n", encoding="utf-8")
    (out / "data" / "index.js").write_text(f"UDSreport.index({js_literal(index)});\n", encoding="utf-8")
    for name in ASSET_FILES:
        shutil.copyfile(ASSETS / name, out / name)
    return out / "index.html"
