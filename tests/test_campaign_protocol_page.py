"""docs/smol_meta_eval.md's protocol block (uds_analyses/doc_tables/campaign_protocol.py): its rows
agree with the member names protocol.json fixes, its spec column with spec §7.2's table as typed
here by hand, and a protocol whose digests the code's recipes do not match is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from uds_analyses.doc_tables.campaign_protocol import protocol_block
from uds_core.errors import UdsInputError

PROTOCOL = Path(__file__).resolve().parents[1] / "results" / "smol" / "campaign" / "protocol.json"
# spec §7.2 (learning rates / epochs / models), typed from the spec's table
SPEC_GRIDS = {"graddiff": ("1e-5, 2e-5, 5e-5", "5, 10", "18"), "simnpo": ("1e-5, 2e-5, 5e-5", "5, 10", "24"),
              "undial": ("1e-5, 1e-4, 3e-4", "5, 10", "18"), "rmu": ("1e-5, 2e-5, 5e-5", "5, 10", "18")}


def _rows(text: str) -> dict[str, list[str]]:
    rows = [line.strip("|").split(" | ") for line in text.splitlines() if line.startswith("| `")]
    return {r[0].strip(" `"): [c.strip() for c in r] for r in rows}


def test_rows_agree_with_the_member_names():
    protocol = json.loads(PROTOCOL.read_text())
    rows = _rows(protocol_block(PROTOCOL))
    by_group: dict[str, list[str]] = {}
    for name, m in protocol["members"].items():
        group = name if m["kind"] in ("full", "retain") else (
            f"{name.split('_lr')[0]} ({m['pool']})" if m["kind"] == "pool" else name.split("_")[0])
        by_group.setdefault(group, []).append(name)
    assert set(rows) == set(by_group)
    assert sum(int(r[1]) for r in rows.values()) == len(protocol["members"]) == 86
    for group, names in by_group.items():
        if group in ("full", "retain"):
            continue
        lrs = sorted({float(re.search(r"_lr([0-9.e-]+?)_", n).group(1)) for n in names})
        epochs = sorted({int(re.search(r"_ep(\d+)$", n).group(1)) for n in names})
        row = rows[group]
        assert int(row[1]) == len(names)
        assert [float(x) for x in row[4].split(", ")] == lrs, group
        assert [int(x) for x in row[5].split(", ")] == epochs, group
    assert all(int(rows[g][1]) == 10 for g in by_group if "(" in g)   # 6 variants x 5 rates x 2 epoch counts


def test_spec_column_is_spec_7_2():
    rows = _rows(protocol_block(PROTOCOL))
    for method, (lrs, epochs, n) in SPEC_GRIDS.items():
        spec = rows[method][-1].split(" / ")
        assert (spec[0], spec[1], spec[-1]) == (lrs, epochs, n), method


def test_settings_lines_come_from_the_protocol():
    protocol = json.loads(PROTOCOL.read_text())
    text = protocol_block(PROTOCOL)
    relearn = protocol["settings"]["relearn"]["train"]
    assert f"train.lr {relearn['lr']}" in text and f"train.seed {relearn['seed']}" in text
    assert f"at most {protocol['knowledge_check']['max_new_tokens']} new tokens" in text
    assert f"The {len(protocol['jobs'])} (model, setting) jobs" in text


@pytest.mark.parametrize("change", ["digest", "unknown member"])
def test_a_protocol_the_code_does_not_hold_is_refused(tmp_path, change):
    protocol = json.loads(PROTOCOL.read_text())
    if change == "digest":
        protocol["recipes"]["npo_lr3e-5_b01_a1_ep5"] = "0" * 16
        named = "npo_lr3e-5_b01_a1_ep5"
    else:
        protocol["recipes"]["npo_lr7e-5_b01_a1_ep5"] = "0" * 16
        protocol["members"]["npo_lr7e-5_b01_a1_ep5"] = dict(protocol["members"]["npo_lr3e-5_b01_a1_ep5"])
        named = "npo_lr7e-5_b01_a1_ep5"
    path = tmp_path / "protocol.json"
    path.write_text(json.dumps(protocol))
    with pytest.raises(UdsInputError, match=re.escape(named)):
        protocol_block(path)


def test_unlearned_rows_name_the_forms_the_trainer_uses(monkeypatch):
    """The cell's forms are the ones `train_unlearned` hands the method, seen by stubbing the method
    out, not the recipe's recorded words (which say chat + raw for every preset)."""
    from types import SimpleNamespace

    from checkpoints.methods import trainer
    from checkpoints.world.presets import get_preset

    protocol = json.loads(PROTOCOL.read_text())
    seen = []
    monkeypatch.setattr(trainer, "unlearn", lambda model, tok, sets, *a, **k: seen.append(tuple(sets.forms)))
    world = SimpleNamespace(forget=[], retain=[], idk=[])
    ctx = SimpleNamespace(load=lambda name: None, trainable=lambda model: model, tok=None, world=world,
                          preset=get_preset(protocol["preset"]), loop=lambda name: None, callbacks=None)
    trainer.train_unlearned(ctx, SimpleNamespace(parent="full", method="npo", train=None, hparams={}, name="x"))
    assert seen == [("chat",)]
    rows = _rows(protocol_block(PROTOCOL))
    unlearned = {m["method"] for m in protocol["members"].values() if m["kind"] == "unlearned"}
    assert len(unlearned) == 8
    for method in unlearned:
        assert "(chat form*)" in rows[method][3] and "raw" not in rows[method][3], method
    assert "encodes the forget and retain QA in the chat form only" in protocol_block(PROTOCOL)
