"""The YAML keys of the plug-in's metric configs, with their defaults (one source for the handlers
and for the generated config files), and their validation.

Open-Unlearning calls a handler as `fn(model, **kwargs)`: kwargs hold what OU adds (tokenizer,
template_args and, when the YAML names datasets / collators, the loaded `data` / `collators`)
plus every key of the metric's YAML. Any other key is a typo and fails with one line naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from checkpoints.splits import SPLITS
from uds_core.arch import Component
from uds_core.engine import EngineSettings
from uds_core.defaults import MAX_NEW_TOKENS
from uds_core.errors import UdsInputError
from uds_core.formula import TAU
from uds_core.parity import MODES, SPEC, ParityMode

# what the generated YAML files write for forget_split: Hydra interpolates OU's own eval config
# (`forget_split=forget01` on OU's command line sets eval.tofu.forget_split)
FORGET_SPLIT_YAML = "${eval.tofu.forget_split}"
OU_KEYS = frozenset({"tokenizer", "template_args", "data", "collators", "handler", "generation_args"})


@dataclass(frozen=True)
class AnchorOptions:
    """Keys every plug-in YAML has: the anchors, the annotated data and the batch size."""
    full_model: str = "full"        # checkpoint spec of the full anchor (default: OU's TOFU full model)
    # checkpoint spec of the retain anchor (default: forget_split's, retain90's for forget10)
    retain_model: str | None = None
    # annotated forget file (default: forget_split's rows of the one that goes with full_model)
    data_path: str | None = None
    forget_split: str | None = None  # OU's eval.tofu.forget_split (the YAML interpolates it); None: forget10
    batch_size: int = 8

    @classmethod
    def from_kwargs(cls, handler: str, kwargs: Mapping[str, Any]):
        """The options among OU's kwargs; UdsInputError naming an unknown key or a bad value."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(k for k in kwargs if k not in known and k not in OU_KEYS)
        if unknown:
            raise UdsInputError(f"metric handler {handler!r}: unknown key {unknown[0]!r} in its YAML "
                                f"(known: {', '.join(sorted(known))})")
        opts = cls(**{k: kwargs[k] for k in known if k in kwargs and kwargs[k] is not None})
        opts.validate(handler)
        return opts

    def validate(self, handler: str) -> None:
        if self.forget_split is not None and self.forget_split not in SPLITS:
            raise UdsInputError(f"metric handler {handler!r}: unknown forget_split {self.forget_split!r} "
                                f"(choose {', '.join(SPLITS)})")
        if int(self.batch_size) < 1:
            raise UdsInputError(f"metric handler {handler!r}: batch_size must be at least 1, got {self.batch_size}")


@dataclass(frozen=True)
class UdsOptions(AnchorOptions):
    """Keys of `eval/tofu_metrics/uds.yaml` (docs/design.md, Open-Unlearning plug-in)."""
    tau: float = TAU
    component: Component = "block"
    s1_cache: bool = True

    def validate(self, handler: str) -> None:
        super().validate(handler)
        if not self.tau >= 0:
            raise UdsInputError(f"metric handler {handler!r}: tau must be >= 0, got {self.tau}")
        EngineSettings(component=self.component, batch_size=int(self.batch_size)).validate()


@dataclass(frozen=True)
class MetricOptions(AnchorOptions):
    """Keys of `eval/tofu_metrics/uds_<key>.yaml`: the anchor keys plus the registry metric's."""
    key: str = ""                   # registry metric key (metrics/registry.py)
    parity: ParityMode = SPEC       # docs/parity.md
    max_new_tokens: int = MAX_NEW_TOKENS
    system_prompt: str | None = None   # None: template_args.system_prompt of OU's model config; "": none
    tofu_dir: str | None = None     # TOFU JSON files (real anchors; default $UDS_TOFU_DIR)
    fluency_base: str | None = None    # base LM of the fluency proxy (tiny default: <preset>/base)

    def validate(self, handler: str) -> None:
        super().validate(handler)
        if self.parity not in MODES:
            raise UdsInputError(f"metric handler {handler!r}: unknown parity {self.parity!r} "
                                f"(choose {', '.join(MODES)})")


def yaml_defaults(cls) -> dict[str, Any]:
    """Field -> default, in declaration order (what the generated YAML files write; forget_split
    as OU's interpolation, written bare by gen_configs)."""
    return {f.name: FORGET_SPLIT_YAML if f.name == "forget_split" else f.default for f in fields(cls)}
