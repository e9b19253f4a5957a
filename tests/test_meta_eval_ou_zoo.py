"""`--zoo ou:tofu`: Open-Unlearning's population from the registry, local copies preferred over the
hub, measured on the real TOFU files with OU's system prompt; here with tiny-world models standing in
for local copies."""

from __future__ import annotations

import json

import pytest

from checkpoints import ou_checkpoints
from meta_eval.measure import Job, Measurer, plan_jobs
from meta_eval.perturb import ORIG, relearn_config
from meta_eval.store import MeasurementStore
from meta_eval.population import OU_ZOO, POOL, UNLEARNED, available_members, ou_zoo, parse_zoo
from metrics.context import EvalSettings
from uds_core.defaults import OU_SYSTEM_PROMPT
from uds.cli import main
from uds_core.errors import UdsInputError

NPO = ou_checkpoints.UNLEARNED[0].alias


@pytest.fixture()
def local_copies(test_world, tmp_path):
    """A --models-dir with full, retain and one unlearned alias (tiny models as stand-ins)."""
    root = tmp_path / "ou_models"
    root.mkdir()
    for alias, name in (("full", "full"), ("retain", "retain"), (NPO, "retain")):
        (root / alias).symlink_to(test_world / "models" / name, target_is_directory=True)
    return root


def test_ou_zoo_is_the_registry_with_local_copies_first(local_copies):
    zoo = parse_zoo(OU_ZOO, str(local_copies))
    assert len(zoo.of_kind(UNLEARNED)) == len(ou_checkpoints.UNLEARNED) == 150
    pools = zoo.of_kind(POOL)
    assert len(pools) == 60 and sum(m.pool == "P" for m in pools) == 30 == sum(m.pool == "N" for m in pools)
    spec = {m.name: m.spec for m in zoo.members}
    assert spec["full"] == str(local_copies / "full") and spec[NPO] == str(local_copies / NPO)
    other = ou_checkpoints.UNLEARNED[1].alias
    assert spec[other] == other                     # not copied: the registry alias (hub)
    assert zoo.preset is None and zoo.system_prompt == OU_SYSTEM_PROMPT and zoo.base is None
    assert not any("fluency" in j.keys for j in plan_jobs(zoo, ["es"], fluency=False))


def test_ou_zoo_is_measured_on_tofu_like_uds_metrics(local_copies, tofu_dir, tmp_path):
    """The meta-evaluation's cached value of a member equals what `uds metrics` reports for the
    same model, references, data and system prompt."""
    zoo = ou_zoo(str(local_copies), str(tofu_dir))
    settings = EvalSettings(batch_size=32, max_new_tokens=8, system_prompt=zoo.system_prompt, progress=False)
    measurer = Measurer(zoo, MeasurementStore(tmp_path / "store"), tmp_path / "relearned", settings,
                        relearn_config(32, 2e-4))
    assert len(measurer.splits["forget"]) == 400 and len(measurer.records) == 367
    member = next(m for m in zoo.members if m.name == NPO)
    entry = measurer.run(Job(member, ORIG, ("prob", "em")))
    out = tmp_path / "metrics"
    assert main(["metrics", "--model", member.spec, "--full", zoo.full, "--retain", zoo.retain,
                 "--tofu-dir", str(tofu_dir), "--metrics", "prob,em", "--out", str(out),
                 "--batch-size", "32", "--system-prompt", OU_SYSTEM_PROMPT]) == 0
    standalone = json.loads((out / "metrics.json").read_text())["metrics"]
    for key in ("prob", "em"):
        assert standalone[key] > 0 and entry["values"][key] == pytest.approx(standalone[key], abs=1e-6)


def test_ou_zoo_bad_input(tmp_path, capsys):
    assert main(["meta-eval", "--zoo", OU_ZOO, "--models-dir", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    assert main(["meta-eval", "--zoo", "tiny:test", "--models-dir", str(tmp_path)]) == 2
    assert "ou:tofu only" in capsys.readouterr().err
    assert main(["meta-eval", "--zoo", "hub:whatever"]) == 2
    assert "ou:tofu" in capsys.readouterr().err


def test_built_only_keeps_the_local_copies_and_names_the_rest(local_copies, tmp_path):
    zoo, left_out = available_members(parse_zoo(OU_ZOO, str(local_copies)))
    assert [m.name for m in zoo.members] == ["full", "retain", NPO]
    assert len(left_out) == 150 - 1 + 60 and NPO not in left_out and "full" not in left_out
    (local_copies / "retain").unlink()                # a reference missing is an error, not a cut
    with pytest.raises(UdsInputError, match="retain model is not available"):
        available_members(parse_zoo(OU_ZOO, str(local_copies)))


def test_ou_zoo_on_another_split_takes_its_rows_and_retain_anchor(local_copies, tofu_dir, tmp_path):
    """`uds meta-eval --zoo ou:tofu --split forget01`: the measurer's forget set, annotated records
    and retain anchor are forget01's (a local copy under the retain99 alias is preferred)."""
    (local_copies / "llama32-1b_retain99").symlink_to(local_copies / "retain", target_is_directory=True)
    zoo = ou_zoo(str(local_copies), str(tofu_dir), split="forget01")
    assert zoo.retain == str(local_copies / "llama32-1b_retain99") and zoo.member("retain").spec == zoo.retain
    settings = EvalSettings(batch_size=32, max_new_tokens=8, system_prompt=zoo.system_prompt, progress=False)
    measurer = Measurer(zoo, MeasurementStore(tmp_path / "store"), tmp_path / "relearned", settings,
                        relearn_config(32, 2e-4))
    hand = json.loads((tofu_dir / "forget10_annotated.json").read_text())
    assert len(measurer.splits["forget"]) == 40 and [r["idx"] for r in measurer.records] == \
        [r["idx"] - 360 for r in hand if r["idx"] >= 360]
    assert measurer.session.roles["retain"] == zoo.retain
