"""Fixtures shared by the meta-evaluation command tests: a synthetic zoo, a measurer that writes
seeded synthetic values, and `uds meta-eval` wired to them."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

import numpy as np

from meta_eval.perturb import relearn_config
from meta_eval.population import Member, Zoo
from meta_eval.store import MeasurementStore
from metrics.context import EvalSettings
from metrics.registry import REGISTRY
from metrics.utility import UTILITY_KEYS
from uds.cli import main
from uds.commands import meta_eval as cmd


def fake_zoo() -> Zoo:
    members = [Member("full", "z/full", "full", "full", 10), Member("retain", "z/retain", "retain", "retain", 10)]
    members += [Member(f"u{i}", f"z/u{i}", "unlearned", m, e) for i, (m, e) in
                enumerate([("npo", 5), ("npo", 10), ("rmu", 5), ("rmu", 10)])]
    members += [Member(f"{s}{i}", f"z/{s}{i}", "pool", None, 5, s) for s in "PN" for i in range(3)]
    return Zoo("tiny:fake", "fake", 0, tuple(members), "z/full", "z/retain", "z/base")


class FakeMeasurer:
    """Synthetic values: P pools carry knowledge, N pools do not; perturbations move values a little."""

    def __init__(self, root: Path):
        self.store, self.settings, self.recipe = MeasurementStore(root), EvalSettings(), relearn_config(8)
        self.runs = []

    def stamp(self, member, setting):
        return "S"

    def setting_recipe(self, setting):
        return {"setting": setting}

    def missing(self, job):
        have = self.store.values(job.setting, job.member.name, "S")
        return [k for k in job.keys if k not in have]

    def run(self, job):
        self.runs.append((job.setting, job.member.name))
        seed = int(hashlib.sha256(f"{job.setting}/{job.member.name}".encode()).hexdigest()[:8], 16)
        rng = np.random.default_rng(seed)
        knows = {"P": 0.8, "N": 0.2}.get(job.member.pool, 0.3)
        values = {}
        for k in job.keys + UTILITY_KEYS:
            level = float(np.clip(knows + rng.normal(0, 0.1), 0, 1))
            values[k] = 1 - level if REGISTRY[k].orientation == "erasure" else level
            if REGISTRY[k].orientation == "utility":
                values[k] = 0.7 + 0.1 * rng.random()
        self.store.write(job.setting, job.member.name, {"stamp": "S", "values": values, "info": {}, "errors": {}})


def fake_command(monkeypatch, measurer) -> Callable[..., int]:
    """`uds meta-eval --zoo tiny:fake` on `fake_zoo()`, nothing built, `measurer` measuring, no
    plots; returns `run(out, *options)`, the command's exit status writing to `out`."""
    monkeypatch.setattr("meta_eval.population.tiny_zoo", lambda text: fake_zoo())
    monkeypatch.setattr("meta_eval.population.build_zoo", lambda zoo, progress=True: None)
    monkeypatch.setattr(cmd, "_measurer", lambda args, zoo: measurer)
    monkeypatch.setattr(cmd, "write_plots", lambda *a: None)
    return lambda out, *options: main(["meta-eval", "--zoo", "tiny:fake", "--out", str(out), *options])


def measurer_settings(monkeypatch, home: Path, args) -> tuple:
    """The (metric settings, relearning recipe) `uds meta-eval` hands its Measurer for the command
    line `args` on `fake_zoo()` (the Measurer itself replaced: nothing is loaded)."""
    captured = {}

    class Capture:
        def __init__(self, zoo, store, models_dir, settings, recipe, fluency):
            captured["measurer"] = (settings, recipe)

    monkeypatch.setattr("meta_eval.measure.Measurer", Capture)
    monkeypatch.setenv("UDS_HOME", str(home))
    cmd._measurer(args, fake_zoo())
    return captured["measurer"]
