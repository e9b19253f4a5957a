"""The measurement settings of a zoo from a parsed command line: what `uds meta-eval` and
`uds campaign` measure every (model, setting) with, and the relearning recipe of their relearned
setting. One owner, so the two commands check the same options the same way.

Imports of torch-side modules stay inside the function (registering a command stays instant).
"""

from __future__ import annotations

import argparse

from uds_core.errors import UdsInputError
from uds_core.parity import SPEC, ParityMode


def measurement_settings(args: argparse.Namespace, zoo, *, device: str, parity: ParityMode = SPEC):
    """(EvalSettings, relearning recipe) from `--batch-size`, `--max-new-tokens` and `--relearn-lr`
    (None: the default rate) for `zoo`'s preset, measured on `device` under `parity`."""
    from meta_eval.perturb import RELEARN_LR, zoo_relearn_config
    from metrics.context import EvalSettings

    if args.batch_size < 1 or args.max_new_tokens < 1:
        raise UdsInputError("--batch-size and --max-new-tokens must be at least 1")
    lr = RELEARN_LR if args.relearn_lr is None else args.relearn_lr
    if not lr > 0:
        raise UdsInputError(f"--relearn-lr must be positive, got {lr}")
    settings = EvalSettings(batch_size=args.batch_size, max_new_tokens=args.max_new_tokens,
                            system_prompt=zoo.system_prompt, parity=parity, device=device, progress=False)
    return settings, zoo_relearn_config(zoo.preset, lr)
