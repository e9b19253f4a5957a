"""Recipe digests (scheme 2) cover every world setting that shapes training data and the trainer's
code; the measuring code's digest covers the measuring modules; scheme 1 stays reproducible.

- Scheme 1 (`legacy_recipe_digest`) gives, from today's catalogue, every digest the committed smol
  campaign's protocol.json records (the folder is read under it), and none of the 60 pool digests
  moves with `bio_source`, `n_forget_authors`, `rehearse_utility` or `forms`: the hole. Scheme 2 changes every pool and
  unlearned digest when any of them changes, and when the world's seed does.
- Every preset field enters the world settings but the ones that only enumerate recipes; each of
  those is shown to act through the recipes' own fields.
- The code digests are taken of a copy of the source tree edited here: an edit to a loss changes
  the unlearning trainer's digest and not the fine-tuning trainer's; a comment or a docstring
  changes nothing; an edit to a metric family changes the measuring code's digest.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from checkpoints.catalogue import find_recipe, recipes
from checkpoints.world.presets import get_preset
from checkpoints.world.recipe_digest import (ENUMERATORS, legacy_recipe_digest, recipe_content, recipe_digest,
                                             trainer_code, world_settings)
from uds_core.code_digest import ROOT, clear_cache, code_digest

PROTOCOL = ROOT / "results" / "smol" / "campaign" / "protocol.json"
SMOL = get_preset("smol")


def _digests(preset, scheme: int, seed: int = 0) -> dict[str, str]:
    rs = [r for r in recipes(preset) if r.kind in ("unlearned", "pool")]
    if scheme == 1:
        return {r.name: legacy_recipe_digest(preset, r) for r in rs}
    return {r.name: recipe_digest(preset, r, seed=seed) for r in rs}


def test_scheme_1_reproduces_every_digest_the_committed_campaign_recorded():
    recorded = json.loads(PROTOCOL.read_text())["recipes"]
    assert len(recorded) == 86
    assert {n: legacy_recipe_digest(SMOL, find_recipe(SMOL, n)) for n in recorded} == recorded


@pytest.mark.parametrize("change", [
    {"world": {**SMOL.world, "bio_source": "answers"}},
    {"world": {**SMOL.world, "n_forget_authors": 3}},
    {"rehearse_utility": True},
    {"forms": ("chat", "raw")},
])
def test_world_settings_change_every_pool_and_unlearned_digest_under_scheme_2_only(change):
    changed = dataclasses.replace(SMOL, **change)
    old1, new1 = _digests(SMOL, 1), _digests(changed, 1)
    old2, new2 = _digests(SMOL, 2), _digests(changed, 2)
    pools = [n for n in old1 if find_recipe(SMOL, n).kind == "pool"]
    assert len(pools) == 60 and all(old1[n] == new1[n] for n in pools)   # scheme 1: the hole the audit found
    assert len(old2) == 84 and all(old2[n] != new2[n] for n in old2)


def test_the_world_seed_enters_scheme_2():
    a, b = _digests(SMOL, 2, seed=0), _digests(SMOL, 2, seed=1)
    assert all(a[n] != b[n] for n in a)


def test_every_preset_field_but_the_enumerators_is_a_world_setting():
    names = {f.name for f in dataclasses.fields(SMOL)}
    assert set(ENUMERATORS) == {"name", "base", "finetune", "unlearn_batch", "grid", "pool", "lmlm", "suppressed"}
    assert set(ENUMERATORS) <= names
    assert set(world_settings(SMOL, 0)) == names - set(ENUMERATORS) | {"seed"}


def test_the_enumerators_act_through_the_recipes_fields():
    """What the enumerators choose is in the recipes they make: a change moves those recipes'
    digests (and their descendants'), and no other."""
    def digests(p):
        return {r.name: recipe_digest(p, r, seed=0) for r in recipes(p)}
    kinds = {r.name: r.kind for r in recipes(SMOL)}
    before = digests(SMOL)
    for change, moved in (
            ({"grid": dataclasses.replace(SMOL.grid, epochs=(6,))}, {"unlearned"}),
            ({"pool": dataclasses.replace(SMOL.pool, seed=2)}, {"pool", "suppressed"}),
            ({"suppressed": dataclasses.replace(SMOL.suppressed, lr=3e-4)}, {"suppressed"}),
            ({"unlearn_batch": 4}, {"unlearned", "suppressed"}),
            ({"finetune": dataclasses.replace(SMOL.finetune, warmup_ratio=0.2)}, {"full", "retain", "unlearned", "pool",
                                                                        "suppressed"}),
            ({"base": dataclasses.replace(SMOL.base, seed=3)}, set(kinds.values()))):
        after = digests(dataclasses.replace(SMOL, **change))
        same = {n for n in before if after.get(n) == before[n]}
        assert {kinds[n] for n in set(before) - same} == moved, change
        assert all(kinds[n] not in moved for n in same), change


def test_a_recipe_digest_reaches_its_descendants_through_the_trainer_code(monkeypatch):
    """Another finetune trainer code changes full, retain, the unlearned models (children of full)
    and the suppressed members (grandchildren through the pool), never the base."""
    import checkpoints.world.recipe_digest as rd

    before = {r.name: recipe_digest(SMOL, r, seed=0) for r in recipes(SMOL)}
    real = rd.trainer_code
    monkeypatch.setattr(rd, "trainer_code", lambda m: "edited" if m == "finetune" else real(m))
    after = {r.name: recipe_digest(SMOL, r, seed=0) for r in recipes(SMOL)}
    moved = {n for n in before if before[n] != after[n]}
    kinds = {r.name: r.kind for r in recipes(SMOL)}
    assert {"full", "retain"} <= moved and "base" not in moved
    assert {n for n, k in kinds.items() if k == "unlearned"} <= moved
    assert not {n for n, k in kinds.items() if k == "pool"} & moved   # pools train from the base


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    for pkg in ("uds_core", "checkpoints", "metrics", "meta_eval"):
        shutil.copytree(ROOT / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{path}: {old!r} not found"
    path.write_text(text.replace(old, new, 1))
    clear_cache()   # digests are taken once per process; the files changed


def test_trainer_code_digests_follow_the_code_not_its_comments(tmp_path):
    root = _tree(tmp_path)
    unlearn = lambda: code_digest(["checkpoints.methods.trainer"], packages=("checkpoints", "uds_core"),  # noqa: E731
                                  root=root)
    finetune = lambda: code_digest(["checkpoints.world.core_trainers"], packages=("checkpoints", "uds_core"),  # noqa
                                   root=root)
    u0, f0 = unlearn(), finetune()
    assert u0 == code_digest(["checkpoints.methods.trainer"], packages=("checkpoints", "uds_core"))  # the copy = here
    losses = root / "checkpoints" / "methods" / "losses.py"
    _edit(losses, '"""', '"""A docstring edited here. ')
    _edit(losses, "from __future__", "# a comment added here\nfrom __future__")
    assert (unlearn(), finetune()) == (u0, f0)
    _edit(losses, 'Method("graddiff", graddiff_loss, {"gamma": 1.0, "alpha": 1.0}',
          'Method("graddiff", graddiff_loss, {"gamma": 1.0, "alpha": 2.0}')
    assert unlearn() != u0 and finetune() == f0


def test_the_measuring_code_digest_covers_the_metric_families(tmp_path):
    from meta_eval.measure import MEASURING, measure_code

    root = _tree(tmp_path)
    before = code_digest(MEASURING, root=root)
    assert before == measure_code()
    family = next((root / "metrics" / "families").glob("*.py"))
    _edit(family, "from __future__ import annotations", "from __future__ import annotations\n_EDITED_HERE = 1")
    assert code_digest(MEASURING, root=root) != before


def test_a_built_model_records_what_its_digest_covers(test_world):
    preset = get_preset("test")
    for name in ("base", "full", "retain"):
        meta = json.loads((test_world / "models" / name / "recipe.json").read_text())
        r = find_recipe(preset, name)
        assert meta["digest"] == recipe_digest(preset, r, seed=0) and meta["digest_scheme"] == 2
        assert meta["digest_covers"] == recipe_content(preset, r, seed=0)
        assert meta["digest_covers"]["trainer"]["code"] == trainer_code(r.method)
