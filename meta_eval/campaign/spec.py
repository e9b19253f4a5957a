"""What a campaign runs on (`CampaignSpec`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from meta_eval.campaign.files import CampaignFiles
from meta_eval.measure import Job
from meta_eval.population import Member, Zoo


@dataclass(frozen=True)
class CampaignSpec:
    """What the campaign runs on: the zoo, and how to build, identify and check its members.
    `settings_digest(setting)`: the metric and perturbation settings of a setting's measurements;
    `fingerprint(folder)`: the content digest of a built model folder."""
    zoo: Zoo
    files: CampaignFiles
    keys: tuple[str, ...]
    recipe_digest: Callable[[Member], str]
    settings_digest: Callable[[str], str]
    is_built: Callable[[Member], bool]
    build: Callable[[Member], Path]
    folder: Callable[[Member], Path]
    fingerprint: Callable[[Path], str]
    knowledge: Callable[[Member], dict] | None = None   # the knowledge check of a built member
    keep: frozenset[str] = frozenset()                   # kinds whose weights are kept
    alternates: Path | None = None                       # where the AltPO builder keeps its answers
    relearned: Path | None = None                        # folder of the measurer's relearned copies
    plan: Callable[[Zoo], list[Job]] | None = None       # the zoo's jobs (None: the meta-evaluation's)
    order: Callable[[Zoo], list[Member]] | None = None   # the members' order (None: `campaign_order`)
    parent: Callable[[Member], str | None] = lambda m: None   # the member a member is trained from
    legacy_digest: Callable[[Member], str] | None = None  # its scheme-1 digest, recorded beside the new one
    measure_code: str | None = None                      # digest of the measuring code (recorded per file)
    legacy: bool = False                                 # fixed under version 1: readable, never run
