"""The causal deletion audit of a retrieval-backed LM (spec-probes §3): scoring, protocol, report."""
