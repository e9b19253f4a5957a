"""Adapter folders are members of every population source: `ou:tofu` (meta-eval), `ou:unlearned`
and a spec file (sweep). Stand-in folders only: membership reads the files' presence, no weights."""

from __future__ import annotations

import json

from checkpoints import ou_checkpoints
from checkpoints.specs import resolve_spec
from meta_eval.population import OU_ZOO, UNLEARNED, available_members, model_identity, parse_zoo
from uds.commands.sweep import model_specs

NPO = ou_checkpoints.UNLEARNED[0].alias
GA = ou_checkpoints.UNLEARNED[1].alias


def _models_dir(tmp_path):
    root = tmp_path / "ou_models"
    for name in ("full", "retain"):
        (root / name).mkdir(parents=True)
        (root / name / "config.json").write_text(json.dumps({"model_type": "llama"}))
    adapter = root / NPO   # a LoRA unlearning run saved as an adapter on the local full model
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps(
        {"peft_type": "LORA", "base_model_name_or_path": str(root / "full"), "r": 4}))
    (adapter / "adapter_model.safetensors").write_bytes(b"stand-in")
    (root / GA).mkdir()   # an empty folder (a download that never ran) is no member
    return root


def test_ou_zoo_takes_an_adapter_folder_as_a_local_copy(tmp_path):
    root = _models_dir(tmp_path)
    zoo = parse_zoo(OU_ZOO, str(root))
    spec = {m.name: m.spec for m in zoo.members}
    assert spec[NPO] == str(root / NPO) and spec[GA] == GA   # GA: the registry alias, not the empty folder
    kept, left_out = available_members(zoo)
    assert [m.name for m in kept.members] == ["full", "retain", NPO]
    assert kept.members[2].kind == UNLEARNED and GA in left_out
    resolved = resolve_spec(spec[NPO])
    assert resolved.kind == "adapter" and resolved.base.location == str((root / "full").resolve())
    # a cached measurement of the adapter is tied to the adapter and its base together
    ident = model_identity(spec[NPO])
    assert ident.endswith("+" + model_identity(str(root / "full"))) and ident != model_identity(str(root / "full"))


def test_sweep_sources_take_adapter_folders(tmp_path):
    root = _models_dir(tmp_path)
    assert str(root / NPO) in model_specs("ou:unlearned", str(root))
    listing = tmp_path / "models.txt"
    listing.write_text(f"# one adapter\n{root / NPO}\n")
    assert model_specs(str(listing)) == [str(root / NPO)]
