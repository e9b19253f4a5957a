"""`uds report`'s static site: readers of every result kind -> one data model -> pages.

No torch, no metric registry, so `uds report` starts in well under a second: the standard library
plus the benchmark formulas and leaderboard order it shares with `uds leaderboard`
(uds_leaderboard/rows.py, numpy) and the published meta-evaluation table
(meta_eval/published.py). Modules: `readers` (files -> `Results`), `model` (the data model),
`table` (one leaderboard row per model, merged from every source), `columns` (headline columns,
groups, directions), `meta` (the meta-evaluation beside the published values), `payload` (data
model -> the JSON the pages read), `writer` (the site folder), `serve` (optional localhost server).
The pages: assets/app.js (core, charts, router), leaderboard.js, model.js, meta.js.
"""
