"""One evaluation of a model while it trains: UDS against fixed anchors plus cheap output metrics.

`LiveEvaluator` is the single implementation behind `UdsCallback`, whichever trainer drives it.
The anchors (full, retain) are resolved when it is made (a wrong spec fails there), loaded once
per process on the trained model's device, dtype and attention kernel when training begins, and
checked patchable with the trained model. Each evaluation then runs:
- UDS through `EvalSession.score_uds` (the path of `uds score`): S1 from the S1 cache (computed
  and saved at the first evaluation when missing), the full model's capture passes kept between
  evaluations (`engine.TargetRuns`: the full model does not change), only the trained model's
  own capture pass and the suffix passes redone: a few forward passes;
- the output metrics through the metric registry (`metrics.registry.evaluate`), the trained
  model in the "model" role of a fresh context (its weights changed since the last one), with
  the settings of `uds metrics` (fast measurement paths, batch 8, the session's system prompt).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn

from uds_core.arch import attention_implementation
from uds_core.compat import check_compatible
from uds_core.engine import EngineSettings, TargetRuns
from uds_core.errors import UdsInputError
from uds_core.formula import TAU
from metrics.context import EvalSettings
from metrics.registry import REGISTRY, evaluate, needs
from metrics.session import EvalSession, Placement
from uds.callbacks.isolation import preserved_rng
from uds.ou.anchors import placement

LIVE = "training:model"   # the ModelPool spec of the model being trained
DEFAULT_METRICS = ("prob", "truth_ratio", "es", "retain_q_prob")
_SESSIONS: dict[tuple, EvalSession] = {}


def metric_keys(keys: Sequence[str]) -> tuple[str, ...]:
    """Registry keys to record beside UDS (UdsInputError naming an unknown one)."""
    keys = tuple(dict.fromkeys(k.strip() for k in keys if k.strip()))
    bad = [k for k in keys if k not in REGISTRY or k == "uds"]
    if bad:
        valid = ", ".join(k for k in REGISTRY if k != "uds")
        why = " (UDS is always recorded)" if bad[0] == "uds" else ""
        raise UdsInputError(f"curve metrics: unknown key {bad[0]!r}{why}; valid: {valid}")
    return keys


class LiveEvaluator:
    """UDS and output metrics of a model under training (module docstring)."""

    def __init__(self, full: str, retain: str, *, data: str | None = None, metrics: Sequence[str] = DEFAULT_METRICS,
                 tau: float = TAU, batch_size: int = 8, s1_cache: bool = True, tofu_dir: str | None = None):
        if not tau >= 0:
            raise UdsInputError(f"curve tau must be >= 0, got {tau}")
        EngineSettings(batch_size=int(batch_size)).validate()
        self.full, self.retain, self.data, self.tofu_dir = full, retain, data, tofu_dir
        self.metrics = metric_keys(metrics)
        self.tau, self.batch_size, self.s1_cache = float(tau), int(batch_size), bool(s1_cache)
        # a wrong anchor spec or data path fails now, before any training
        self._probe = EvalSession(full, full=full, retain=retain, data=data, tofu_dir=tofu_dir)
        self.session: EvalSession | None = None
        self.tokenizer = None
        self.runs = TargetRuns()

    def orientation(self) -> dict[str, str]:
        """Recorded key -> knowledge | erasure | utility (metrics.spec)."""
        return {"uds": "erasure", **{k: REGISTRY[k].orientation for k in self.metrics}}

    def attach(self, model: nn.Module, tokenizer=None) -> None:
        """Load the anchors placed like `model` and check them against it (UdsInputError naming
        the mismatch: architecture, layers, hidden size, tokenizer vocabulary, embedding rows), and
        read the data every evaluation needs; the training's random generators are left as found."""
        with preserved_rng():
            self._attach(model, tokenizer)

    def _attach(self, model: nn.Module, tokenizer) -> None:
        device, dtype = placement(model)
        attn = attention_implementation(model)
        key = (self.full, self.retain, self.data, self.tofu_dir, device, dtype, attn)
        if key not in _SESSIONS:
            _SESSIONS[key] = EvalSession(self.full, full=self.full, retain=self.retain, data=self.data,
                                         tofu_dir=self.tofu_dir, placement=Placement(device, dtype,
                                                                                     attn_implementation=attn))
        s = self.session = _SESSIONS[key]
        full_spec, retain_spec = s.spec_of("full"), s.spec_of("retain")
        full = (s.model(full_spec), s.tokenizer(full_spec))
        retain = (s.model(retain_spec), s.tokenizer(retain_spec, fallback=full[1]))
        self.tokenizer = tokenizer if tokenizer is not None else full[1]
        check_compatible({f"full ({full_spec})": full, f"retain ({retain_spec})": retain,
                          "the trained model": (model, self.tokenizer)})
        rows = {name: m.get_input_embeddings().weight.shape[0] for name, m in (("full", full[0]), ("trained", model))}
        if rows["full"] != rows["trained"]:
            raise UdsInputError(f"models are not compatible: embedding rows differ: full ({full_spec}) has "
                                f"{rows['full']}, the trained model has {rows['trained']}")
        s.records()   # a data file without annotations fails here, before training
        if self.metrics:
            s.world()     # so do the output metrics' splits (TOFU files for real anchors, offline)

    def evaluate(self, model: nn.Module) -> dict:
        """{"uds", "n_scored", "s1_cache", <metric key>: value, ...} of `model` as it is now (the
        caller puts it in eval mode without gradients: `isolation.evaluation_mode`)."""
        if self.session is None:
            raise RuntimeError("LiveEvaluator.evaluate before attach")
        s = self.session
        run, _, _ = s.score_uds(EngineSettings(batch_size=self.batch_size), self.tau, use_cache=self.s1_cache,
                                model=model, runs=self.runs)
        out = {"uds": float(run.result.mean), "n_scored": sum(v is not None for v in run.result.uds),
               "s1_cache": run.state}
        if self.metrics:
            out.update(self._metrics(model))
        return out

    def _metrics(self, model: nn.Module) -> dict[str, float | None]:
        s = self.session
        settings = EvalSettings(batch_size=self.batch_size, system_prompt=s.system_prompt(),
                                device=placement(model)[0], progress=False)
        records = needs(self.metrics, "states") or needs(self.metrics, "fisher")
        ctx = s.context(settings, self.metrics, records=records, roles={**s.roles, "model": LIVE},
                        loader=lambda spec: model if spec == LIVE else s.model(spec), tokenizer=self.tokenizer)
        with torch.no_grad():
            results = evaluate(ctx, self.metrics)
        return {k: (None if r.value is None else float(r.value)) for k, r in results.items()}

    def settings(self) -> dict:
        """What a curve's header records about the evaluation."""
        return {"full": self.full, "retain": self.retain, "data": self.data or self._probe.data, "tau": self.tau,
                "batch_size": self.batch_size, "metrics": list(self.metrics), "orientation": self.orientation(),
                "s1_cache": self.s1_cache}
