"""Verbatim vs semantic memorisation probe (spec-probes §2): corpus, prompt ladder, matching,
refusals, per-document summary and heatmap. `uds probe` and the `verbatim_rate` / `semantic_acc`
metrics are built from these modules."""
