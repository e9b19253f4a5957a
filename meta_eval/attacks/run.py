"""Running attacks on one model and reading the result against the retain model.

`run_attacks` runs the named attacks one after another on a fresh copy of the model each, scores
every answer with the knowledge check's matching (`checkpoints.world.matching.entity_hit`), and
keeps going when one attack cannot run here (`AttackUnavailable`: reported, value None) or fails
(reported with its error). `attack_report` puts a model's outcomes beside the retain model's: the
recovered knowledge above what could be learned or guessed without ever having known.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import torch

from checkpoints.world.matching import entity_hit
from meta_eval.attacks import ATTACKS
from meta_eval.attacks.base import AttackData, AttackSettings, AttackUnavailable, Target
from uds_core.errors import UdsInputError


@dataclass
class Outcome:
    """One attack on one model. `share`: the recovered knowledge (None when it did not run);
    `hits`: per item of `AttackData.items`, whether the answer named the entity; `unavailable`:
    the attack cannot run on this model here (a missing kernel), as opposed to a failure."""
    name: str
    share: float | None
    hits: list[int] | None
    answers: list[str] | None
    seconds: float
    error: str | None = None
    unavailable: bool = False
    detail: dict = field(default_factory=dict)


def attack_names(text: str) -> list[str]:
    """`all` or comma-separated attack names, in `ATTACKS` order; bad input names the valid ones."""
    if text.strip() == "all":
        return list(ATTACKS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in ATTACKS]
    if bad or not names:
        raise UdsInputError(f"unknown attack {', '.join(bad) or repr(text)}; valid: all, {', '.join(ATTACKS)}")
    return [n for n in ATTACKS if n in names]


def loader(device: str) -> Callable[..., torch.nn.Module]:
    """`load(spec, **kwargs)`: a fresh float32 copy of a checkpoint on `device`, in eval mode."""
    from checkpoints.specs import load_model

    def load(spec: str, **kwargs) -> torch.nn.Module:
        return load_model(spec, device=device, dtype=torch.float32, **kwargs).eval()
    return load


def run_attacks(target: Target, data: AttackData, names: Sequence[str], s: AttackSettings,
                log: Callable[[str], None] = lambda line: print(line, file=sys.stderr)) -> dict[str, Outcome]:
    """Each named attack on `target`, in order; one that cannot run or fails is said on `log` and
    recorded, and the others go on."""
    out = {}
    for name in names:
        t0 = time.time()
        try:
            answered = ATTACKS[name].answers(target, data, s)
        except AttackUnavailable as exc:
            log(f"attack {name} on {target.spec}: unavailable here ({exc}); the other attacks go on")
            out[name] = Outcome(name, None, None, None, round(time.time() - t0, 1), str(exc), unavailable=True)
            continue
        except Exception as exc:  # one broken attack must not lose the others
            log(f"attack {name} on {target.spec} failed: {type(exc).__name__}: {exc}")
            out[name] = Outcome(name, None, None, None, round(time.time() - t0, 1), f"{type(exc).__name__}: {exc}")
            continue
        hits = [int(entity_hit(a, e)) for a, e in zip(answered.texts, data.entities)]
        out[name] = Outcome(name, sum(hits) / len(hits) if hits else None, hits, answered.texts,
                            round(time.time() - t0, 1), detail=answered.detail)
    return out


def attack_report(target: Target, retain: str, mine: dict[str, Outcome], theirs: dict[str, Outcome],
                  s: AttackSettings, data: AttackData) -> dict:
    """The result document of `uds attack`: per attack the model's and the retain model's recovered
    knowledge, the difference, the recipe, the seconds, and why an attack did not run."""
    rows = {}
    for name, o in mine.items():
        r = theirs.get(name)
        above = None if o.share is None or r is None or r.share is None else o.share - r.share
        rows[name] = {"summary": ATTACKS[name].summary, "model": o.share, "retain": None if r is None else r.share,
                      "above_retain": above, "recipe": ATTACKS[name].recipe(s),
                      "seconds": {"model": o.seconds, "retain": None if r is None else r.seconds},
                      "error": {"model": o.error, "retain": None if r is None else r.error},
                      "unavailable": {"model": o.unavailable, "retain": bool(r and r.unavailable)},
                      "detail": {"model": o.detail, "retain": None if r is None else r.detail}}
    return {"model": target.spec, "retain": retain, "full": target.full, "n_questions": len(data.items),
            "halves": [list(h) for h in data.halves], "settings": s.to_dict(),
            "measure": "share of the forget questions whose greedy answer names the entity "
                       "(each question answered once, held out from what the attack fitted)",
            "attacks": rows}
