"""A campaign folder's protocol (protocol.json): fixed by the first run, and every later run refused
under another one; the campaign versions it is read under."""

from __future__ import annotations

from typing import Literal

from meta_eval.campaign.files import CampaignFiles
from uds_core.errors import UdsInputError

# Version 2: recipe digests of scheme 2 (world settings and trainer code, `checkpoints.world.
# recipe_digest`), the measuring code's digest in the settings digest, the code commit in every file.
CAMPAIGN_VERSION = 2
LEGACY_VERSION = 1   # folders fixed before: read (status, assembly) under their own rules, never run


RECORDED_ONLY = ("digest", "fixed_at")   # protocol fields that are recorded, not compared


Verdict = Literal["fix", "refix", "same", "refused"]


def changed_fields(fixed: dict, protocol: dict) -> list[str]:
    """The fields in which a fixed protocol and this code's differ, the recorded-only ones aside."""
    return sorted(k for k in set(fixed) | set(protocol)
                  if k not in RECORDED_ONLY and fixed.get(k) != protocol.get(k))


def nothing_measured(files: CampaignFiles) -> bool:
    """Whether the campaign folder holds no build and no measurement file (its protocol may be
    fixed again)."""
    return not any((files.root / "builds").glob("*.json")) and not any(
        (files.root / "measurements").glob("*/*.json"))


def protocol_verdict(fixed: dict | None, protocol: dict, *, unmeasured: bool, write: bool,
                     refix: bool) -> tuple[Verdict, list[str]]:
    """What a run does with a folder's fixed protocol `fixed` (None: none yet), with the fields that
    differ from this code's `protocol` (the recorded-only ones aside): "fix" (none yet and
    `write`: write it), "refix" (`refix`, it differs and nothing is measured under it: replace it),
    "refused" (it differs otherwise), "same" (it agrees, or there is none and nothing to write)."""
    if fixed is None:
        return ("fix" if write else "same"), []
    changed = changed_fields(fixed, protocol)
    if not changed:
        return "same", []
    return ("refix" if refix and unmeasured else "refused"), changed


def check_protocol(files: CampaignFiles, protocol: dict, write: bool = True, refix: bool = False) -> None:
    """Write the protocol on the first run (`write`); afterwards refuse to run under another one
    (every field but the recorded-only ones: its seal and the commit that fixed it). `refix`: while
    no build or measurement file exists, another protocol replaces the fixed one (said on stderr)."""
    import json
    import sys

    doc = files.read(files.protocol)
    if doc is None and files.protocol.is_file():
        raise UdsInputError(f"{files.protocol} is damaged; restore it from git (it fixes the campaign's protocol)")
    unmeasured = nothing_measured(files)
    verdict, changed = protocol_verdict(doc, protocol, unmeasured=unmeasured, write=write, refix=refix)
    if verdict == "refix":
        print(f"campaign: {files.protocol} fixed again (no unit was measured under it; changed: {', '.join(changed)})",
              file=sys.stderr)
    if verdict in ("fix", "refix"):
        files.write(files.protocol, protocol)
    if verdict != "refused":
        return
    detail = differences(doc, protocol)
    if unmeasured:
        raise UdsInputError(f"the campaign in {files.root} was fixed under another protocol (differs in: "
                            f"{'; '.join(detail)}) and nothing is measured under it yet: `uds campaign protocol` "
                            "with the same options fixes it again for this code")
    raise UdsInputError(f"the campaign in {files.root} was fixed under another protocol (differs in: "
                        f"{'; '.join(detail)}); its files are not mixed with new ones: start a new "
                        "campaign folder with --dir, or restore "
                        f"the code that made {json.dumps(files.protocol.name)}")


def differences(fixed: dict, protocol: dict) -> list[str]:
    """What differs between a fixed protocol and this code's (the recorded-only fields aside), in
    words for a message; empty when they agree."""
    diff = changed_fields(fixed, protocol)
    detail = diff
    if "measure_code" in diff:
        detail = [d for d in detail if d != "measure_code"] + [
            "the measuring code (its digest; run from the commit in protocol.json's fixed_at)"]
    if "recipes" in diff:
        old, new = fixed.get("recipes", {}), protocol.get("recipes", {})
        changed = sorted(n for n in set(old) | set(new) if old.get(n) != new.get(n))
        detail = [d for d in detail if d != "recipes"] + [f"recipes of {', '.join(changed[:6])}"
                                                        + (" ..." if len(changed) > 6 else "")]
    return detail


def recorded_settings_digest(fixed: dict, setting: str) -> str:
    """The settings digest a measurement of `setting` carries under the fixed protocol `fixed`
    (version 2), from protocol.json alone: what reads a campaign under other code counts its
    files by this."""
    from meta_eval.campaign.files import settings_digest

    return settings_digest(fixed["version"], fixed["measure_code"], setting, fixed["settings"][setting],
                           fixed["metric_settings"])
