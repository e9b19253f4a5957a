"""A small synthetic campaign folder, written file by file the way `uds campaign run` writes one
(sealed with the project's own `seal`), with the values kept in memory for independent checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from uds_core.sealed import seal
from meta_eval.campaign.files import digest_of, settings_digest
from meta_eval.measure import MEASURE_VERSION

KEYS = ["es", "uds", "mia_loss", "s_mia_loss"]       # a knowledge, an erasure and a filter-sourced s_* key
BENCH = ["model_utility", "fluency"]
POOL = {"pos_full_lr1e-4_ep5": "P", "pos_full_lr2e-4_ep5": "P", "pos_bio_lr1e-4_ep5": "P", "pos_bio_lr2e-4_ep5": "P",
        "pos_para_lr1e-4_ep5": "P", "pos_para_lr2e-4_ep5": "P",
        "neg_retain_lr1e-4_ep5": "N", "neg_retain_lr2e-4_ep5": "N", "neg_pert_lr1e-4_ep5": "N",
        "neg_pert_lr2e-4_ep5": "N", "neg_bio_lr1e-4_ep5": "N", "neg_bio_lr2e-4_ep5": "N"}
UNLEARNED = {"npo_lr1e-5_ep5": "npo", "npo_lr3e-5_ep5": "npo", "graddiff_lr1e-5_ep5": "graddiff",
             "rmu_lr1e-5_ep5": "rmu"}
SETTINGS = {"orig": {}, "nf4": {"quant_type": "nf4", "block_size": 64}, "relearn": {"train": {"lr": 2e-4, "epochs": 1}}}
METRIC_SETTINGS = {"batch_size": 4, "max_new_tokens": 16, "system_prompt": None}
ANCHOR_MODELS = ("base", "full", "retain")   # what a fresh machine's home holds of a built world


def fresh_home(world: Path, root: Path) -> Path:
    """A UDS_HOME under `root` with the world's data, tokenizer and anchors only (a fresh machine)."""
    import shutil

    home = root / "home"

    def skip(folder: str, names: list[str]) -> list[str]:
        return [n for n in names if n not in ANCHOR_MODELS] if Path(folder).name == "models" else []
    shutil.copytree(world, home / "world" / world.name, ignore=skip)
    return home


ANCHORS = ({"full": "f" * 64, "retain": "r" * 64}, {"full": "e" * 64, "retain": "d" * 64})


def _members() -> dict[str, dict]:
    out = {"full": {"kind": "full", "pool": None, "method": "full", "epoch": 5},
           "retain": {"kind": "retain", "pool": None, "method": "retain", "epoch": 5}}
    out |= {n: {"kind": "unlearned", "pool": None, "method": m, "epoch": 5} for n, m in UNLEARNED.items()}
    out |= {n: {"kind": "pool", "pool": p, "method": None, "epoch": 5} for n, p in POOL.items()}
    return out


def _jobs(members: dict[str, dict]) -> dict[str, list[str]]:
    jobs = {}
    for name, m in members.items():
        jobs[f"orig/{name}"] = KEYS + ([] if m["kind"] == "pool" else BENCH)
        if m["kind"] == "unlearned":
            jobs[f"nf4/{name}"] = list(KEYS)
        if m["kind"] in ("unlearned", "retain"):
            jobs[f"relearn/{name}"] = list(KEYS)
    return jobs


class SyntheticCampaign:
    """A campaign folder under `root`: protocol.json at once, builds and measurements on request.
    `values[(setting, model)]` holds every value written, as written."""

    def __init__(self, root: Path, seed: int = 0):
        self.root, self.rng = Path(root), np.random.default_rng(seed)
        members = _members()
        self.protocol = {"version": 1, "zoo": "tiny:synthetic", "preset": "synthetic", "seed": 0, "keys": KEYS,
                         "members": members, "recipes": {n: digest_of(["recipe", n]) for n in members},
                         "jobs": _jobs(members), "settings": SETTINGS, "metric_settings": METRIC_SETTINGS,
                         "knowledge_check": {"max_new_tokens": 64}}
        self.values: dict[tuple[str, str], dict] = {}
        self.knowledge: dict[str, float] = {}
        self._write(self.root / "protocol.json", self.protocol)
        (self.root / "measurements").mkdir(parents=True, exist_ok=True)

    def _write(self, path: Path, doc: dict) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(seal(doc), indent=1, sort_keys=True))
        return path

    def settings_digest(self, setting: str) -> str:
        return settings_digest(1, MEASURE_VERSION, setting, SETTINGS[setting], METRIC_SETTINGS)

    def build(self, name: str) -> Path:
        m = self.protocol["members"][name]
        doc = {"model": name, "kind": m["kind"], "pool": m["pool"], "method": m["method"],
               "recipe_digest": self.protocol["recipes"][name], "fingerprint": f"fp-{name}",
               "recipe": {"train": {"lr": 1e-4, "epochs": 5}}}
        if m["kind"] != "unlearned":
            self.knowledge[name] = float(self.rng.uniform(0.5, 0.9) if m["pool"] != "N" else self.rng.uniform(0, 0.2))
            doc["knowledge"] = {"forget_questions": self.knowledge[name], "paraphrased_questions": 0.1,
                                "n_forget_questions": 37}
        return self._write(self.root / "builds" / f"{name}.json", doc)

    def draw(self, setting: str, name: str) -> dict[str, float]:
        """Values a member of this kind plausibly has: P members know more than N members (with
        overlap), unlearned models sit between; utility high enough to pass the filter mostly."""
        m = self.protocol["members"][name]
        know = {"P": 0.7, "N": 0.3}.get(m["pool"], 0.45 if m["kind"] == "unlearned" else 0.5)
        shift = {"orig": 0.0, "nf4": -0.02, "relearn": 0.15}[setting]
        vals = {}
        for k in KEYS:
            v = float(np.clip(know + shift + self.rng.normal(0, 0.18), 0.0, 1.0))
            vals[k] = 1.0 - v if k in ("uds", "s_mia_loss") else v
        if self.protocol["jobs"][f"{setting}/{name}"][len(KEYS):]:
            vals |= {"model_utility": float(self.rng.uniform(0.45, 0.6)), "fluency": float(self.rng.uniform(0.7, 1.0))}
        return vals

    def measure(self, setting: str, name: str, values: dict | None = None, anchors: int = 0,
                build: bool = True, **override) -> Path:
        """Write measurements/<setting>/<name>.json (and the member's build file when `build`);
        `override` replaces fields after the values are drawn (another recipe digest, ...)."""
        if build and not (self.root / "builds" / f"{name}.json").is_file():
            self.build(name)
        m = self.protocol["members"][name]
        values = self.draw(setting, name) if values is None else values
        doc = {"model": name, "kind": m["kind"], "pool": m["pool"], "method": m["method"], "epoch": m["epoch"],
               "setting": setting, "recipe_digest": self.protocol["recipes"][name],
               "settings_digest": self.settings_digest(setting), "model_fingerprint": f"fp-{name}",
               "anchors": ANCHORS[anchors], "values": values, "errors": {}, "seconds": {}} | override
        if not override:
            self.values[(setting, name)] = values
        return self._write(self.root / "measurements" / setting / f"{name}.json", doc)

    def anchors_and_spread(self) -> None:
        for fps in ANCHORS:
            self._write(self.root / "anchors" / f"{digest_of(fps)[:16]}.json", {"anchors": fps})
        rows = [{"model": n, "uds_committed": 0.3 + i / 10, "uds_here": 0.3 + i / 10 + d, "abs_diff": d,
                 "committed_anchors": ANCHORS[0]}
                for i, (n, d) in enumerate((("npo_lr1e-5_ep5", 2e-4), ("graddiff_lr1e-5_ep5", 5e-5)))]
        self._write(self.root / "spread" / f"{digest_of(ANCHORS[1])[:16]}.json",
                    {"anchors_here": ANCHORS[1], "models": rows})

    def measure_all(self) -> None:
        """Every job of the protocol; the relearned and one NF4 unit with the second anchor build."""
        for job in self.protocol["jobs"]:
            setting, name = job.split("/", 1)
            self.measure(setting, name, anchors=1 if setting == "relearn" or job == "nf4/rmu_lr1e-5_ep5" else 0)
        self.anchors_and_spread()
