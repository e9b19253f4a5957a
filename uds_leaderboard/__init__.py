"""Leaderboards of unlearned models (spec §6): the benchmark aggregation's rows (`meta_eval.benchmark`)
read from result files and shown.

`inputs` (the result files it reads: uds's, Open-Unlearning's summaries, the published records),
`rows` (rows, their default order, the printing of numbers; shared with `uds report`), `render`
(Markdown, CSV, HTML, the Mem-Privacy scatter). A leaderboard ranks models by measured values; it
is not a meta-evaluation of the metrics, so it sits above `meta_eval` as its own layer. The
command is `uds/commands/leaderboard.py` (`uds leaderboard`).
"""
