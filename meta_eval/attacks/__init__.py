"""What an attacker recovers: attacks that try to bring forgotten knowledge back, each a small
plug-in (`base.Attack`: a name, its recipe, its answers), scored by the campaign's knowledge check.

`ATTACKS` lists them in report order: `plain` (no attack: the knowledge check), `relearn`
(relearning on disjoint facts), `quant_int8` and `quant_fp4` (quantisation beyond NF4), `ablate`
(directional ablation), `fewshot` and `roleplay` (prompts). `run.run_attacks` runs some of them on
one model; `uds attack` runs them on a model and on its retain model.
"""

from __future__ import annotations

from meta_eval.attacks import ablate, plain, prompts, quantise, relearn
from meta_eval.attacks.base import Attack

ATTACKS: dict[str, Attack] = {a.name: a for a in (plain, relearn, quantise.INT8, quantise.FP4, ablate,
                                                  prompts.FEWSHOT, prompts.ROLEPLAY)}
