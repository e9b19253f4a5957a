"""The metric families, one module each; every module registers its metrics when imported
(`metrics.spec.register`). `metrics.registry` imports every module of this package, so a new
family is one new file here. Families defined in other packages (the probe's `verbatim_rate` /
`semantic_acc` in `uds_analyses.probe.metric`) declare an entry point in the group `uds.metrics`.
A family module imports only light modules at its
top (the registry is read without torch: `uds report`); what computes imports the rest when it runs."""
