"""Meta-evaluation of unlearning metrics (spec §5) and the TOFU benchmark aggregation (spec §6).

Pure math: `faithfulness` (P/N AUC, bootstrap interval, threshold filter), `robustness` (Q, R,
filters, HM), `benchmark` (Mem, Privacy, Utility, Overall). From measurements to documents:
`assemble`, `summary`, `plots`. Model work: `perturb` (the settings: NF4, relearning),
`population` (which models), `store` (on-disk cache), `measure` (metrics per model and setting).
The leaderboards built on the benchmark aggregation are the layer above, `uds_leaderboard`. The
published meta-evaluation table (spec §5.7): `published`. Campaigns: the `campaign` sub-package
(build and measure one unit at a time, the files' layout, and from the files alone the
meta-evaluation and attack documents); `pool_variants` (per-variant breakdown, knowledge check).
The command lives in `uds/commands/meta_eval.py` (`uds meta-eval`).
"""
