"""Parity modes (`--parity` of `uds score`, `uds metrics`, `uds meta-eval`): whose numerics a run
reproduces. docs/parity.md tables every difference.

- `spec` (default): docs/spec.md as written.
- `reference`: the reference UDS implementation's numerics: every probability floored at 1e-12
  before the geometric means of ParaProb and the Truth Ratios (its `geometric_mean` clips), the
  reference's 1e-12 epsilons in the utility Truth Ratio and normalised probability, Logit Lens
  log-probs and per-item means and the Fisher-mask scores and means in the model dtype (bf16 for
  bf16 checkpoints), and UDS with the last-layer quirk (`--reference-last-layer`).
- `open-unlearning`: Open-Unlearning's attention mask (`input_ids != pad_id`: every position
  holding the tokenizer's pad id is masked, pad = eos when the tokenizer has no pad) and its
  harmonic mean for model utility (`scipy.stats.hmean`: no epsilon, a zero gives 0).
"""

from __future__ import annotations

from typing import Literal

from uds_core.errors import UdsInputError

SPEC, REFERENCE, OPEN_UNLEARNING = "spec", "reference", "open-unlearning"
MODES = (SPEC, REFERENCE, OPEN_UNLEARNING)
ParityMode = Literal["spec", "reference", "open-unlearning"]   # MODES as a type
REFERENCE_EPS = 1e-12       # the reference's epsilon where OU (and the spec's default) use 1e-10


def check_mode(mode: str) -> str:
    """`mode` if it is one of MODES, else UdsInputError naming the valid ones."""
    if mode not in MODES:
        raise UdsInputError(f"unknown parity mode {mode!r}; valid: {', '.join(MODES)}")
    return mode


def resolve_alias(parity: str | None, alias_flag: bool, alias_name: str, alias_mode: str) -> str:
    """The parity mode from `--parity` (None when not given) and an old boolean flag that stands
    for `alias_mode`; a flag that contradicts an explicit `--parity` is bad input."""
    if alias_flag:
        if parity not in (None, alias_mode):
            raise UdsInputError(f"{alias_name} means --parity {alias_mode}; it contradicts --parity {parity}")
        return alias_mode
    return check_mode(parity or SPEC)
