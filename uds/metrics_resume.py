"""The finished metrics of an unfinished `uds metrics` run, kept so a rerun does not compute them again.

`uds metrics` writes `DIR/metrics.partial.json` after each metric: the metrics finished so far, in
the JSON form of `metrics.json`, and the run's identity. A rerun into the same folder whose identity
matches takes those metrics as they are and computes only the rest; the file is removed once
`metrics.json` is written. The identity is a digest of every model's identity (`model_identity`:
the content of a folder with a digest manifest, so a bit-identical rebuild on a fresh machine
resumes; else its folder stamp; the hub ID of a hub model), the run's settings and the digest of
the code that computes the numbers, so other weights, another setting or changed metric code
starts the run over. That code is the metric families, their registry and the session that loads
the models; the command's own parsing and report are left out, since what it hands the metrics
is in the settings.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any, Mapping

from meta_eval.campaign.files import digest_of
from metrics.result import MetricResult
from uds_core import atomic
from uds_core.errors import UdsInputError
from uds_core.numbers import finite_or_none

PARTIAL = "metrics.partial.json"
FORMAT = 1   # bump when what the file holds changes
# the code behind the numbers: the registry, every metric family (imported by name at run time) and
# the session that loads the models and builds the context
CODE = ("metrics.registry", "metrics.families.*", "metrics.session")


def json_value(v):
    """Floats for JSON: numpy scalars unwrapped, NaN/inf -> null, lists recursively."""
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, (str, bool)):
        return v
    return finite_or_none(v)


def json_info(v):
    """A metric's `info` for JSON: dicts and lists recursively, numbers as `json_value`, other
    objects by their text (info is extra detail, never worth failing a run over)."""
    if isinstance(v, dict):
        return {str(k): json_info(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_info(x) for x in v]
    try:
        return json_value(v)
    except (TypeError, ValueError):
        return str(v)


def to_record(result: MetricResult) -> dict:
    """One metric's result as JSON: what `metrics.json` prints of it."""
    return {"value": json_value(result.value),
            "per_example": None if result.per_example is None else json_value(result.per_example),
            "info": json_info(result.info)}


def from_record(record: Mapping[str, Any]) -> MetricResult:
    """A result back from `to_record` (undefined numbers come back as None, as `metrics.json` has them)."""
    return MetricResult(record["value"], record["per_example"], dict(record["info"]))


def model_identity(spec: Any) -> str:
    """What a kept metric of `spec` (a spec string or `CheckpointSpec`) is tied to: the content
    digest of a model folder whose digest manifest matches its files (an adapter's with its
    base's); otherwise `meta_eval.population.model_identity` (folder stamp, hub ID)."""
    from checkpoints.specs import as_spec
    from meta_eval.population import model_identity as stamp_identity

    resolved = as_spec(spec)
    content = None if resolved.kind == "hub" else content_digest(resolved.location)
    if content is None:
        return stamp_identity(resolved)
    return f"content:{content}" + (f"+{model_identity(resolved.base)}" if resolved.kind == "adapter" else "")


def content_digest(folder: str | Path) -> str | None:
    """A digest of what `folder` holds (every file's name, size and content digest as its digest
    manifest records them), once `uds_core.manifest.verify` finds every file as recorded; None
    without a usable manifest or when a file differs. Two folders with the same files have the
    same digest, wherever and whenever they were written."""
    # kept here, not in uds_core.manifest: that module is in every trainer's code digest, so any
    # edit to it would make every built world's models stale
    from uds_core import manifest

    folder = Path(folder)
    if not manifest.has_manifest(folder) or manifest.verify(folder) is not None:
        return None
    doc = atomic.read_json(folder / manifest.MANIFEST)
    text = doc["hash"] + ";" + ";".join(f"{n}:{v['bytes']}:{v['digest']}" for n, v in sorted(doc["files"].items()))
    return hashlib.sha256(text.encode()).hexdigest()


def run_identity(models: Mapping[str, Any], settings: Mapping[str, Any]) -> str:
    """Digest of the models (role -> spec and identity), the run's settings (both JSON-able) and
    the metric code."""
    from uds_core.code_digest import code_digest

    return digest_of([FORMAT, dict(models), dict(settings), code_digest(CODE)])


def load(folder: Path, identity: str) -> dict[str, MetricResult]:
    """The finished metrics kept in `folder` for a run of `identity`; none when the file is absent,
    unreadable or of another run (said on stderr: that run's metrics are computed again)."""
    path = Path(folder) / PARTIAL
    if not path.exists():
        return {}
    try:
        doc = atomic.read_json(path)
        same = doc.get("identity") == identity
        kept = {k: from_record(r) for k, r in doc["results"].items()} if same else {}
    except (UdsInputError, KeyError, TypeError, AttributeError):
        print(f"uds metrics: {path} is unreadable; starting over", file=sys.stderr)
        return {}
    if not same:
        print(f"uds metrics: {path} is of another run (other models, settings or code); starting over",
              file=sys.stderr)
        return {}
    if kept:
        print(f"uds metrics: resuming, {len(kept)} metric(s) kept from {path}: {', '.join(kept)}", file=sys.stderr)
    return kept


def save(folder: Path, identity: str, results: Mapping[str, MetricResult]) -> None:
    """Keep the metrics finished so far (atomically: an interruption leaves the previous file)."""
    atomic.write_json(Path(folder) / PARTIAL,
                      {"identity": identity, "results": {k: to_record(r) for k, r in results.items()}},
                      indent=1, allow_nan=False)


def finish(folder: Path) -> None:
    """Remove the kept metrics once the whole run's `metrics.json` is written."""
    (Path(folder) / PARTIAL).unlink(missing_ok=True)
