"""The full and retain anchors of the OU handlers: one evaluation session per (anchors, placement)
in this process, so they are resolved and loaded once, on the evaluated model's device and dtype
and with its attention kernel (S1 and S2 run under one setting)."""

from __future__ import annotations

import torch
import torch.nn as nn
from transformers import PreTrainedTokenizerBase

from uds_core.arch import attention_implementation
from metrics.session import EvalSession, Placement
from uds.ou.options import AnchorOptions

Loaded = tuple[nn.Module, PreTrainedTokenizerBase]
_SESSIONS: dict[tuple, EvalSession] = {}


def placement(model: nn.Module) -> tuple[str, torch.dtype]:
    """(device string, parameter dtype) of a loaded model, e.g. ("cpu", torch.float32)."""
    param = next(model.parameters())
    return str(param.device), param.dtype


def anchor_session(opts: AnchorOptions, like: nn.Module) -> EvalSession:
    """The session of the YAML's anchors placed like the model `like` (a wrong path or name fails
    here with one line naming it). The full anchor stands in the evaluated-model role: its world
    and annotated file are the defaults of the metrics; OU's own model is handed to each run. The
    YAML's `forget_split` picks the split's annotated rows and, by default, its retain anchor. A
    `data_path` file is checked against the dataset OU loaded (`handlers.check_rows`), not against
    TOFU: OU's dataset may be TOFU-shaped without being TOFU."""
    device, dtype = placement(like)
    attn = attention_implementation(like)
    tofu_dir = getattr(opts, "tofu_dir", None)
    key = (opts.full_model, opts.retain_model, opts.data_path, opts.forget_split, tofu_dir, device, dtype, attn)
    if key not in _SESSIONS:
        _SESSIONS[key] = EvalSession(opts.full_model, full=opts.full_model, retain=opts.retain_model,
                                     data=opts.data_path, split=opts.forget_split, tofu_dir=tofu_dir,
                                     placement=Placement(device, dtype, attn_implementation=attn),
                                     check_split=False)
    return _SESSIONS[key]


def load_anchor(session: EvalSession, spec: str, tokenizer: PreTrainedTokenizerBase | None = None) -> Loaded:
    """(model, tokenizer) of the checkpoint `spec`; a folder without tokenizer files gets
    `tokenizer` (the full model's)."""
    return session.model(spec), session.tokenizer(spec, fallback=tokenizer)
