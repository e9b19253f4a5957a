"""The causal deletion audit of a retrieval-backed LM (SPEC-probes 3): scoring, protocol, report."""
