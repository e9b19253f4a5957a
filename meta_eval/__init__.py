"""Meta-evaluation of unlearning metrics (spec §5) and the TOFU benchmark aggregation (spec §6).

Pure math: `faithfulness` (P/N AUC, bootstrap interval, threshold filter), `robustness` (Q, R,
filters, HM), `benchmark` (Mem, Privacy, Utility, Overall). From measurements to documents:
`assemble`, `summary`, `plots`. Model work: `perturb` (the settings: NF4, relearning),
`population` (which models), `store` (on-disk cache), `measure` (metrics per model and setting).
Leaderboard: `leaderboard_inputs`, `leaderboard_rows` (rows, default order, printing; shared with
`uds report`), `leaderboard`. The published meta-evaluation table (spec §5.7): `published`. Campaigns:
`campaign` (build and measure, one unit at a time), `campaign_files` (layout, sealing), and from the
files alone `campaign_read` (valid files), `campaign_status` (counts, what each statistic needs),
`pool_variants` (per-variant breakdown, knowledge check), `campaign_assemble` (the document). The
commands live in `uds/commands/meta_eval.py` (`uds meta-eval`) and `uds/commands/leaderboard.py`
(`uds leaderboard`).
"""
