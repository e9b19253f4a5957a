"""`uds meta-eval --from-campaign`: the meta-evaluation assembled from a campaign's files alone.

On a synthetic campaign written by the test (`campaign_fixtures`, sealed with the project's `seal`):
the numbers against ones derived independently from the values the test wrote (sklearn's AUC,
numpy means, spec §5.4's Q and R by hand, and `meta_evaluate` on the in-memory values); invalid
files (damaged, another recipe, another setting, unparsable, another build, misplaced) each
reported and left out; a partial campaign's "needs ..." states; bad input. On the repository: the
real campaign folder reads, and the committed snapshot is what its listed files assemble to.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from uds_analyses.doc_tables import campaign as pages
from uds_core.errors import UdsInputError
from meta_eval.assemble import meta_evaluate
from meta_eval.campaign.assemble import assemble_campaign
from uds_core.sealed import read_sealed
from meta_eval.campaign.read import campaign_zoo, read_campaign
from meta_eval.faithfulness import MIN_POOL
from meta_eval.pool_variants import confused_pairs, knowledge_by_variant
from meta_eval.published import PUBLISHED
from meta_eval.campaign.files import digest_of
from tests.campaign_fixtures import ANCHORS, KEYS, POOL, UNLEARNED, SyntheticCampaign

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "results/smol/campaign_meta_eval/meta_eval.json"
SNAPSHOT_NO_FILTERS = ROOT / "results/smol/campaign_meta_eval_no_filters/meta_eval.json"
ERASURE = {"uds", "s_mia_loss"}      # keys whose knowledge view is 1 - value (spec §5.2)


def oriented(key: str, v: float) -> float:
    return 1.0 - v if key in ERASURE else v


@pytest.fixture(scope="module")
def full_campaign(tmp_path_factory) -> SyntheticCampaign:
    c = SyntheticCampaign(tmp_path_factory.mktemp("campaign"), seed=1)
    c.measure_all()
    return c


def _assemble(root: Path, **kw) -> tuple[dict, list[dict], list[str]]:
    said: list[str] = []
    data = read_campaign(root, log=said.append)
    doc, rows = assemble_campaign(data, KEYS, **kw)
    return doc, rows, said


def test_faithfulness_from_files_matches_sklearn_and_numpy(full_campaign):
    c = full_campaign
    doc, _, said = _assemble(c.root)
    assert said == [] and doc["campaign"]["left_out"] == []
    for key in KEYS:
        p = [c.values[("orig", n)][key] for n, lab in POOL.items() if lab == "P"]
        n = [c.values[("orig", n)][key] for n, lab in POOL.items() if lab == "N"]
        labels = [1] * len(p) + [0] * len(n)
        auc = roc_auc_score(labels, [oriented(key, v) for v in p + n])
        f = doc["faithfulness"][key]
        assert f["auc_roc"] == pytest.approx(auc, abs=1e-12), key
        assert (f["p_mean"], f["n_mean"]) == (pytest.approx(np.mean(p)), pytest.approx(np.mean(n)))
        assert f["ci95"][0] <= f["auc_roc"] <= f["ci95"][1]
        assert doc["campaign"]["needs"][key]["faithfulness"] is None


def test_robustness_without_filters_is_spec_q_and_r_by_hand(full_campaign):
    c = full_campaign
    doc, _, _ = _assemble(c.root, use_filters=False)
    eps = 1e-12
    for key in KEYS:
        o = lambda s, n: oriented(key, c.values[(s, n)][key])  # noqa: E731
        q = [1 - min(1, abs(o("nf4", n) - o("orig", n)) / (abs(o("orig", n)) + abs(o("nf4", n)) + eps))
             for n in UNLEARNED]
        d_ret = o("relearn", "retain") - o("orig", "retain")
        r = [1 - min(1, abs((o("relearn", n) - o("orig", n)) - d_ret) / (abs(o("relearn", n) - o("orig", n))
                                                                           + abs(d_ret) + eps)) for n in UNLEARNED]
        rob = doc["robustness"][key]
        assert rob["quantization"] == pytest.approx(np.mean(q)) and rob["relearning"] == pytest.approx(np.mean(r))
        hm = 2 * np.mean(q) * np.mean(r) / (np.mean(q) + np.mean(r))
        assert rob["agg"] == pytest.approx(hm)
        auc = doc["faithfulness"][key]["auc_roc"]
        assert doc["overall"][key] == pytest.approx(2 * auc * hm / (auc + hm))


def test_with_filters_equals_meta_evaluate_on_the_values_written(full_campaign):
    """Reading the files changes nothing: the same as the assembly on the values kept in memory."""
    c = full_campaign
    doc, rows, _ = _assemble(c.root)
    data = read_campaign(c.root)
    direct = meta_evaluate(campaign_zoo(data).members, c.values, KEYS)
    for part in ("faithfulness", "robustness", "overall"):
        assert doc[part] == direct[part]
    assert rows == direct["benchmark"]
    assert {r["model"] for r in rows} == set(UNLEARNED) | {"full", "retain"}


def test_filter_counts_from_the_values_and_thresholds(full_campaign, tmp_path):
    """Each spec §5.5 rule counted here from the values (utility_rel from the benchmark rows, the
    knowledge view against the source's threshold), and the page's row says the same."""
    c = full_campaign
    doc, rows, _ = _assemble(c.root)
    util = {r["model"]: r["utility_rel"] for r in rows}
    path = tmp_path / "meta_eval.json"
    path.write_text(json.dumps(doc))
    page = {line.split(" | ")[0].strip("| "): line.strip("|").split(" | ") for line in
            pages.filters_block(path).splitlines()[2:]}
    for key in KEYS:
        source = "mia_loss" if key == "s_mia_loss" else key
        t = doc["faithfulness"][source]["threshold"]
        utility = {n for n in UNLEARNED if util[n] is not None and util[n] >= 0.8}
        rule = {n for n in UNLEARNED if oriented(source, c.values[("orig", n)][source]) <= t}
        f = doc["robustness"][key]["filters"]
        assert (f["utility_pass"], f["threshold_pass"]) == (len(utility), len(rule)), key
        assert sorted(doc["robustness"][key]["kept"]) == sorted(utility & rule), key
        raw = 1 - t if source in ERASURE else t
        assert page[key][1].strip() == f"`{source}` {'≥' if source in ERASURE else '≤'} {raw:.3f}"
        assert [int(x) for x in page[key][2:]] == [len(UNLEARNED), len(utility), len(rule), len(utility & rule)]


def test_variants_knowledge_coverage_anchors(full_campaign):
    c = full_campaign
    doc, _, _ = _assemble(c.root)
    camp = doc["campaign"]
    for key in KEYS:
        aucs = camp["variants"][key]["aucs"]
        for pair, a in aucs.items():
            pv, nv = pair.split("|")
            p = [oriented(key, c.values[("orig", n)][key]) for n in POOL if n.startswith(pv + "_")]
            n = [oriented(key, c.values[("orig", m)][key]) for m in POOL if m.startswith(nv + "_")]
            assert a["auc_roc"] == pytest.approx(roc_auc_score([1] * len(p) + [0] * len(n), p + n)), (key, pair)
        lowest = min(a["auc_roc"] for a in aucs.values())
        tied = sorted(pair for pair, a in aucs.items() if a["auc_roc"] == lowest)
        assert camp["variants"][key]["confused"] == (tied if lowest < 1 else [])
        means = camp["variants"][key]["means"]
        assert means["neg_bio"]["mean"] == pytest.approx(np.mean([c.values[("orig", n)][key] for n in POOL
                                                                   if n.startswith("neg_bio_")]))
    by = camp["knowledge"]["by_variant"]
    assert by["pos_bio"]["mean"] == pytest.approx(np.mean([c.knowledge[n] for n in POOL if n.startswith("pos_bio_")]))
    assert by["pos_bio"]["n"] == by["pos_bio"]["of"] == 2
    cov = camp["coverage"]
    assert cov["complete"] and cov["units"] == cov["units_total"] == len(c.protocol["jobs"])
    assert cov["pool_measured"] == len(POOL) and cov["unlearned"]["nf4"]["measured"] == len(UNLEARNED)
    used = {a["id"]: a["measurements"] for a in camp["anchors"]}
    relearned = len(UNLEARNED) + 1
    assert sorted(used.values()) == [relearned + 1, len(c.protocol["jobs"]) - relearned - 1]
    assert all(a["recorded"] for a in camp["anchors"])
    assert camp["spread"][0]["max_abs_diff"] == 2e-4


def test_spread_table_says_which_build_each_committed_uds_came_from(full_campaign, tmp_path):
    doc, _, _ = _assemble(full_campaign.root)
    path = tmp_path / "meta_eval.json"
    path.write_text(json.dumps(doc))
    block = pages.anchors_block(path)
    spread = block[block.index("Spread (`spread/`)"):]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in spread.splitlines() if ln.startswith("| `")]
    first, rebuilt = (digest_of(a)[:16] for a in ANCHORS)   # the fixture re-scores with the second build
    assert [r[:3] for r in rows] == [[f"`{rebuilt}`", f"`{m}`", f"`{first}`"]
                                     for m in ("npo_lr1e-5_ep5", "graddiff_lr1e-5_ep5")]
    assert [float(c) for r in rows for c in r[3:]] == pytest.approx([0.3, 0.3002, 2e-4, 0.4, 0.40005, 5e-5], abs=1e-6)


def _damage(c: SyntheticCampaign) -> dict[str, str]:
    """Write one bad file of each kind; relative path -> a word its reason must contain."""
    bad = {}
    path = c.measure("orig", "pos_para_lr2e-4_ep5")
    doc = json.loads(path.read_text())
    doc["values"]["es"] = 0.5                          # edited after sealing
    path.write_text(json.dumps(doc))
    bad["measurements/orig/pos_para_lr2e-4_ep5.json"] = "digest"
    c.measure("orig", "neg_bio_lr2e-4_ep5", recipe_digest="0" * 16)
    bad["measurements/orig/neg_bio_lr2e-4_ep5.json"] = "recipe"
    c.measure("nf4", "rmu_lr1e-5_ep5", settings_digest="0" * 20)
    bad["measurements/nf4/rmu_lr1e-5_ep5.json"] = "settings"
    (c.root / "measurements/relearn/rmu_lr1e-5_ep5.json").write_text('{"model": "rmu_lr1e-5_ep5", "val')
    bad["measurements/relearn/rmu_lr1e-5_ep5.json"] = "parse"
    c.measure("orig", "neg_pert_lr2e-4_ep5", model_fingerprint="fp-an-older-build")
    bad["measurements/orig/neg_pert_lr2e-4_ep5.json"] = "build"
    c.measure("orig", "pos_bio_lr2e-4_ep5", values={"es": 0.5})
    bad["measurements/orig/pos_bio_lr2e-4_ep5.json"] = "lacks"
    shutil.copy(c.measure("orig", "pos_full_lr2e-4_ep5"), c.root / "measurements/orig/neg_retain_lr2e-4_ep5.json")
    bad["measurements/orig/neg_retain_lr2e-4_ep5.json"] = "names"
    return bad


def _aucs(**by_pair: float | None) -> dict:
    return {pair.replace("__", "|"): {"auc_roc": a, "n_p": 2, "n_n": 2} for pair, a in by_pair.items()}


def test_confused_pairs_are_every_pair_at_the_lowest_auc_below_one(tmp_path):
    tied = _aucs(pos_full__neg_retain=1.0, pos_bio__neg_pert=0.25, pos_para__neg_pert=0.25, pos_bio__neg_bio=0.5)
    perfect = _aucs(pos_full__neg_retain=1.0, pos_bio__neg_pert=1.0, pos_para__neg_pert=None)
    three = _aucs(pos_full__neg_retain=0.0, pos_bio__neg_pert=0.0, pos_para__neg_pert=0.0, pos_bio__neg_bio=1.0)
    empty = _aucs(pos_full__neg_retain=None)
    cases = {"tied": tied, "perfect": perfect, "three": three, "empty": empty}
    confused = {name: confused_pairs(a) for name, a in cases.items()}
    assert confused == {"tied": ["pos_bio|neg_pert", "pos_para|neg_pert"], "perfect": [], "three":
                        ["pos_bio|neg_pert", "pos_full|neg_retain", "pos_para|neg_pert"], "empty": []}
    doc = {"campaign": {"min_pool": MIN_POOL, "variants": {
        name: {"aucs": {p: a.get(p, {"auc_roc": None, "n_p": 0, "n_n": 0}) for p in tied}, "confused": confused[name]}
        for name, a in cases.items()}}}
    path = tmp_path / "meta_eval.json"
    path.write_text(json.dumps(doc))
    last = {line.split(" | ")[0].strip("| "): line.rstrip(" |").split(" | ")[-1]
            for line in pages.variants_block(path).splitlines()[2:]}
    assert last == {"tied": "pos_bio vs neg_pert, pos_para vs neg_pert (0.250)", "perfect": "none",
                    "three": "3 pairs at 0.000", "empty": "—"}


def test_knowledge_above_every_n_member_counts_questions_by_hand(full_campaign, tmp_path):
    members = read_campaign(full_campaign.root).members

    def row(variant: str, pool: str, right: int) -> dict:
        return {"variant": variant, "pool": pool, "forget_questions": right / 37, "paraphrased_questions": None,
                "n_questions": 37}
    rows = [row("neg_retain", "N", 2), row("neg_bio", "N", 3), row("neg_pert", "N", 0),
            row("pos_bio", "P", 5), row("pos_bio", "P", 3), row("pos_para", "P", 4), row("pos_full", "P", 30)]
    by = knowledge_by_variant(rows, members)
    assert by["pos_bio"]["above_n"] == 1 and by["pos_bio"]["margins"] == [0, 2]   # 3 ties the best N (3), 5 is +2
    assert by["pos_para"]["margins"] == [1] and by["pos_full"]["margins"] == [27]
    assert by["pos_bio"]["n_max"] == pytest.approx(3 / 37) and "above_n" not in by["neg_bio"]
    alone = knowledge_by_variant([row("pos_bio", "P", 5)], members)["pos_bio"]
    assert alone["above_n"] is None and alone["margins"] == []
    path = tmp_path / "meta_eval.json"
    path.write_text(json.dumps({"campaign": {"knowledge": {"by_variant": by, "members": []}}}))
    text = pages.knowledge_block(path)
    assert ("- `pos_bio`: 1 of 2 built members answer more forget questions than every built N member "
            "(the best N member: 0.081); margins over it: +0, +2 questions of 37") in text


def test_invalid_files_are_reported_and_left_out(tmp_path):
    c = SyntheticCampaign(tmp_path / "c", seed=2)
    c.measure_all()
    bad = _damage(c)
    c.values = {k: v for k, v in c.values.items() if f"measurements/{k[0]}/{k[1]}.json" not in bad}
    doc, _, said = _assemble(c.root)
    assert len(said) == len(bad)
    for rel, word in bad.items():
        line = next(s for s in said if str(c.root / rel) in s)
        assert word in line and line.endswith("left out") and "\n" not in line, line
        assert rel not in doc["campaign"]["inputs"]
    assert {x["path"] for x in doc["campaign"]["left_out"]} == set(bad)
    # left out means left out: the same as a folder that never had those files
    clean = SyntheticCampaign(tmp_path / "clean", seed=99)
    for (setting, name), values in c.values.items():
        clean.measure(setting, name, values=values, anchors=1 if setting == "relearn" or
                      (setting, name) == ("nf4", "rmu_lr1e-5_ep5") else 0)
    clean.anchors_and_spread()
    ref, _, _ = _assemble(clean.root)
    for part in ("faithfulness", "robustness", "overall"):
        assert doc[part] == ref[part]
    assert doc["faithfulness"]["es"]["n_p"] == sum(1 for n, lab in POOL.items() if lab == "P") - 2


def test_partial_campaign_says_what_each_statistic_needs(tmp_path):
    c = SyntheticCampaign(tmp_path, seed=3)
    c.measure("orig", "full")
    c.measure("orig", "retain")
    c.measure("orig", "pos_full_lr1e-4_ep5")
    c.measure("orig", "npo_lr1e-5_ep5")
    doc, _, _ = _assemble(c.root)
    n_p, n_n = 1, 0
    for key in KEYS:
        need = doc["campaign"]["needs"][key]
        assert doc["faithfulness"][key]["auc_roc"] is None
        assert need["faithfulness"] == f"needs {MIN_POOL - n_p} more P and {MIN_POOL - n_n} more N"
        assert need["p_mean"] is None and need["n_mean"] == "needs 1 more N"
        assert need["q"] == "needs 1 more unlearned model measured as built and NF4"
        assert need["r"] == ("needs retain measured as built and relearned; "
                             "1 more unlearned model measured as built and relearned")
        assert need["robustness"].startswith("needs 1 more unlearned model measured as built and NF4")
        assert doc["overall"][key] is None and need["overall"].startswith("needs 1 more P and 2 more N")
    cov = doc["campaign"]["coverage"]
    assert (cov["units"], cov["pool_measured"], cov["unlearned"]["orig"]["measured"]) == (4, 1, 1)
    assert not cov["complete"] and not cov["retain_relearned"]
    vs = doc["versus_published"]["faithfulness"]
    assert vs["rho"] is None and vs["needs"].startswith("needs at least 3 metrics with a value (0 now")


def test_partial_page_shows_needs_not_numbers(tmp_path):
    c = SyntheticCampaign(tmp_path / "c", seed=4)
    for name in ("full", "retain", "pos_full_lr1e-4_ep5", "pos_bio_lr1e-4_ep5", "neg_retain_lr1e-4_ep5"):
        c.measure("orig", name)
    doc, _, _ = _assemble(c.root)
    path = tmp_path / "results/smol/snap/meta_eval.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    status = pages.status_block(path)
    n_p = sum(v == "P" for v in POOL.values())
    assert "partial: 5 of" in status and f"| pool members, P (knowledge present) | 2 | {n_p} |" in status
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ") for line in pages.results_block(path).splitlines()[2:]}
    for key in KEYS:
        cells = rows[key]
        assert cells[2] == f"*needs 1 more N* ({PUBLISHED[key]['faithfulness']:.3f})"
        assert cells[3] == f"{doc['faithfulness'][key]['p_mean']:.3f} ({PUBLISHED[key]['p_mean']:.3f})"
    assert "*needs at least 3 metrics" in pages.spearman_block(path)


def test_compute_is_the_sum_of_the_files_timings(tmp_path):
    c = SyntheticCampaign(tmp_path / "c", seed=5)
    machine = {"cpu": "Test CPU", "threads": 1}
    timed = {"pos_full_lr1e-4_ep5": ({"es": 10.5, "uds": 4.5}, 100.0), "neg_retain_lr1e-4_ep5": ({"es": 20.0}, 200.0),
             "pos_bio_lr1e-4_ep5": ({"es": 7.0}, None)}   # a build without a recorded time is not counted
    for name, (seconds, train) in timed.items():
        c.measure("orig", name, seconds=seconds, machine=machine)
        path = c.root / "builds" / f"{name}.json"
        build = {k: v for k, v in read_sealed(path)[0].items() if k != "digest"}
        c._write(path, build | {"train_seconds": train, "machine": machine})
    doc, _, said = _assemble(c.root)
    assert said == [] and len(doc["campaign"]["left_out"]) == 0
    compute = doc["campaign"]["compute"]
    assert compute["builds"]["n"] == 2 and compute["builds"]["seconds"] == pytest.approx(300.0)
    assert compute["measurements"] == {"n": 3, "seconds": pytest.approx(42.0),
                                       "by_kind": {"pool:orig": {"n": 3, "seconds": pytest.approx(42.0)}}}
    assert compute["cpus"] == ["Test CPU"] and compute["threads"] == [1]
    path = tmp_path / "meta_eval.json"
    path.write_text(json.dumps(doc))
    assert "2 builds, 0.1 h of training; 3 measurements, 0.0 h of metrics (Test CPU, 1 torch thread(s)" \
        in pages.status_block(path)


def test_bad_input_is_one_line_exit_2(tmp_path, uds):
    missing = uds("meta-eval", "--from-campaign", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and "no such folder" in missing.stderr
    (tmp_path / "plain").mkdir()
    plain = uds("meta-eval", "--from-campaign", str(tmp_path / "plain"))
    assert plain.returncode == 2 and "not a campaign folder" in plain.stderr
    (tmp_path / "protocol.json").write_text("{}")
    a_file = uds("meta-eval", "--from-campaign", str(tmp_path / "protocol.json"))
    assert a_file.returncode == 2 and "a file, not a campaign folder" in a_file.stderr
    SyntheticCampaign(tmp_path / "empty")
    empty = uds("meta-eval", "--from-campaign", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "no measurement files" in empty.stderr
    both = uds("meta-eval", "--from-campaign", str(tmp_path / "empty"), "--shard", "0/2")
    assert both.returncode == 2 and "--shard" in both.stderr
    for r in (missing, plain, a_file, empty, both):
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    c = SyntheticCampaign(tmp_path / "damaged")
    c.measure("orig", "full", recipe_digest="0" * 16)
    damaged = uds("meta-eval", "--from-campaign", str(c.root))
    lines = damaged.stderr.strip().splitlines()
    assert damaged.returncode == 2 and len(lines) == 2 and "another recipe" in lines[0]
    assert "none of its 1 measurement files is valid" in lines[1]
    with pytest.raises(UdsInputError):
        read_campaign(tmp_path / "plain")


def test_command_writes_what_report_and_leaderboard_read(full_campaign, tmp_path, uds):
    out = tmp_path / "out"
    r = uds("meta-eval", "--from-campaign", str(full_campaign.root), "--out", str(out), "--metrics", ",".join(KEYS))
    assert r.returncode == 0, r.stderr
    for name in ("meta_eval.json", "results.json", "summary.md", "pn_histograms.png", "pn_variant_histograms.png",
                 "quantization_scatter.png", "relearning_scatter.png"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "meta_eval.json").read_text())
    ref, _, _ = _assemble(full_campaign.root)
    assert doc["faithfulness"] == json.loads(json.dumps(ref["faithfulness"]))
    assert set(doc["values"]["orig"]) == {n for s, n in full_campaign.values if s == "orig"}
    # `ranking` (what doc pages rank by) is summary.md's row order: overall, then AUC, descending
    by_hand = sorted(KEYS, key=lambda k: (-doc["overall"][k], -doc["faithfulness"][k]["auc_roc"], k))
    printed = [line.split("|")[2].strip() for line in (out / "summary.md").read_text().splitlines()
               if re.match(r"\| \d+ \|", line)]
    assert doc["ranking"] == by_hand == printed
    lb = uds("leaderboard", "--results", str(out / "results.json"))
    assert lb.returncode == 0 and "npo_lr1e-5_ep5" in lb.stdout
    report = uds("report", "--results", str(out), "--out", str(tmp_path / "site"))
    assert report.returncode == 0 and "1 meta-evaluations" in report.stderr + report.stdout


def test_the_real_campaign_folder_reads():
    """Whatever its size: every measurement file is either used or said, and the tables assemble."""
    from metrics.registry import META_KEYS

    root = ROOT / "results/smol/campaign"
    said: list[str] = []
    data = read_campaign(root, log=said.append)
    doc, _ = assemble_campaign(data, META_KEYS)
    files = sorted(p.relative_to(root).as_posix() for p in (root / "measurements").glob("*/*.json"))
    used = [p for p in doc["campaign"]["inputs"] if p.startswith("measurements/")]
    left = [x["path"] for x in doc["campaign"]["left_out"] if x["path"].startswith("measurements/")]
    assert sorted(used + left) == files and len(said) == len(doc["campaign"]["left_out"])
    assert doc["campaign"]["coverage"]["units"] == len(used)


@pytest.mark.parametrize("snapshot", [SNAPSHOT, SNAPSHOT_NO_FILTERS], ids=["filters", "no_filters"])
def test_committed_snapshot_is_what_its_files_assemble_to(tmp_path, snapshot):
    """results/smol/campaign_meta_eval (and its --no-filters twin) was assembled from the files its
    `campaign.inputs` lists; those files (the campaign only adds files) must still assemble to it."""
    from metrics.registry import META_KEYS

    snap = json.loads(snapshot.read_text())
    src = ROOT / snap["campaign"]["folder"]
    for rel, digest in snap["campaign"]["inputs"].items():
        doc, _ = read_sealed(src / rel)
        if doc is None or doc["digest"] != digest:
            pytest.skip(f"{src / rel} changed since the snapshot (a redone unit): regenerate the page")
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src / rel, tmp_path / rel)
    (tmp_path / "measurements").mkdir(exist_ok=True)
    doc, _ = assemble_campaign(read_campaign(tmp_path), META_KEYS, use_filters=snap["settings"]["filters"])
    fresh = json.loads(json.dumps(doc))
    for part in ("faithfulness", "robustness", "overall", "ranking", "versus_published"):
        assert fresh[part] == snap[part], part
    keep = lambda d: {k: v for k, v in d.items() if k != "folder"}  # noqa: E731
    assert keep(fresh["campaign"]) == keep(snap["campaign"])
