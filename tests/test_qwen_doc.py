"""docs/qwen.md's snapshot and tables (uds_analyses/doc_tables/qwen.py) on a small hand-made campaign
folder: every number checked against values computed here, unfinished units shown as pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uds_core import atomic
from uds_core.sealed import seal

MODELS = ["full", "retain", "graddiff_x", "npo_x", "simnpo_x", "idknll_x"]


def _write(path: Path, doc: dict) -> None:
    atomic.write_json(path, seal(doc), indent=1, sort_keys=True)


def _unit(root: Path, kind: str, model: str, result: dict, seconds: float = 10.0, peak: int = 3_000_000_000,
          machine: dict | None = None) -> None:
    _write(root / kind / f"{model}.json", {"unit": f"{kind}/{model}", "kind": kind, "model": model,
                                           "recipes": {model: "d"}, "code": {"commit": "c", "dirty": False},
                                           "seconds": seconds, "peak_rss_bytes": peak,
                                           "machine": machine or {"cpu": "test cpu"}, "result": result})


def _examples(s1: list[list[float]], s2: list[list[float]], ke: list[list[int]], uds: list[float]) -> list[dict]:
    return [{"idx": i, "uds": u, "skipped_reason": None, "ke_layers": k, "s1_delta": a, "s2_delta": b}
            for i, (a, b, k, u) in enumerate(zip(s1, s2, ke, uds))]


def _score(uds: float, per_example: list[float], s1=None, ke=None) -> dict:
    s1 = s1 or [[0.0, 0.1, 0.2]] * len(per_example)
    ke = ke or [[1, 2]] * len(per_example)
    return {"summary": {"uds": uds, "ci95": [uds - 0.01, uds + 0.01], "n_scored": len(per_example),
                        "n_examples": len(per_example), "n_skipped": 0, "layers": len(s1[0])},
            "examples": _examples(s1, s1, ke, per_example)}


@pytest.fixture
def folders(tmp_path):
    camp, smol = tmp_path / "campaign", tmp_path / "smol"
    units = [f"{k}/{m}" for m in MODELS for k in ("build", "knowledge", "score")] + ["knowledge/base"]
    _write(camp / "protocol.json", {"zoo": "tiny:qwen", "preset": "qwen", "seed": 0, "units": sorted(units)})
    _unit(camp, "build", "full", {"train_seconds": 1234.5, "adapter_bytes": 73_911_112,
                                  "recipe": {"method": "finetune", "parent": "base",
                                             "train": {"lr": 1e-3, "epochs": 6, "batch_size": 8}}}, peak=5_500_000_000)
    answers = [{"idx": i, "entity": "e", "hit": h, "answer": "a"} for i, h in enumerate([True, True, True, False])]
    _unit(camp, "knowledge", "full", {"forget_questions": {"rate": 0.75, "n": 4, "answers": answers},
                                      "paraphrased_questions": {"rate": 0.5, "n": 4, "answers": answers}})
    s1 = [[0.01, 0.2, 0.4], [0.0, 0.03, 0.3]]
    _unit(camp, "score", "full", _score(0.0, [0.0, 0.0], s1=s1, ke=[[1, 2], [2]]))
    for name, value in (("graddiff_x", 0.4), ("npo_x", 0.3), ("simnpo_x", 0.2), ("idknll_x", 0.1)):
        _unit(camp, "score", name, _score(value, [value, value]))
    for name, value in (("full", 0.0), ("retain", 1.0), ("graddiff_a", 0.1), ("npo_a", 0.2), ("simnpo_a", 0.3),
                        ("idknll_a", 0.4), ("pos_pool", 0.5)):
        d = smol / name
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps(_score(value, [value])["summary"]))
        rows = _examples([[0.1, 0.2, 0.3, 0.4]], [[0.0] * 4], [[3]], [value])
        (d / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return camp, smol, tmp_path / "snapshot.json"


def _snap(folders) -> Path:
    from uds_analyses.doc_tables.qwen import snapshot

    camp, smol, out = folders
    out.write_text(json.dumps(snapshot(camp, smol)))
    return out


def test_snapshot_counts_done_and_pending_units(folders):
    from uds_analyses.doc_tables import qwen

    snap = json.loads(_snap(folders).read_text())
    assert snap["units_total"] == 19 and len(snap["done"]) == 7
    assert "build/retain" in snap["pending"] and "knowledge/base" in snap["pending"]
    assert set(snap["smol"]["scores"]) == {"full", "retain", "graddiff_a", "npo_a", "simnpo_a", "idknll_a"}   # no pools
    assert "7 of 19 units done" in qwen.status_block(_snap(folders))


def test_units_computed_through_float32_kernels_are_named(folders):
    from uds_analyses.doc_tables import qwen

    assert "float32 kernels" not in qwen.status_block(_snap(folders))
    camp = folders[0]
    _unit(camp, "score", "retain", _score(1.0, [1.0, 1.0]), machine={"cpu": "AMD EPYC", "bf16_products": "float32"})
    _unit(camp, "knowledge", "retain", {w: {"rate": 0.0, "n": 1, "answers": []} for w in
                                        ("forget_questions", "paraphrased_questions")},
          machine={"cpu": "Xeon", "bf16_products": "native"})
    block = qwen.status_block(_snap(folders))
    assert "ran through float32 kernels" in block and "`score/retain`;" in block and "knowledge/retain" not in block


def test_layer_profile_is_the_mean_of_the_scored_examples(folders):
    snap = json.loads(_snap(folders).read_text())
    assert snap["profile"]["mean_s1"] == [0.005, 0.115, 0.35]   # (0.01+0), (0.2+0.03)/2, (0.4+0.3)/2
    assert snap["profile"]["ke"] == [0, 1, 2] and snap["profile"]["first_ke"] == [1, 2]


def test_tables_show_measured_values_and_pending(folders):
    from uds_analyses.doc_tables import qwen

    path = _snap(folders)
    build = qwen.build_block(path)
    assert "| `full` | base | finetune, lr 0.001, 6 ep, batch 8 | 1234 | 5.50 | 74 |" in build   # 1234.5 rounds to even
    assert "| `retain` | pending |" in build
    knowledge = qwen.knowledge_block(path)
    assert "| `full` | 0.750 (3/4) | 0.500 (2/4) |" in knowledge and "| `base` | pending | pending |" in knowledge
    uds = qwen.uds_block(path)
    assert "| `npo_x` | 0.300 | [0.290, 0.310] | 2 / 2 | 0.200 [0.190, 0.210] |" in uds   # smol NPO beside it
    assert "| `retain` | pending |  |  | 1.000 [0.990, 1.010] |" in uds


def test_method_order_compares_the_two_rankings(folders):
    from uds_analyses.doc_tables import qwen

    text = qwen.order_block(_snap(folders))
    assert "graddiff 0.400 > npo 0.300 > simnpo 0.200 > idknll 0.100" in text
    assert "idknll 0.400 > simnpo 0.300 > npo 0.200 > graddiff 0.100" in text   # the smol order, reversed
    assert "same order: **no**" in text


def test_exactness_and_precision_rows(folders):
    from uds_analyses.doc_tables import qwen

    camp, smol, out = folders
    _unit(camp, "exactness", "npo_x", {"examples": 8, "layers": 28, "max_abs_uds_diff": 2e-7,
                                       "max_abs_delta_diff": 3e-6, "seconds": {"fast": [10.0, 12.0], "naive": [200.0]},
                                       "naive_over_fast": 20.0})
    f32 = _score(0.31, [0.3, 0.32])
    _unit(camp, "precision", "npo_x", f32, seconds=99.0)
    text = qwen.exactness_block(_snap(folders))
    assert "| 2.00e-07 | 3.00e-06 | naive / fast = 20.0 (fast 10 s, naive 200 s) |" in text
    # bf16 per example 0.3, 0.3 against float32 0.3, 0.32: largest 0.02; model 0.3 vs 0.31
    assert "model UDS 0.3000 vs 0.3100: 1.00e-02; largest per-example 2.00e-02" in text


def test_layer_figure_needs_the_full_models_score(folders, tmp_path):
    from uds_analyses.doc_tables.qwen import plot_layers

    snap = json.loads(_snap(folders).read_text())
    assert snap["scores"]["npo_x"]["mean_s2"] == [0.0, 0.1, 0.2]
    assert plot_layers(snap, tmp_path / "layers.png") == tmp_path / "layers.png"
    assert (tmp_path / "layers.png").read_bytes()[:4] == b"\x89PNG"
    assert plot_layers({**snap, "profile": None}, tmp_path / "none.png") is None


def test_a_resumed_build_shows_its_timed_attempts(folders, tmp_path):
    from uds_analyses.doc_tables import qwen
    from uds_analyses.doc_tables.qwen import snapshot

    camp, smol, out = folders
    recipe = {"method": "finetune", "parent": "base", "train": {"lr": 1e-3, "epochs": 6, "batch_size": 8}}
    _unit(camp, "build", "retain", {"train_seconds": 848.9, "adapter_bytes": 1_000_000, "recipe": recipe})
    _unit(camp, "build", "npo_x", {"train_seconds": 250.0, "adapter_bytes": 1_000_000, "recipe": recipe,
                                   "attempts": [{"resumed_from_epoch": 0, "reached_epoch": 2, "seconds": 300.0},
                                                {"resumed_from_epoch": 2, "reached_epoch": 6, "seconds": 250.0}],
                                   "train_seconds_total": 550.0})
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"retain": {"attempts": [{"resumed_from_epoch": 3, "reached_epoch": 6,
                                                          "seconds": 848.9}],
                                            "train_seconds_total": None, "why": "stopped"},
                                 "npo_x": {"attempts": [], "why": "ignored: the unit has its own"}}))
    out.write_text(json.dumps(snapshot(camp, smol, notes)))
    build = qwen.build_block(out)
    assert "| `retain` | base | finetune, lr 0.001, 6 ep, batch 8 | 849 (epochs 4-6; epochs 1-3 not timed) |" in build
    assert "| `npo_x` | base | finetune, lr 0.001, 6 ep, batch 8 | 550 (2 attempts) |" in build   # 300 + 250
    assert json.loads(out.read_text())["builds"]["retain"]["why"] == "stopped"
    assert build.endswith("\n`retain`: stopped\n")


def test_the_weights_each_unit_read_are_compared_with_the_built_ones(folders):
    """Units that record the weights they read: one equal to the build unit's adapter digest, one a
    rebuild with other bits (named, with its rebuild seconds)."""
    from uds_analyses.doc_tables import qwen

    camp, smol, out = folders
    recipe = {"method": "finetune", "parent": "base", "train": {"lr": 1e-3, "epochs": 6, "batch_size": 8}}
    _unit(camp, "build", "npo_x", {"train_seconds": 250.0, "adapter_bytes": 1_000_000, "recipe": recipe,
                                   "adapter_digest": "aaa"})
    _unit(camp, "build", "full", {"train_seconds": 1234.5, "adapter_bytes": 1_000_000, "recipe": recipe,
                                  "adapter_digest": "fff"})
    doc = json.loads((camp / "knowledge" / "full.json").read_text())
    doc.pop("digest")
    doc["prepared"] = {"models": {"full": {"rebuilt_seconds": None, "weights": "fff"}}, "seconds": 5.0,
                       "peak_rss_bytes": 1}
    _write(camp / "knowledge" / "full.json", doc)
    doc = json.loads((camp / "score" / "npo_x.json").read_text())
    doc.pop("digest")
    doc["prepared"] = {"models": {"full": {"rebuilt_seconds": 2500.4, "weights": "ggg"},
                                  "npo_x": {"rebuilt_seconds": None, "weights": "aaa"}}, "seconds": 9.0,
                       "peak_rss_bytes": 1}
    _write(camp / "score" / "npo_x.json", doc)
    note = qwen.build_block(_snap(folders)).rsplit("\n\n", 1)[-1]
    assert note.startswith("Weights measured: 2 reads of a model found the adapter its build unit recorded, "
                           "1 another one (a rebuild that differs in its bits): `full` in `score/npo_x`.")
    assert "outside its seconds and memory: `full` for `score/npo_x` (2500 s).\n" in note
