"""`uds report`'s leaderboard data without a browser: one row per model merged from several
folders (values and differences from the input files), the same rows, values and order as `uds
leaderboard`, the printing rule, the column directions against the metric registry, the published
table against spec §5.7, Spearman against scipy, and bad input shown rather than fatal."""

from __future__ import annotations

import csv
import io
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report_fixtures import write_meta_eval, write_model_folders, write_results_json, write_score_run
from uds.cli import main
from uds.site.payload import build_payload
from uds.site.readers import read_results
from uds.site.table import identity

REPO = Path(__file__).resolve().parents[1]
SPEC_MD = REPO / "docs" / "spec.md"


def index_of(paths) -> dict:
    return build_payload(read_results(paths), {})[0]


def test_identity_by_hand():
    assert identity("tiny:smol/npo_x") == ("tiny:smol", "npo_x")
    assert identity("tiny:npo_x") == ("tiny:small", "npo_x")        # docs/design.md: tiny:<model> is preset small
    assert identity("open-unlearning/tofu_full") == (None, "tofu_full")
    assert identity("runs/out/npo_x/") == (None, "npo_x")
    assert identity("a</b>c", is_spec=False) == (None, "a</b>c")             # a row's model name is taken whole


def test_one_row_per_model_merged_from_several_folders(tmp_path):
    a = write_score_run(tmp_path / "score_a", "tiny:test/npo_x", seed=1, depth=0.3)
    b = write_score_run(tmp_path / "score_b", "tiny:test/npo_x", seed=2, depth=0.6)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "npo.json").write_text(json.dumps({"model": "tiny:test/npo_x", "metrics": {"es": 0.125}}))
    (tmp_path / "results.json").write_text(json.dumps([{"model": "npo_x", "method": "npo", "epoch": 5, "mem": 0.5},
                                                       {"model": "rmu_y", "method": "rmu", "epoch": 5, "mem": 0.25}]))
    (tmp_path / "build.json").write_text(json.dumps({"preset": "test", "models": [
        {"name": "npo_x", "kind": "unlearned", "method": "npo", "hparams": {"beta": 0.1}, "train_seconds": 12.5,
         "train": {"lr": 1e-5, "epochs": 5, "batch_size": 8}}]}))
    write_score_run(tmp_path / "other_world", "tiny:other/rmu_y", seed=3)
    (tmp_path / "saves" / "eval" / "npo_x").mkdir(parents=True)          # Open-Unlearning's layout
    (tmp_path / "saves" / "eval" / "npo_x" / "TOFU_SUMMARY.json").write_text(json.dumps(
        {"extraction_strength": 0.25, "forget_Q_A_ROUGE": 0.375, "privleak": -7.5}))
    index = index_of([tmp_path])
    by = {m["name"]: m for m in index["models"]}
    # npo_x: two score runs, a metrics file under another name, an OU summary, a results row, a build
    # entry -> one row
    assert sorted(by) == ["npo_x", "rmu_y"]          # rmu_y: the row without a world joins tiny:other/rmu_y
    npo = by["npo_x"]
    assert [s["kind"] for s in npo["sources"]] == ["score", "score", "metrics", "ou", "leaderboard", "build"]
    assert npo["cells"]["es"] == 0.125 and npo["cells"]["mem"] == 0.5 and npo["cells"]["train_seconds"] == 12.5
    assert npo["cells"]["rouge"] == 0.375 and npo["differs"]["es"]["values"] == [[2, 0.125], [3, 0.25]]
    assert npo["cells"]["lr"] == 1e-5 and npo["cells"]["beta"] == 0.1 and npo["epoch"] == "ep5"
    assert npo["cells"]["uds"] == a["uds"] and npo["ci"] == a["ci95"]           # the first run's value is shown
    diff = npo["differs"]["uds"]
    assert [v for _, v in diff["values"]] == [a["uds"], b["uds"]]
    assert diff["spread"] == pytest.approx(abs(a["uds"] - b["uds"]))
    assert [npo["sources"][i]["path"] for i, _ in diff["values"]] == [str(tmp_path / "score_a"),
                                                                      str(tmp_path / "score_b")]
    assert index["conflicts"] == 1


def test_worlds_are_kept_apart(tmp_path):
    write_score_run(tmp_path / "s", "tiny:small/full", seed=1)
    write_score_run(tmp_path / "t", "tiny:test/full", seed=2)
    (tmp_path / "results.json").write_text(json.dumps([{"model": "full", "method": "full", "mem": 0.1}]))
    names = sorted(m["name"] for m in index_of([tmp_path])["models"])
    # two worlds have a "full": the results.json row (no world) cannot say which, so it stays apart
    assert names == ["full", "tiny:small/full", "tiny:test/full"]


def _csv_rows(argv) -> list[dict]:
    buf = io.StringIO()
    from contextlib import redirect_stdout

    with redirect_stdout(buf):
        assert main(["leaderboard", *argv, "--format", "csv"]) == 0
    return list(csv.DictReader(io.StringIO(buf.getvalue())))


@pytest.mark.parametrize("form", ["results.json", "model folders"])
def test_report_has_the_rows_values_and_order_of_uds_leaderboard(tmp_path, form):
    if form == "results.json":
        write_results_json(tmp_path / "results.json", 12, seed=4)
        given = tmp_path / "results.json"
    else:
        write_model_folders(tmp_path / "runs", 12, seed=5)
        given = tmp_path / "runs"
    cli = _csv_rows(["--results", str(given)])
    models = index_of([given])["models"]
    assert [m["name"] for m in models] == [r["model"] for r in cli]
    for m, r in zip(models, cli):
        assert m["method"] == r["method"] and (m["epoch"] or "") == r["epoch"]
        for key, text in r.items():
            if key in ("model", "method", "epoch"):
                continue
            if text == "":
                assert m["cells"].get(key) is None, (m["name"], key)
            else:
                assert m["cells"][key] == pytest.approx(float(text), rel=1e-12, abs=1e-15), (m["name"], key)


def test_printing_rule():
    from uds_leaderboard.rows import decimals_of, display_number

    for value, want in ((7e-12, "0"), (-3e-8, "0"), (0.0, "0"), (0.12345, f"{0.12345:.3f}"), (1.0, "1.000"),
                        (-0.0004, "0.000"), (-0.25, "-0.250"), (None, None), (float("nan"), None)):
        assert display_number(value) == want, value
    assert decimals_of("uds") == 4 and decimals_of("overall") == 3
    assert display_number(0.37246574, decimals_of("uds")) == "0.3725"


def test_column_directions_and_groups_follow_the_registry():
    from metrics.registry import REGISTRY
    from uds.site.columns import HEADLINE, column

    groups = {"memorization": "memorisation", "memorization_bits": "memorisation", "generation": "generation",
              "mia": "mia", "mia_normalised": "mia", "representation": "representation", "utility": "utility"}
    for key, spec in REGISTRY.items():
        assert column(key)["direction"] == spec.orientation, key
        assert column(key)["group"] == ("headline" if key in HEADLINE else groups[spec.category]), key
    # aggregates: higher = better unlearning or more utility (spec §6.1); knowledge ranks low-first
    assert column("mem")["direction"] == "erasure" and column("utility_rel")["direction"] == "utility"
    assert column("es")["lower_is_better"] and not column("uds")["lower_is_better"]
    assert column("train_seconds")["direction"] is None and column("lr")["group"] == "training"


def test_published_table_is_spec_5_7():
    from meta_eval.published import PUBLISHED

    text = SPEC_MD.read_text()
    section = text[text.index('<a id="5.7"></a>'):text.index('<a id="6"></a>')]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and re.fullmatch(r"[a-z_0-9.]+", cells[0]) and cells[0] != "key":
            rows[cells[0]] = [float(c) for c in cells[1:]]
    assert len(rows) == 22 and set(rows) == set(PUBLISHED)
    for key, (faith, p, n, q, r, rob, overall) in rows.items():
        assert PUBLISHED[key] == {"faithfulness": faith, "p_mean": p, "n_mean": n, "q": q, "r": r,
                                  "robustness": rob, "overall": overall}, key


def test_spearman_and_places_match_scipy():
    from scipy.stats import spearmanr

    from uds.site.meta import places, spearman

    rng = random.Random(7)
    keys = [f"k{i}" for i in range(15)]
    a = {k: round(rng.random(), 1) for k in keys}                 # rounded: ties
    b = {k: rng.random() for k in keys}
    a["k3"] = None                                               # a metric without a value is left out
    got = spearman(a, b)
    kept = [k for k in keys if a[k] is not None]
    assert got["n"] == 14 and got["rho"] == pytest.approx(spearmanr([a[k] for k in kept], [b[k] for k in kept])[0])
    assert spearman({"x": 1.0, "y": 2.0}, {"x": 2.0, "y": 1.0})["rho"] is None        # two metrics: no rho
    assert places({"a": 0.5, "b": 0.9, "c": 0.5, "d": None}) == {"b": 1, "a": 2, "c": 2}


def test_bad_input_is_shown_with_its_path_and_nothing_stops(tmp_path, monkeypatch):
    write_score_run(tmp_path / "good", "tiny:test/npo_x", seed=1)
    write_score_run(tmp_path / "broken", "tiny:test/rmu_y", seed=2)
    (tmp_path / "broken" / "examples.jsonl").write_text('{"idx": 0}\n{not json\n')
    write_score_run(tmp_path / "locked" / "run", "tiny:test/graddiff_z", seed=3)
    meta = write_meta_eval(tmp_path / "meta")
    doc = json.loads((tmp_path / "meta" / "meta_eval.json").read_text())
    del doc["robustness"]
    (tmp_path / "meta" / "meta_eval.json").write_text(json.dumps(doc))
    (tmp_path / "camp" / "measurements" / "orig").mkdir(parents=True)      # a campaign still running
    (tmp_path / "camp" / "protocol.json").write_text("{}")
    (tmp_path / "camp" / "measurements" / "orig" / "full.json").write_text("{}")
    locked = tmp_path / "locked"
    real = Path.iterdir

    def iterdir(self):
        if self == locked:          # root reads any folder: stand in for a folder it may not list
            raise PermissionError(13, "Permission denied")
        return real(self)
    monkeypatch.setattr(Path, "iterdir", iterdir)
    res = read_results([tmp_path])
    index, per_model = build_payload(res, {})
    why = {str(p): reason for p, reason in res.skipped}
    assert "unreadable folder" in why[str(locked)] and "Permission denied" in why[str(locked)]
    assert "summary only" in why[str(tmp_path / "broken" / "examples.jsonl")]
    assert "campaign (1 measurement files" in why[str(tmp_path / "camp")]
    assert not any(str(p).startswith(str(tmp_path / "camp") + "/") for p, _ in res.skipped)   # one line for it
    rmu = next(m for m in index["models"] if m["name"] == "rmu_y")
    assert per_model[rmu["id"]]["examples"] == [] and rmu["cells"]["uds"] is not None   # the row stays
    lacks = index["meta"][0]["lacks"]
    assert any("no robustness" in t for t in lacks) and all(k["robustness"] is None for k in index["meta"][0]["keys"])
    assert len(index["meta"][0]["keys"]) == len(meta["faithfulness"])


def test_report_starts_without_the_metric_stack(tmp_path):
    """`uds report` imports neither torch nor transformers nor scipy (it starts in well under a second)."""
    write_results_json(tmp_path / "in" / "results.json", 6)
    code = ("import sys\nfrom uds.cli import main\nrc = main(sys.argv[1:])\n"
            "print('HEAVY=' + ','.join(m for m in ('torch', 'transformers', 'scipy', 'sklearn') if m in sys.modules))\n"
            "sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code, "report", "--results", str(tmp_path / "in"), "--out",
                           str(tmp_path / "site")], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY="


def test_a_difference_is_flagged_only_where_it_prints():
    """Flagged: printed differently in the column and at least half a unit of the last printed
    digit apart. Pairs written out by hand with their printed forms."""
    from uds.site.table import Source, differences

    def flagged(key, a, b):
        got, below = differences([Source("score", "a", "m", {key: a}), Source("metrics", "b", "m", {key: b})])
        return got.get(key), key in below

    assert flagged("uds", 0.5, 0.5 + 1e-13) == (None, False)             # float noise: not even counted
    assert flagged("uds", 0.5, 0.5 + 1e-9) == (None, True)               # a difference, far below the print
    assert flagged("uds", 0.73036, 0.73044) == (None, True)               # both print 0.7304, 8e-5 apart
    assert flagged("uds", 0.730449, 0.730451) == (None, True)             # 0.7304 / 0.7305, but 2e-6 apart
    hit, _ = flagged("uds", 0.5, 0.5003)                                 # the 4th decimal
    assert hit["printed"] == ["0.5000", "0.5003"] and hit["printed_spread"] == "0.0003"
    assert hit["values"] == [[0, 0.5], [1, 0.5003]]
    assert flagged("mem", 0.1234, 0.1236) == (None, True)                 # 0.123 / 0.124, under 0.0005 apart
    assert flagged("mem", 0.1234, 0.1240)[0]["printed"] == ["0.123", "0.124"]
    assert flagged("epochs", 5, 5.2) == (None, True) and flagged("epochs", 5, 6)[0]["printed"] == ["5", "6"]
    got, _ = differences([Source("score", "a", "m", {"uds": 0.2}), Source("published", "p", "m", {"uds": 0.9})])
    assert got == {}                                                     # the published table is not a run


def test_which_run_a_cell_shows_is_the_stated_rule(tmp_path):
    """Per-layer runs first; then the path given first to --results; then the shallowest folder
    below it (a canonical folder before a rebuild nested in the same tree, though "rebuild" sorts
    first); then A to Z."""
    canon = write_score_run(tmp_path / "a" / "score" / "m", "tiny:test/npo_m", seed=1, depth=0.3)
    rebuild = write_score_run(tmp_path / "a" / "rebuild" / "score" / "m", "tiny:test/npo_m", seed=2, depth=0.6)
    other = write_score_run(tmp_path / "b" / "deep" / "deeper" / "m", "tiny:test/npo_m", seed=3, depth=0.9)
    by = lambda paths: next(m for m in index_of(paths)["models"] if m["name"] == "npo_m")  # noqa: E731
    assert by([tmp_path / "a"])["cells"]["uds"] == canon["uds"]
    assert by([tmp_path / "b", tmp_path / "a"])["cells"]["uds"] == other["uds"]        # given first wins
    m = by([tmp_path / "a", tmp_path / "b"])
    assert m["cells"]["uds"] == canon["uds"]
    assert [s["path"] for s in m["sources"]] == [str(tmp_path / "a" / "score" / "m"),
                                                 str(tmp_path / "a" / "rebuild" / "score" / "m"),
                                                 str(tmp_path / "b" / "deep" / "deeper" / "m")]
    assert rebuild["uds"] in [v for _, v in m["differs"]["uds"]["values"]]
    (tmp_path / "a" / "score" / "m" / "examples.jsonl").unlink()            # a summary only: after per-layer runs
    (tmp_path / "a" / "score" / "m" / "layers.csv").unlink(missing_ok=True)
    assert by([tmp_path / "a"])["cells"]["uds"] == rebuild["uds"]


def test_populations():
    from uds.site.table import population_of

    assert population_of("full", None) == population_of("retain", "unlearned") == "reference"
    assert population_of("pool P", None) == population_of(None, "pool") == "pool"
    assert (population_of("base", None) == "base"
            and population_of("npo", None) == population_of(None, None) == "unlearned")
