"""Forget/retain pairs for unlearning: each forget example with a seeded-random retain example.

Each forget QA is used in both encodings the tiny models were fine-tuned on: the chat template
(what output metrics read) and the raw `Question:/Answer:` text (what UDS reads). A small model
does not carry knowledge across formats by itself, so unlearning only the chat form would leave
the raw form, and the UDS signal, untouched (OU trains on the chat form only; this is the
tiny world's documented departure, mirroring its fine-tuning).

As in OU, the retain partner and the "I don't know" reply are drawn uniformly per access, from
a generator seeded once: the same training run draws the same sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import torch
from transformers import PreTrainedTokenizerBase

from checkpoints.world.encode import BOTH_FORMS, encode_raw_qa
from checkpoints.world.train import Batch, collate
from uds_core.chat import encode_chat
from uds_core.errors import UdsInputError

Example = dict[str, list[int]]
Encoder = Callable[[PreTrainedTokenizerBase, str, str], Example]
FORMS: dict[str, Encoder] = {"chat": encode_chat, "raw": encode_raw_qa}


@dataclass(frozen=True)
class UnlearnSets:
    """What a method unlearns and keeps: `forget` and `retain` QA items ({"idx", "question",
    "answer", ...}); `idk`, "I don't know" replies (IdkDPO, IdkNLL); `alternates`, idx -> alternate
    answers (AltPO; None: sampled from the model itself before training); `forms`, the encodings
    each forget item is trained in (the tiny world uses both; Open-Unlearning trains real models
    on the chat form only)."""
    forget: Sequence[dict]
    retain: Sequence[dict]
    idk: Sequence[str] = ()
    alternates: Mapping[int, Sequence[str]] | None = None
    forms: Sequence[str] = BOTH_FORMS


class PairedData(Sequence):
    """Item i = forget QA i // len(forms) in form `forms[i % len(forms)]`, as a dict of views:
    "forget" (true answer), "idk" (random idk reply), "alt" (one of the item's alternate
    answers, random), "retain" (a random retain example, in any of `forms`). Only `views` are
    built; each is {"input_ids", "labels"} token lists (labels -100 outside answer + eos)."""

    def __init__(self, tok: PreTrainedTokenizerBase, forget: list[dict], retain: list[dict],
                 views: Sequence[str], seed: int = 0, idk: Sequence[str] = (),
                 alternates: Mapping[int, Sequence[str]] | None = None, forms: Sequence[str] = BOTH_FORMS):
        if "idk" in views and not idk:
            raise UdsInputError("this method needs 'I don't know' replies (idk), none were given")
        if "alt" in views and not alternates:
            raise UdsInputError("this method needs alternate answers for the forget items, none were given")
        self.tok, self.forget, self.views, self.forms = tok, forget, tuple(views), tuple(forms)
        self.idk, self.alternates = list(idk), dict(alternates or {})
        self.retain = ([FORMS[f](tok, it["question"], it["answer"]) for it in retain for f in self.forms]
                       if "retain" in views else [])
        self.rng = torch.Generator().manual_seed(seed)

    def __len__(self) -> int:
        return len(self.forget) * len(self.forms)

    def _pick(self, options: Sequence):
        return options[int(torch.randint(len(options), (1,), generator=self.rng))]

    def __getitem__(self, i: int) -> dict[str, Example]:
        item, encode = self.forget[i // len(self.forms)], FORMS[self.forms[i % len(self.forms)]]
        answers = {"forget": lambda: item["answer"], "idk": lambda: self._pick(self.idk),
                   "alt": lambda: self._pick(self.alternates[item["idx"]])}
        out = {v: encode(self.tok, item["question"], answers[v]()) for v in self.views if v != "retain"}
        if "retain" in self.views:
            out["retain"] = self._pick(self.retain)
        return out


def collate_views(items: Sequence[Mapping[str, Example]], pad_id: int) -> dict[str, Batch]:
    """List of view dicts -> one padded batch per view; row k of every view is item k."""
    return {view: collate([it[view] for it in items], pad_id) for view in items[0]}
