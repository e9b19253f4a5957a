"""The baseline metrics (`registry.BASELINE_METRICS`), the TOFU utility metrics, UDS and memorisation
in bits as metrics (spec §3-4, spec-probes §1.1), and the evaluation session.

What a metric is and how a family registers itself: `spec`. The families, one file each:
`families/`. The registry that finds them and the key lists: `registry`. Pure formulas: `stats`,
`memorization`, `mia`, `ranking` (the one ROC AUC and Spearman), `rouge_metrics`,
`representation`, `utility`, `mem_bits`, `aggregate`. Model plumbing: `encoding`, `forward`,
`hidden`, `fluency`. Shared work of a run: `context` with its `work` cache. What is evaluated,
resolved and loaded once: `session`. The command `uds metrics` lives in `uds/commands/metrics.py`.
"""
