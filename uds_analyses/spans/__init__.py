"""Validation of the automatic entity spans (uds_core/spans) against hand or generated ones:
span agreement (`agreement`) and UDS with automatic vs given spans on the same models
(`uds_compare`); `experiments/span_validation.py` runs both and writes results/spans/."""
