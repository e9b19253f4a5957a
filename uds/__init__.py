"""Unlearning Depth Score: two-stage activation patching for unlearned language models."""

__version__ = "0.1.0"
