"""The analyses: experiments with their own data, runs and reports, built on the metrics.

`capacity` (memorisation capacity in bits per parameter, spec-probes §1.2), `probe` (verbatim vs
semantic memorisation, spec-probes §2) and `audit` (the causal deletion audit of retrieval-backed
models, spec-probes §3). Their commands are front-door modules in `uds/commands/`.
"""
