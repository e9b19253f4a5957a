"""The attack campaign's result page, from files alone: a synthetic attack campaign written here
(sealed as the campaign seals its files), assembled by `uds attack --from-campaign`, against numbers
derived here: Spearman's rho as the Pearson correlation of average ranks (numpy), its bootstrap
interval by a loop over the same resamples, the strongest attack per model by hand, the AUCs by
scikit-learn; planted truths (a metric whose knowledge view is the recovered share has rho 1, an
erasure metric equal to one minus it too); the label check's means; the rebuild spread against a
legacy folder; the page blocks render those numbers, and say so while no result exists.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from meta_eval.campaign.attack_assemble import assemble_attacks
from meta_eval.campaign.files import settings_digest
from meta_eval.campaign.read import read_campaign
from uds_analyses.doc_tables import attacks as page
from uds_core.sealed import seal
from tests.campaign_fixtures import SyntheticCampaign

KEYS = ["es", "uds", "mia_loss", "s_mia_loss"]
ATTACKS = ["plain", "relearn", "quant_int8"]
UNLEARNED = [f"u{i}" for i in range(8)]
SUP, PARENTS, CONTROLS = [f"sup_p{i}" for i in range(4)], [f"p{i}" for i in range(4)], [f"n{i}" for i in range(4)]
CODE = "c" * 20
SETTINGS = {"orig": {}, "attack": {"settings": {"seed": 0}, "attacks": {a: {} for a in ATTACKS}}}
METRIC_SETTINGS = {"batch_size": 4}


def _members() -> dict:
    m = {"full": ("full", None, "full"), "retain": ("retain", None, "retain")}
    m |= {n: ("unlearned", None, "npo") for n in UNLEARNED} | {n: ("suppressed", "S", "idknll") for n in SUP}
    m |= {n: ("pool", "P", None) for n in PARENTS} | {n: ("pool", "N", None) for n in CONTROLS}
    return {n: {"kind": k, "pool": p, "method": meth, "epoch": 5} for n, (k, p, meth) in m.items()}


class SyntheticAttackCampaign:
    def __init__(self, root: Path, seed: int = 0):
        self.root, self.rng = root, np.random.default_rng(seed)
        members = _members()
        jobs = {f"attack/{n}": ATTACKS for n in members}
        jobs |= {f"orig/{n}": KEYS for n, m in members.items() if not (m["kind"] == "pool" and m["pool"] == "P")}
        self.protocol = {"version": 2, "plan": "attack", "zoo": "tiny:synthetic", "preset": "synthetic", "seed": 0,
                         "keys": KEYS, "members": members, "recipes": {n: f"r-{n}" for n in members},
                         "recipe_scheme": 2, "measure_code": CODE, "jobs": jobs, "settings": SETTINGS,
                         "metric_settings": METRIC_SETTINGS}
        self.values: dict[tuple[str, str], dict] = {}
        self._write("protocol.json", self.protocol)

    def _write(self, rel: str, doc: dict) -> None:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(seal(doc), indent=1, sort_keys=True))

    def measure(self, setting: str, name: str, values: dict, fingerprint: str | None = None) -> None:
        m = self.protocol["members"][name]
        fp = fingerprint or f"fp-{name}"
        self._write(f"builds/{name}.json", {"model": name, "kind": m["kind"], "pool": m["pool"], "method": m["method"],
                                            "recipe_digest": f"r-{name}", "fingerprint": fp})
        self._write(f"measurements/{setting}/{name}.json", {
            "model": name, "kind": m["kind"], "pool": m["pool"], "method": m["method"], "epoch": 5, "setting": setting,
            "recipe_digest": f"r-{name}", "settings_digest": settings_digest(2, CODE, setting, SETTINGS[setting],
                                                                              METRIC_SETTINGS),
            "model_fingerprint": fp, "anchors": {}, "values": values, "errors": {}, "seconds": {}})
        self.values[(setting, name)] = values

    def fill(self) -> None:
        r = self.rng
        for n in self.protocol["members"]:
            kind, pool = self.protocol["members"][n]["kind"], self.protocol["members"][n]["pool"]
            know = {"full": 0.9, "retain": 0.05, "S": 0.1, "P": 0.8, "N": 0.05}.get(pool or kind, None)
            plain = float(r.uniform(0, 0.6)) if know is None else know
            att = {"plain": plain, "relearn": min(1.0, plain + (0.6 if pool in ("S", "P") or kind == "full" else
                                                                float(r.uniform(0, 0.4)))),
                   "quant_int8": float(r.uniform(0, 1)) if kind == "unlearned" else plain}
            if n == UNLEARNED[3]:
                att["quant_int8"] = None          # an attack that could not run on this model
            self.measure("attack", n, att)
        for n, m in self.protocol["members"].items():
            if f"orig/{n}" not in self.protocol["jobs"]:
                continue
            vals = {k: float(r.uniform(0, 1)) for k in KEYS}
            if m["kind"] == "unlearned":   # planted: es is the recovered knowledge, uds its complement
                best = max(v - self.values[("attack", "retain")][a] for a, v in self.values[("attack", n)].items()
                           if v is not None)
                vals["es"], vals["uds"] = best, 1.0 - best
            if m["kind"] == "suppressed":   # planted: mia_loss separates S from the N controls perfectly
                vals["mia_loss"] = 0.9 + 0.01 * SUP.index(n)
            if n in CONTROLS:
                vals["mia_loss"] = 0.2 + 0.1 * CONTROLS.index(n)
            self.measure("orig", n, vals)


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    c = SyntheticAttackCampaign(tmp_path_factory.mktemp("attack_camp") / "attack_campaign")
    c.fill()
    return c


@pytest.fixture(scope="module")
def result(camp):
    return assemble_attacks(read_campaign(camp.root), KEYS)


def _spearman(x, y) -> float:
    from scipy.stats import rankdata

    return float(np.corrcoef(rankdata(x), rankdata(y))[0, 1])


def _best(camp, n) -> float:
    base = camp.values[("attack", "retain")]
    return max(v - base[a] for a, v in camp.values[("attack", n)].items() if v is not None)


def test_strongest_attack_is_the_largest_recovery_above_retain(camp, result):
    for n in UNLEARNED:
        assert result["recovered"]["strongest"][n]["above_retain"] == pytest.approx(_best(camp, n), abs=1e-15)
    assert result["recovered"]["above_retain"][UNLEARNED[3]]["quant_int8"] is None


def test_rho_and_its_interval_match_a_second_implementation(camp, result):
    ys = [_best(camp, n) for n in UNLEARNED]
    for key in KEYS:
        x = [camp.values[("orig", n)][key] for n in UNLEARNED]
        x = [1 - v for v in x] if key in ("uds", "s_mia_loss") else x
        r = result["rho_strongest"][key]
        assert r["rho"] == pytest.approx(_spearman(x, ys), abs=1e-12) and r["n"] == len(UNLEARNED)
        rng, rhos = np.random.default_rng(0), []
        for idx in rng.integers(0, len(x), size=(2000, len(x))):
            xs, yy = np.array(x)[idx], np.array(ys)[idx]
            if np.ptp(xs) > 0 and np.ptp(yy) > 0:
                rhos.append(_spearman(xs, yy))
        assert r["ci95"] == pytest.approx(list(np.quantile(rhos, [0.025, 0.975])), abs=1e-12)
        assert r["resamples_used"] == len(rhos)
    assert result["rho_strongest"]["es"]["rho"] == pytest.approx(1.0) == result["rho_strongest"]["uds"]["rho"]
    assert result["rho_strongest"]["uds"]["ci95"] == pytest.approx([1.0, 1.0])


def test_rho_per_attack_uses_that_attack_alone(camp, result):
    base = camp.values[("attack", "retain")]
    for a in ATTACKS:
        pairs = [(camp.values[("orig", n)]["mia_loss"], camp.values[("attack", n)][a] - base[a])
                 for n in UNLEARNED if camp.values[("attack", n)][a] is not None]
        r = result["rho_by_attack"][a]["mia_loss"]
        assert r["n"] == len(pairs) and r["rho"] == pytest.approx(_spearman(*zip(*pairs)), abs=1e-12)


def test_aucs_of_the_suppressed_pool_against_the_controls_are_sklearns(camp, result):
    for key in KEYS:
        pos = [camp.values[("orig", n)][key] for n in SUP]
        neg = [camp.values[("orig", n)][key] for n in CONTROLS]
        scores = [1 - v for v in pos + neg] if key in ("uds", "s_mia_loss") else pos + neg
        auc = roc_auc_score([1] * len(pos) + [0] * len(neg), scores)
        assert result["auc_suppressed_vs_controls"][key]["auc_roc"] == pytest.approx(auc, abs=1e-12)
    assert result["auc_suppressed_vs_controls"]["mia_loss"]["auc_roc"] == 1.0


def test_the_label_check_means(camp, result):
    lc = result["label_check"]
    for group, names in (("suppressed", SUP), ("parents", PARENTS), ("controls", CONTROLS)):
        for a in ("plain", "relearn"):
            assert lc["means"][group][a] == pytest.approx(np.mean([camp.values[("attack", n)][a] for n in names]))
    assert lc["means"]["suppressed"]["relearn"] > lc["means"]["controls"]["relearn"]


def test_the_rebuild_spread_against_a_legacy_folder(camp, tmp_path):
    legacy = SyntheticCampaign(tmp_path / "campaign")
    for name in ("npo_lr1e-5_ep5", "full"):
        legacy.measure("orig", name)
    # the synthetic legacy folder names its models otherwise: measure two of ours under their names
    c = SyntheticAttackCampaign(tmp_path / "attack_campaign")
    c.fill()
    old = legacy.values[("orig", "full")]
    c.measure("orig", "full", {k: old[k] + 0.25 for k in KEYS}, fingerprint="fp-full")
    doc = assemble_attacks(read_campaign(c.root), KEYS, read_campaign(legacy.root))
    sp = doc["spread_vs_legacy"]
    assert set(sp["models"]) == {"full"} and sp["models"]["full"]["same_build"] is True
    for k in KEYS:
        assert (sp["models"]["full"]["abs_diff"][k] == pytest.approx(0.25)
                and sp["keys"][k]["max"] == pytest.approx(0.25))


def test_the_command_writes_the_result_and_the_page_renders_it(camp, uds, tmp_path):
    out = tmp_path / "result"
    r = uds("attack", "--from-campaign", str(camp.root), "--out", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads((out / "result.json").read_text())
    assert doc["campaign"]["units"] == len(camp.values) == doc["campaign"]["units_total"]
    assert (out / "rho.png").read_bytes()[:4] == b"\x89PNG"
    rho = doc["rho_strongest"]["mia_loss"]
    assert f"| `mia_loss` | {rho['rho']:+.2f} [{rho['ci95'][0]:+.2f}, {rho['ci95'][1]:+.2f}] | 8 |" in \
        page.rho_block(out / "result.json")
    assert "| `mia_loss` | 1.000 [1.000, 1.000] (4 / 4) |" in page.auc_block(out / "result.json")
    assert page.status_block(out / "result.json").startswith(f"{len(camp.values)} of {len(camp.values)} units")
    assert "Interim" not in page.status_block(out / "result.json")
    doc["campaign"]["units_total"] += 1   # one unit still to measure
    (out / "partial.json").write_text(json.dumps(doc))
    assert "**Interim**" in page.status_block(out / "partial.json")
    assert "No result yet" in page.rho_block(tmp_path / "absent" / "result.json")


def test_the_findings_in_sentences(camp, result, tmp_path):
    """The page's answer block against the synthetic campaign: the planted perfect predictors first,
    the strongest attack counted per unlearned model by hand, the label means and the perfect AUCs."""
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    text = page.findings_block(path)
    assert "(over 8 unlearned models): `es` +1.00 [+1.00, +1.00], `uds` +1.00 [+1.00, +1.00]" in text
    assert "`uds` ranks 2 of 4." in text
    base = camp.values[("attack", "retain")]
    counts: dict[str, int] = {}
    for n in UNLEARNED:
        above = {a: v - base[a] for a, v in camp.values[("attack", n)].items() if v is not None}
        best = max(above, key=above.get)
        counts[best] = counts.get(best, 0) + 1
    for a, k in counts.items():
        assert f"`{a}` for {k}" in text
    gains = sorted(_best(camp, n) for n in UNLEARNED)
    assert f"median {(gains[3] + gains[4]) / 2:+.2f}, largest {gains[-1]:+.2f}" in text
    s_plain = np.mean([camp.values[("attack", n)]["plain"] for n in SUP])
    n_relearn = np.mean([camp.values[("attack", n)]["relearn"] for n in CONTROLS])
    assert f"entity for {s_plain:.3f} of the questions, above the N controls' 0.050" in text
    assert f"against the controls' {n_relearn:.3f}" in text
    pos = {k: [camp.values[("orig", n)][k] for n in SUP] for k in KEYS}
    neg = {k: [camp.values[("orig", n)][k] for n in CONTROLS] for k in KEYS}
    perfect = sum(min(pos[k]) > max(neg[k]) if k not in ("uds", "s_mia_loss") else max(pos[k]) < min(neg[k])
                  for k in KEYS)
    assert f"{perfect} of 4 metrics separate them perfectly" in text


def test_a_meta_evaluation_campaign_is_not_an_attack_campaign(uds, tmp_path):
    c = SyntheticCampaign(tmp_path / "c")
    c.measure("orig", "full")
    r = uds("attack", "--from-campaign", str(c.root), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "not an attack campaign" in r.stderr


def test_the_status_says_where_units_ran_and_what_rebuilt_anchors_changed(tmp_path):
    """Measurement files of two CPUs (and some of none), one anchor build per CPU, the second with a
    spread file of two re-scored models: counts and per-key maxima by hand."""
    from meta_eval.campaign.files import digest_of

    c = SyntheticAttackCampaign(tmp_path / "attack_campaign")
    c.fill()
    for i, path in enumerate(sorted((c.root / "measurements" / "orig").glob("*.json"))[:5]):
        doc = json.loads(path.read_text())
        doc.pop("digest")
        doc["machine"] = {"cpu": "Xeon" if i < 3 else "EPYC"}
        path.write_text(json.dumps(seal(doc), indent=1, sort_keys=True))
    first, second = {"full": "a1", "retain": "b1"}, {"full": "a2", "retain": "b2"}
    c._write(f"anchors/{digest_of(first)[:16]}.json", {"anchors": first, "machine": {"cpu": "Xeon"}})
    c._write(f"anchors/{digest_of(second)[:16]}.json", {"anchors": second, "machine": {"cpu": "EPYC"}})
    c._write(f"spread/{digest_of(second)[:16]}.json", {"anchors_here": second, "machine": {"cpu": "EPYC"}, "models": [
        {"model": "u0", "metrics": {"uds": {"abs_diff": 2e-5}, "cka": {"abs_diff": 8e-5}, "es": {"abs_diff": 0.0}}},
        {"model": "u1", "metrics": {"uds": {"abs_diff": 3e-5}, "cka": {"abs_diff": 1e-5}, "es": {"abs_diff": None}}}]})
    doc = assemble_attacks(read_campaign(c.root), KEYS)
    pv = doc["provenance"]
    assert pv["cpus"] == {"Xeon": 3, "EPYC": 2, "not recorded": len(c.values) - 5}
    assert pv["anchor_builds"][digest_of(first)[:16]] == {"cpu": "Xeon", "rescored": 0, "largest_abs_diff": {}}
    assert pv["anchor_builds"][digest_of(second)[:16]] == {"cpu": "EPYC", "rescored": 2, "largest_abs_diff":
                                                          {"cka": 8e-5, "es": 0.0, "uds": 3e-5}}
    out = tmp_path / "result.json"
    out.write_text(json.dumps(doc))
    status = page.status_block(out)
    assert f"Measured on: not recorded ({len(c.values) - 5}), Xeon (3), EPYC (2) measurement files." in status
    assert (f"Anchors rebuilt on EPYC (`{digest_of(second)[:12]}`): 2 measured models scored again under them, "
            "largest |difference| `cka` 8.0e-05, `uds` 3.0e-05, `es` 0.0e+00.") in status
