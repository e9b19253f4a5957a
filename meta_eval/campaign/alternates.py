"""AltPO's alternate answers beside a campaign's models: generated once by the builder of the first
AltPO model, committed as a campaign file, and put back where the builder reads them on another
machine."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from meta_eval.campaign.files import CampaignFiles
from meta_eval.population import Member


class AlternateAnswers:
    def __init__(self, files: CampaignFiles, path: Path | None, publish: Callable[[list[Path], str], None],
                 tag: str):
        self.files, self.path, self.publish, self.tag = files, path, publish, tag

    def restore(self, member: Member) -> None:
        """AltPO's answers are generated once: a committed copy goes where the builder reads it."""
        dst = self.path
        if member.method == "altpo" and dst is not None and self.files.alternates.is_file() and not dst.is_file():
            doc = self.files.read(self.files.alternates)
            if doc is not None:
                import json

                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_text(json.dumps(doc["alternates"], indent=1))

    def save(self, member: Member) -> None:
        src = self.path
        if member.method != "altpo" or src is None or not src.is_file() or self.files.alternates.is_file():
            return
        import json

        path = self.files.write(self.files.alternates, {"alternates": json.loads(src.read_text()),
                                                         "made_by": "the full model of the first build"})
        self.publish([path], f"campaign {self.tag}: AltPO alternate answers")
