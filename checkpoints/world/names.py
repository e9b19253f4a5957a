"""How a tiny-world model is named as a spec: `tiny:<preset>[-<seed>]/<model>` (parsed by
`checkpoints.specs`, which re-exports these; here so that the builder names parents without
importing the spec resolver)."""

from __future__ import annotations

DEFAULT_SEED = 0


def tiny_tag(preset: str, seed: int = DEFAULT_SEED) -> str:
    """The world part of a tiny spec: `small`, or `small-3` for a world built with `--seed 3`."""
    return preset if seed == DEFAULT_SEED else f"{preset}-{seed}"


def tiny_spec(preset: str, seed: int, name: str) -> str:
    """`tiny:<preset>[-<seed>]/<name>`, the inverse of `checkpoints.specs.parse_tiny`."""
    return f"tiny:{tiny_tag(preset, seed)}/{name}"
