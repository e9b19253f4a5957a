"""The 19 baseline metrics and the TOFU utility metrics (SPEC.md 3-4), one registry.

Pure formulas: `stats`, `memorization`, `mia`, `rouge_metrics`, `representation`, `utility`,
`aggregate`. Model plumbing: `encoding`, `forward`, `generation`, `hidden`, `fluency`. Shared work
per run: `context`. The table of metrics: `registry`. The command: `command` (`uds metrics`).
"""
