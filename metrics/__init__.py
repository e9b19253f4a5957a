"""The 19 baseline metrics and the TOFU utility metrics (SPEC.md 3-4), one registry.

Pure formulas: `stats`, `memorization`, `mia` (and the toolkit's one ROC AUC), `rouge_metrics`,
`representation`, `utility`, `aggregate`. Model plumbing: `encoding`, `forward`, `hidden`,
`fluency` (generation is `core.generation`). Shared work per run: `context` with its `work` cache
(`work`). What a metric returns: `result`. The table of metrics: `registry`; UDS as one of them:
`uds_metric`. The command `uds metrics` lives in `uds/commands/metrics.py`.
"""
