"""The valid files of a campaign folder, read without any model (`campaign.files` names the layout).

A measurement file is used only when it is whole (its sealed digest matches), sits where its own
content says it belongs, is a job of the protocol, was made under the protocol's recipe of its
model and the protocol's settings of its setting, holds every key of its job, and was measured on
the build its model's build file names (fingerprint). Every other file is left out with one line
saying why. Nothing here decides what the values mean; `campaign.assemble` does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from checkpoints.specs import tiny_spec
from uds_core.errors import UdsInputError
from uds_core.sealed import DIGEST, read_sealed
from meta_eval.campaign.files import CampaignFiles, digest_of, measurement_problem, settings_digest
from meta_eval.population import FULL, RETAIN, Member, Zoo

Log = Callable[[str], None]


@dataclass(frozen=True)
class LeftOut:
    path: str      # relative to the campaign folder
    why: str

    def line(self, root: Path) -> str:
        return f"campaign: {root / self.path}: {self.why}; left out"


@dataclass
class CampaignData:
    """What a campaign folder holds that can be used, keyed as `meta_eval.assemble` reads values."""
    root: Path
    protocol: dict
    members: tuple[Member, ...]                              # every member of the protocol
    values: dict[tuple[str, str], dict] = field(default_factory=dict)      # (setting, model) -> values
    measurements: dict[tuple[str, str], dict] = field(default_factory=dict)  # the valid documents
    builds: dict[str, dict] = field(default_factory=dict)    # model -> valid build document
    anchors: dict[str, dict] = field(default_factory=dict)   # anchor-build id -> anchors document
    spread: dict[str, dict] = field(default_factory=dict)    # anchor-build id -> spread document
    left_out: list[LeftOut] = field(default_factory=list)
    inputs: dict[str, str] = field(default_factory=dict)     # relative path -> digest of each file used

    @property
    def measured_names(self) -> set[str]:
        return {name for _, name in self.values}


def protocol_members(protocol: dict) -> tuple[Member, ...]:
    """The protocol's members as `population.Member`s (tiny-world specs; nothing is built)."""
    preset, seed = protocol["preset"], int(protocol["seed"])
    return tuple(Member(name, tiny_spec(preset, seed, name), m["kind"], m["method"], m["epoch"], m["pool"])
                 for name, m in protocol["members"].items())


def campaign_zoo(data: CampaignData, names: set[str] | None = None) -> Zoo:
    """The campaign's zoo as a `population.Zoo`, cut to `names` (full and retain always stay)."""
    p = data.protocol
    members = tuple(m for m in data.members if names is None or m.name in names or m.kind in (FULL, RETAIN))
    spec = lambda name: tiny_spec(p["preset"], int(p["seed"]), name)  # noqa: E731
    return Zoo(p["zoo"], p["preset"], int(p["seed"]), members, spec("full"), spec("retain"), spec("base"))


def read_protocol(root: Path) -> dict:
    """protocol.json of a campaign folder; bad input when the folder is not a whole campaign."""
    if not root.is_dir():
        raise UdsInputError(f"--from-campaign {root}: " + ("a file, not a campaign folder" if root.exists()
                                                           else "no such folder"))
    path = root / "protocol.json"
    if not path.is_file():
        raise UdsInputError(f"--from-campaign {root}: not a campaign folder (no protocol.json; `uds campaign run "
                            f"--dir` writes one)")
    doc, problem = read_sealed(path)
    if doc is None:
        raise UdsInputError(f"{path}: {problem}; restore it from git (it fixes the campaign's protocol)")
    missing = [k for k in ("zoo", "preset", "seed", "members", "recipes", "jobs", "settings", "metric_settings",
                           "version") if k not in doc]
    if missing:
        raise UdsInputError(f"{path}: not a campaign protocol (lacks {', '.join(missing)})")
    return doc


def read_campaign(root: Path, log: Log = lambda s: None) -> CampaignData:
    """Every usable file of the campaign folder `root`; each file left out is said on `log` once."""
    from meta_eval.measure import MEASURE_VERSION

    root = Path(root)
    protocol = read_protocol(root)
    data = CampaignData(root, protocol, protocol_members(protocol))
    data.inputs["protocol.json"] = protocol[DIGEST]
    files = CampaignFiles(root, log=lambda s: None)
    _read_builds(data, files)
    # version 1 recorded the declared measurement version, version 2 the measuring code's digest
    measured_by = MEASURE_VERSION if protocol["version"] == 1 else protocol["measure_code"]
    digests = {s: settings_digest(protocol["version"], measured_by, s, recipe, protocol["metric_settings"])
               for s, recipe in protocol["settings"].items()}
    paths = sorted((root / "measurements").glob("*/*.json"))
    if not paths:
        raise UdsInputError(f"--from-campaign {root}: no measurement files yet (measurements/<setting>/<model>.json)")
    for path in paths:
        _read_measurement(data, files, path, digests)
    _read_anchor_files(data)
    for item in data.left_out:
        log(item.line(root))
    if not data.values:
        raise UdsInputError(f"--from-campaign {root}: none of its {len(paths)} measurement files is valid "
                            "(each is said above with why)")
    return data


def _rel(data: CampaignData, path: Path) -> str:
    return path.relative_to(data.root).as_posix()


def _read_builds(data: CampaignData, files: CampaignFiles) -> None:
    recipes = data.protocol["recipes"]
    for path in sorted((data.root / "builds").glob("*.json")):
        doc, problem = read_sealed(path)
        if doc is not None:
            model = doc.get("model")
            if model not in recipes:
                problem = f"model {model!r} is not a member of the protocol"
            elif files.build(model) != path:
                problem = f"its content names model {model!r}, whose build file is {_rel(data, files.build(model))}"
            elif doc.get("recipe_digest") != recipes[model]:
                problem = "built from another recipe than the protocol's"
        if problem:
            data.left_out.append(LeftOut(_rel(data, path), problem))
            continue
        data.builds[model] = doc
        data.inputs[_rel(data, path)] = doc[DIGEST]


def _read_measurement(data: CampaignData, files: CampaignFiles, path: Path, digests: dict[str, str]) -> None:
    doc, problem = read_sealed(path)
    if doc is not None:
        problem = _measurement_problem(data, files, path, doc, digests)
    if problem:
        data.left_out.append(LeftOut(_rel(data, path), problem))
        return
    key = (doc["setting"], doc["model"])
    data.measurements[key] = doc
    data.values[key] = dict(doc["values"])
    data.inputs[_rel(data, path)] = doc[DIGEST]


def _measurement_problem(data: CampaignData, files: CampaignFiles, path: Path, doc: dict,
                         digests: dict[str, str]) -> str | None:
    """Why a whole measurement document cannot be assembled (None: it can)."""
    setting, model = doc.get("setting"), doc.get("model")
    job = data.protocol["jobs"].get(f"{setting}/{model}")
    if job is None:
        return f"{setting}/{model} is not a job of the protocol"
    if files.measurement(setting, model) != path:
        return f"its content names {setting}/{model}, whose file is {_rel(data, files.measurement(setting, model))}"
    build = data.builds.get(model)
    if build is None:
        return f"no valid build file of {model} to check its model fingerprint against"
    return measurement_problem(doc, data.protocol["recipes"][model], digests[setting], job, build["fingerprint"])


def _read_anchor_files(data: CampaignData) -> None:
    """anchors/ and spread/ documents, by the anchor-build id their file is named after."""
    for folder, into in (("anchors", data.anchors), ("spread", data.spread)):
        for path in sorted((data.root / folder).glob("*.json")):
            doc, problem = read_sealed(path)
            fps = None if doc is None else doc.get("anchors" if folder == "anchors" else "anchors_here")
            if doc is not None and (not isinstance(fps, dict) or digest_of(fps)[:16] != path.stem):
                problem = "its anchor fingerprints do not give its file name"
            if problem:
                data.left_out.append(LeftOut(_rel(data, path), problem))
                continue
            into[path.stem] = doc
            data.inputs[_rel(data, path)] = doc[DIGEST]
