"""Meta-evaluation of unlearning metrics (SPEC.md 5) and the TOFU benchmark aggregation (SPEC.md 6).

Pure math: `faithfulness` (P/N AUC, bootstrap interval, threshold filter), `robustness` (Q, R,
filters, HM), `benchmark` (Mem, Privacy, Utility, Overall). From measurements to documents:
`assemble`, `summary`, `plots`. Model work: `perturb` (NF4, relearning), `zoo` (which models),
`store` (on-disk cache), `measure` (metrics per model and setting). Leaderboard:
`leaderboard_inputs`, `leaderboard`. Commands: `command` (`uds meta-eval`), `leaderboard_command`
(`uds leaderboard`).
"""
