"""The analyses: experiments with their own data, runs and reports, built on the metrics.

`capacity` (memorisation capacity in bits per parameter, SPEC-probes 1.2), `probe` (verbatim vs
semantic memorisation, SPEC-probes 2) and `audit` (the causal deletion audit of retrieval-backed
models, SPEC-probes 3). Their commands are front-door modules in `uds/commands/`.
"""
