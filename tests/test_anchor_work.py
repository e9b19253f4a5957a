"""The anchors' Fisher diagonals and entity states kept on disk (`meta_eval.anchor_work`).

Round trips are exact (torch.equal), only anchor keys of the kept kinds are written, a damaged
file or another context is a miss; on the test world, a second Measurer (a new process's) computes
no anchor Fisher or states and measures the same values as one that computed everything itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from meta_eval.anchor_work import AnchorWorkFiles
from metrics.hidden import EntityStates
from metrics.work import WorkCache, WorkKey

FULL, RETAIN = "z/full", "z/retain"


def _fisher(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(n, generator=g) for n in (7, 3, 11)]


def _states() -> EntityStates:
    g = torch.Generator().manual_seed(1)
    return EntityStates([torch.randn(5, 4, generator=g) for _ in range(3)], torch.tensor([3, 1, 4, 1, 5]),
                        torch.tensor([0, 0, 1, 2, 2]), 3)


def _files(root: Path, context: object = "c") -> AnchorWorkFiles:
    return AnchorWorkFiles(root, (FULL, RETAIN), lambda: context)


def test_round_trips_are_exact_and_only_anchor_keys_are_kept(tmp_path):
    files = _files(tmp_path)
    fisher, states = _fisher(0), _states()
    files.save(WorkKey("fisher", (FULL,), (False,)), fisher)
    files.save(WorkKey("states", (RETAIN,)), states)
    found, back = files.load(WorkKey("fisher", (FULL,), (False,)))
    assert found and len(back) == 3 and all(torch.equal(a, b) for a, b in zip(back, fisher))
    found, got = files.load(WorkKey("states", (RETAIN,)))
    assert found and got.n_items == 3 and all(torch.equal(a, b) for a, b in zip(got.layers, states.layers))
    assert torch.equal(got.targets, states.targets) and torch.equal(got.item_of_row, states.item_of_row)
    written = sorted(p.suffix for p in tmp_path.iterdir())
    for key in (WorkKey("fisher", ("z/npo@orig",), (False,)),       # a measured model's work stays in memory
                WorkKey("tf", (FULL,), ("forget", None)),           # not a kept kind
                WorkKey("cka", (FULL, "z/npo@orig"))):
        files.save(key, fisher)
        assert files.load(key) == (False, None)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == written == [".json", ".json", ".safetensors", ".safetensors"]
    assert files.load(WorkKey("fisher", (FULL,), (True,)))[0] is False          # another detail, another file
    key = WorkKey("fisher", (FULL,), (False,))
    rebuilt = _files(tmp_path, "other")                                          # another context: a miss ...
    assert rebuilt.load(key)[0] is False
    rebuilt.save(key, _fisher(3))                                                # ... whose save replaces the old copy
    assert len(list(tmp_path.iterdir())) == 4 and files.load(key)[0] is False
    found, back = rebuilt.load(key)
    assert found and all(torch.equal(a, b) for a, b in zip(back, _fisher(3)))
    assert files.load(WorkKey("states", (RETAIN,)))[0]                          # other keys untouched


def test_a_damaged_file_is_a_miss_and_is_rewritten(tmp_path):
    key = WorkKey("fisher", (FULL,), (False,))
    calls = []

    def make():
        calls.append(1)
        return _fisher(2)
    WorkCache(_files(tmp_path)).memo(key, make)
    data = next(tmp_path.glob("*.safetensors"))
    raw = bytearray(data.read_bytes())
    raw[-3] ^= 0x01                                                               # same size, one bit
    data.write_bytes(bytes(raw))
    assert _files(tmp_path).load(key) == (False, None)
    again = WorkCache(_files(tmp_path)).memo(key, make)                           # computed again ...
    assert len(calls) == 2 and all(torch.equal(a, b) for a, b in zip(again, _fisher(2)))
    found, back = _files(tmp_path).load(key)                                       # ... and kept whole
    assert found and all(torch.equal(a, b) for a, b in zip(back, _fisher(2)))
    assert len(list(tmp_path.glob("*.safetensors"))) == 1 and not list(tmp_path.glob(".*.tmp"))


def _measurer(root: Path):
    from uds.commands.campaign import make_measurer
    from uds.measure_args import measurement_settings
    from meta_eval.population import tiny_zoo

    zoo = tiny_zoo("tiny:test")
    settings, recipe = measurement_settings(argparse.Namespace(batch_size=32, max_new_tokens=16, relearn_lr=None),
                                            zoo, device="cpu")
    return make_measurer(zoo, root, settings, recipe)


def test_a_new_measurer_reads_the_anchor_work_and_measures_the_same(test_world, tmp_path, monkeypatch):
    from meta_eval.measure import Job
    from meta_eval.perturb import ORIG
    from metrics import hidden

    computed: list[str] = []
    for name in ("fisher_diagonal", "capture_entity_states"):
        real = getattr(hidden, name)

        def spy(*a, _real=real, **kw):
            computed.append(kw["desc"] if "desc" in kw else a[2].desc)
            return _real(*a, **kw)
        monkeypatch.setattr(hidden, name, spy)
    from checkpoints.world.build import ensure_model

    keys = ("fisher_masked_0.001", "cka", "logit_lens")
    first = _measurer(tmp_path / "a")
    by_name = {m.name: m for m in first.zoo.members}
    one, two = by_name["npo_lr2e-4_b01_a1_ep5"], by_name["rmu_lr2e-4_l2_s10_ep5"]
    for member in (one, two):                              # a fresh clone has built only base, full, retain
        ensure_model("test", 0, member.name, progress=False)
    first.run(Job(one, ORIG, keys))
    anchors = {d for d in computed if d.startswith(("tiny:test/full ", "tiny:test/retain "))}
    assert len(anchors) == 4, computed                    # Fisher and states of full and retain
    computed.clear()
    second = _measurer(tmp_path / "a")                    # a new process's: same store folder
    kept = second.run(Job(two, ORIG, keys))["values"]
    assert computed and all(d.startswith(f"{two.spec}@orig ") for d in computed), computed
    computed.clear()
    alone = _measurer(tmp_path / "b").run(Job(two, ORIG, keys))["values"]   # computes everything itself
    assert {d.split(" ")[0] for d in computed} >= {"tiny:test/full", "tiny:test/retain"}
    assert kept == alone and set(keys) <= set(kept)
