"""Refusal detection (spec-probes §2.5): an output that contains a refusal / "I don't know" phrase.

Phrases: TOFU's `idontknow.jsonl` (when the file is at hand), the tiny world's IDK replies (what
its IdkNLL / IdkDPO models are taught to say), and a few generic refusals; or a user file (one
phrase a line). Matching is on normalised, lower-cased text, so quotes and case do not matter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Sequence

from checkpoints.tofu_files import local_folder
from checkpoints.world.synthetic import IDK_REPLIES
from uds_analyses.probe.matching import canonical_text
from uds_core.errors import UdsInputError

# "I don't know" alone: TOFU's IDK lines wrap it in longer sentences ("I must admit, I don't know."),
# so a bare "I don't know." would otherwise pass as an answer
GENERIC = ("I cannot", "I can't", "I'm sorry", "I don't know", "I do not know")


def read_phrases(path: str | Path) -> list[str]:
    """Non-empty lines of a phrase file."""
    p = Path(path)
    if not p.is_file():
        raise UdsInputError(f"no refusal phrase file at {str(path)!r}")
    lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if not lines:
        raise UdsInputError(f"refusal phrase file {p} is empty")
    return lines


def default_phrases() -> list[str]:
    """TOFU's idontknow.jsonl lines (when the local TOFU folder, `$UDS_TOFU_DIR`, has them; the
    Hub does not publish the file) + the tiny world's IDK replies + GENERIC."""
    folder = local_folder()
    idk = folder / "idontknow.jsonl" if folder is not None else None
    tofu = read_phrases(idk) if idk is not None and idk.is_file() else []
    return list(dict.fromkeys([*tofu, *IDK_REPLIES, *GENERIC]))


class RefusalDetector:
    def __init__(self, phrases: Iterable[str]):
        # trailing punctuation dropped so "I don't know." also finds "I don't know, sorry"
        self.phrases: Sequence[str] = [q for q in (canonical_text(p, lower=True).rstrip(".!") for p in phrases) if q]

    def __call__(self, output: str) -> bool:
        text = canonical_text(output, lower=True)
        return any(p in text for p in self.phrases)
