"""JSON documents that carry a digest of their own content ("sealed"), and the reading of them.

A sealed document holds `digest`: the sha256 of its canonical JSON (keys sorted, the `digest`
field itself left out). Any changed value, key or number changes it, so a document damaged on
disk (a flipped byte, a partial overwrite, a bad copy) that still parses is caught when read.
Used for the campaign's committed files, S1 cache entries, meta-eval store entries and the
digest manifests of built folders (`uds_core.manifest`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

DIGEST = "digest"


def content_digest(doc: dict) -> str:
    """sha256 (hex) of the document's canonical JSON, its own `digest` field left out. A NaN or
    infinity is spelled as `json` spells it (finite documents hash as they always did)."""
    body = {k: v for k, v in doc.items() if k != DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def seal(doc: dict) -> dict:
    """The document with its content digest added (a `digest` already there is replaced)."""
    return {**doc, DIGEST: content_digest(doc)}


def unsealed(doc: dict) -> dict:
    """The document without its `digest` field (what its readers use)."""
    return {k: v for k, v in doc.items() if k != DIGEST}


def _load(path: Path) -> tuple[object, str | None]:
    """(parsed JSON, None), or (None, why it cannot be read)."""
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return None, f"does not parse ({exc})"


def read_sealed(path: Path) -> tuple[dict | None, str | None]:
    """(document, None) for a whole file; (None, problem) for one that is damaged; (None, None)
    when there is no file."""
    if not path.is_file():
        return None, None
    doc, problem = _load(path)
    if problem:
        return None, problem
    if not isinstance(doc, dict) or doc.get(DIGEST) != content_digest(doc):
        return None, "content digest does not match (damaged or edited)"
    return doc, None


@dataclass(frozen=True)
class Checked:
    """What reading a cache file found. `doc`: the document without its digest (None when absent
    or unusable); `problem`: why it must not be used; `legacy`: written before digests existed
    (exactly the `legacy_keys` of the older format, no digest), to be sealed as it is."""
    doc: dict | None
    problem: str | None = None
    legacy: bool = False


def read_checked(path: Path, legacy_keys: frozenset[str] = frozenset()) -> Checked:
    """A cache file read and verified: whole and sealed, or legacy (the older format, exactly
    `legacy_keys`), or a problem (unparsable, digest mismatch, no digest but not the legacy form)."""
    if not path.is_file():
        return Checked(None)
    doc, problem = _load(path)
    if problem:
        return Checked(None, problem)
    if not isinstance(doc, dict):
        return Checked(None, "not a JSON object")
    if DIGEST not in doc:
        if legacy_keys and set(doc) == legacy_keys:
            return Checked(doc, legacy=True)
        return Checked(None, "no content digest and not of the format written before digests")
    if doc[DIGEST] != content_digest(doc):
        return Checked(None, f"content digest does not match (sha256 {content_digest(doc)[:12]} where the file "
                             f"records {str(doc[DIGEST])[:12]})")
    return Checked(unsealed(doc))
