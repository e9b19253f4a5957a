"""The data of one world (synthetic or TOFU), as plain records.

Every QA split uses the annotated-QA schema of docs/design.md so that real and tiny data go
through the same code:

    {"idx": int, "question": str, "answer": str,
     "prefix": str | None, "entity": str | None,     # answer == prefix + continuation; entity in it
     "paraphrased_question": str, "paraphrased_answer": str,
     "perturbed_answers": [str, ...],                  # 5 for QA splits, 3 for real_authors/world_facts
     "author": str}

`prefix`/`entity` are None only for TOFU forget items that the annotated file does not cover
(33 of 400); those are trained on and used by output metrics but never by UDS.
Utility splits (`real_authors`, `world_facts`) carry `question`, `answer`, `perturbed_answers`
(3 wrong answers) and `options` (4 choices, the answer among them).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

QA_SPLITS = ("forget", "retain", "holdout", "retain_eval", "real_authors", "world_facts")


@dataclass
class World:
    """All splits of one world.

    forget, retain: fine-tuning QA (full = forget + retain, retain model = retain only).
    holdout: QA about authors never trained on (MIA non-members, retain-model baseline).
    retain_eval: the retain subset that utility metrics evaluate (TOFU `retain_perturbed`).
    real_authors, world_facts: utility QA about public entities the base model knows.
    public_text: base-model pretraining documents; holds no forget/retain/holdout fact.
    forget_bios: forget facts rewritten as biographies (knowledge-present pool).
    other_bios: biographies of entities unrelated to every split (knowledge-absent pool).
    idk: "I don't know"-style replies (IdkNLL, IdkDPO).
    """

    kind: str  # "synthetic" or "tofu"
    forget: list[dict] = field(default_factory=list)
    retain: list[dict] = field(default_factory=list)
    holdout: list[dict] = field(default_factory=list)
    retain_eval: list[dict] = field(default_factory=list)
    real_authors: list[dict] = field(default_factory=list)
    world_facts: list[dict] = field(default_factory=list)
    public_text: list[str] = field(default_factory=list)
    forget_bios: list[str] = field(default_factory=list)
    other_bios: list[str] = field(default_factory=list)
    idk: list[str] = field(default_factory=list)

    def uds_items(self) -> list[dict]:
        """Forget items with an entity annotation: the data UDS scores."""
        return [it for it in self.forget if it.get("entity")]

    def save(self, folder: Path) -> None:
        """One JSON file per split under `folder` (`forget.json` is what `uds score --data` reads)."""
        folder.mkdir(parents=True, exist_ok=True)
        for f in fields(self):
            value = getattr(self, f.name)
            (folder / f"{f.name}.json").write_text(json.dumps(value, ensure_ascii=False, indent=1))
        (folder / "uds_data.json").write_text(json.dumps(self.uds_items(), ensure_ascii=False, indent=1))

    @classmethod
    def load(cls, folder: Path) -> "World":
        kw = {f.name: json.loads((folder / f"{f.name}.json").read_text()) for f in fields(cls)}
        return cls(**kw)

    def to_dict(self) -> dict:
        return asdict(self)
