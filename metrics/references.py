"""Checks on the reference models a metric compares the evaluated model with.

Code lengths of two models are comparable only when both tokenise the text the same way: every
teacher-forced sweep encodes with the evaluated model's tokenizer, so a reference with another
vocabulary would score different token ids and its bits would mean nothing.
"""

from __future__ import annotations

from typing import Callable

from transformers import PreTrainedTokenizerBase

from checkpoints.specs import has_own_tokenizer, load_tokenizer
from metrics.context import EvalContext
from metrics.work import WorkKey
from uds_core.errors import UdsInputError
from uds_core.fingerprint import tokenizer_hash


def own_tokenizer(spec: str) -> PreTrainedTokenizerBase | None:
    """The tokenizer a checkpoint carries, None for a folder without tokenizer files."""
    return load_tokenizer(spec) if has_own_tokenizer(spec) else None


def check_reference_tokenizer(ctx: EvalContext, role: str,
                              load: Callable[[str], PreTrainedTokenizerBase | None] | None = None) -> None:
    """Raise UdsInputError when the `role` model carries a tokenizer whose vocabulary differs from
    the evaluated model's (a checkpoint without tokenizer files shares the run's); checked once per
    spec. `load`: spec -> its own tokenizer or None (default `own_tokenizer`)."""
    load = load or own_tokenizer
    spec = ctx.models.spec(role)
    own = tokenizer_hash(ctx.tokenizer)

    def check() -> bool:
        tok = load(spec)
        if tok is not None:
            theirs = tokenizer_hash(tok)
            if theirs != own:
                raise UdsInputError(f"the {role} model {spec} has another tokenizer than the evaluated model "
                                    f"(vocabulary hash {theirs} vs {own}); bits are comparable only under one "
                                    "tokenizer")
        return True
    ctx.work.memo(WorkKey("tokenizer_check", (spec,), (own,)), check)
