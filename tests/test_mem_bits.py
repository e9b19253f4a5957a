"""Memorisation in bits (spec-probes §1.1): the formulas by hand, the registry metrics on the
in-process tiny zoo (retain is its own reference: exactly 0; full > 0) against a second,
token-by-token implementation, and the command line on the `test` world (bad input: exit 2)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest

from metrics import mem_bits as mb
from metrics import references
from metrics.ranking import spearman
from metrics.encoding import encode_qa
from metrics.registry import REGISTRY, evaluate
from tests.metrics_fixtures import make_ctx, tiny_splits, tiny_tokenizer
from tests.checks import assert_one_line_error
from tests.mem_bits_fixtures import KEYS, same_tokenizer, zoo  # noqa: F401 (fixtures)
from tests.mem_bits_fixtures import answer_bits_token_by_token, mem_bits_ctx



# --- pure formulas -----------------------------------------------------------------------------

def test_bits_of_a_toy_distribution_by_hand():
    # p = 1/2, 1/4, 1/8: code lengths 1 + 2 + 3 bits
    lp = np.log([0.5, 0.25, 0.125])
    assert mb.bits_from_logprobs(lp) == pytest.approx(6.0, abs=1e-12)
    assert mb.bits_from_mean_nll([-lp.mean()], [3])[0] == pytest.approx(6.0, abs=1e-12)
    # reference codes 6 and 2 bits, model codes 4 and 5: the model adds 2 bits about the first only
    assert mb.mem_u([6.0, 2.0], [4.0, 5.0]).tolist() == [2.0, 0.0]
    assert mb.erased(1.0, 4.0) == 0.75 and mb.erased(5.0, 4.0) == 0.0 and mb.erased(0.0, 4.0) == 1.0
    assert mb.erased(1.0, 0.0) is None
    assert mb.uniform_bits(32, 64) == 192.0
    # two uniform sequences (192 bits each) coded in 100 and 250 bits: 92 bits memorised
    assert mb.dataset_mem_bits([100.0, 250.0], 32, 64) == 92.0


def test_log_linear_interpolation_is_monotone_and_erasure_is_its_weight():
    """A model whose code lengths interpolate log-linearly between full and retain,
    b(l) = (1 - l) b_full + l b_retain, keeps (1 - l) of full's memorisation wherever full
    beats retain: mem_U falls monotonically from mem_U(full) to exactly 0, and erased = l."""
    rng = np.random.default_rng(0)
    retain = rng.uniform(20, 80, 50)
    full = retain - rng.uniform(-5, 30, 50)        # full better than retain on most items
    prev = None
    for lam in np.linspace(0, 1, 11):
        m = mb.mem_u(retain, (1 - lam) * full + lam * retain)
        np.testing.assert_allclose(m, (1 - lam) * np.maximum(0, retain - full), atol=1e-9)
        assert prev is None or np.all(m <= prev + 1e-12)
        assert mb.erased(m.mean(), mb.mem_u(retain, full).mean()) == pytest.approx(lam, abs=1e-9)
        prev = m
    assert np.all(prev == 0)


def test_tfidf_by_hand():
    corpus = ["aa bb", "aa cc", "aa", "dd dd"]      # tf: aa 3, bb 1, cc 1, dd 2; |D| = 4
    got = mb.tfidf_scores(["aa bb", "dd dd", "zz"], corpus)
    l4 = math.log(4)
    assert got[0] == pytest.approx((math.log(4 / 3) + l4) / 2)
    assert got[1] == pytest.approx(math.log(4 / 2))
    assert math.isnan(got[2])                       # no word of the corpus


def test_spearman_by_hand():
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 1.0, 4.0, 3.0, 5.0]
    d2 = sum((a - b) ** 2 for a, b in zip([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]))
    rho, p = spearman(x, y)
    assert rho == pytest.approx(1 - 6 * d2 / (5 * (25 - 1))) and 0 < p < 1
    assert spearman([1, 2, float("nan"), 4], [1, 2, 3, 4])[0] == pytest.approx(1.0)
    assert spearman([1, 1, 1], [1, 2, 3]) == (None, None)


# --- the registry metrics on the in-process zoo -------------------------------------------------

def test_retain_is_exactly_zero_and_full_matches_a_second_implementation(zoo, same_tokenizer):
    as_retain = evaluate(mem_bits_ctx(zoo, "retain"), KEYS)
    assert as_retain["mem_bits"].value == 0.0 and as_retain["mem_bits_per_token"].value == 0.0
    assert set(as_retain["mem_bits"].per_example) == {0.0} and as_retain["mem_bits_erased"].value == 1.0

    as_full = evaluate(mem_bits_ctx(zoo, "full"), KEYS)
    items = tiny_splits()["forget"]
    expect = [max(0.0, answer_bits_token_by_token(zoo["tiny:t/retain"], it)
                  - answer_bits_token_by_token(zoo["tiny:t/full"], it)) for it in items]
    np.testing.assert_allclose(as_full["mem_bits"].per_example, expect, rtol=1e-4, atol=1e-3)
    assert as_full["mem_bits"].value == pytest.approx(np.mean(expect), rel=1e-4) and as_full["mem_bits"].value > 0
    assert as_full["mem_bits_erased"].value == 0.0
    n = [sum(1 for x in encode_qa(tiny_tokenizer(), it["question"], it["answer"]).labels if x != -100)
         for it in items]
    np.testing.assert_allclose(as_full["mem_bits_per_token"].per_example, np.array(expect) / n, rtol=1e-4, atol=1e-4)
    # the diagnostic is the same whichever model is evaluated (it reads the full model only)
    assert as_full["mem_bits_tfidf"].value == as_retain["mem_bits_tfidf"].value


def test_another_reference_model_replaces_retain(zoo, same_tokenizer):
    """The source's reference choice as an option (role `reference`): with `full` as the reference,
    full adds nothing (exactly 0) and retain's bits are max(0, NLL_full - NLL_retain) by the
    token-by-token implementation; naming retain explicitly changes nothing."""
    roles = {"full": "tiny:t/full", "retain": "tiny:t/retain"}
    with_full = lambda m: make_ctx(zoo, {**roles, "model": f"tiny:t/{m}", "reference": "tiny:t/full"},  # noqa: E731
                                   keys=["mem_bits", "mem_bits_signed"])
    assert evaluate(with_full("full"), ["mem_bits"])["mem_bits"].value == 0.0
    got = evaluate(with_full("retain"), ["mem_bits", "mem_bits_signed"])
    items = tiny_splits()["forget"]
    signed = [answer_bits_token_by_token(zoo["tiny:t/full"], it) - answer_bits_token_by_token(zoo["tiny:t/retain"], it)
              for it in items]
    np.testing.assert_allclose(got["mem_bits"].per_example, [max(0.0, v) for v in signed], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got["mem_bits_signed"].per_example, signed, rtol=1e-4, atol=1e-3)
    assert got["mem_bits_signed"].info["reference"] == "tiny:t/full"
    named = make_ctx(zoo, {**roles, "model": "tiny:t/unl", "reference": "tiny:t/retain"}, keys=["mem_bits"])
    assert (evaluate(named, ["mem_bits"])["mem_bits"].value
            == evaluate(mem_bits_ctx(zoo, "unl"), ["mem_bits"])["mem_bits"].value)


def test_unlearned_lies_between_and_orientation_is_declared(zoo, same_tokenizer):
    r = evaluate(mem_bits_ctx(zoo, "unl"), ["mem_bits", "mem_bits_erased"])
    full = evaluate(mem_bits_ctx(zoo, "full"), ["mem_bits"])["mem_bits"].value
    assert 0.0 <= r["mem_bits_erased"].value <= 1.0
    assert r["mem_bits_erased"].value == pytest.approx(min(1.0, max(0.0, 1 - r["mem_bits"].value / full)))
    assert REGISTRY["mem_bits"].orientation == "knowledge" and REGISTRY["mem_bits_erased"].orientation == "erasure"
    assert REGISTRY["mem_bits"].references == ("reference",)   # the retain model unless a run names another
    assert REGISTRY["mem_bits_erased"].references == ("full", "reference")


def test_reference_with_another_tokenizer_is_bad_input(zoo, monkeypatch):
    from transformers import AutoTokenizer

    other = AutoTokenizer.from_pretrained(str(_test_world_model("retain")))
    monkeypatch.setattr(references, "own_tokenizer", lambda spec: other if spec.endswith("retain") else None)
    from uds_core.errors import UdsInputError

    with pytest.raises(UdsInputError, match="reference model tiny:t/retain has another tokenizer"):
        evaluate(mem_bits_ctx(zoo, "full"), ["mem_bits"])


def test_empty_forget_split_is_bad_input(zoo, same_tokenizer):
    from uds_core.errors import UdsInputError

    ctx = mem_bits_ctx(zoo, "full")
    ctx.splits = {**ctx.splits, "forget": []}
    with pytest.raises(UdsInputError, match="no 'forget' split"):
        evaluate(ctx, ["mem_bits"])


# --- the command line on the `test` world -------------------------------------------------------

def _test_world_model(name: str):
    from tests.conftest import TEST_HOME

    return TEST_HOME / "world" / "test-0" / "models" / name




def test_cli_retain_zero_full_positive(test_world, tmp_path, uds):
    for name in ("retain", "full"):
        proc = uds("metrics", "--model", f"tiny:test/{name}", "--metrics", "mem_bits,mem_bits_erased",
                   "--out", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
    retain = json.loads((tmp_path / "retain" / "metrics.json").read_text())
    full = json.loads((tmp_path / "full" / "metrics.json").read_text())
    assert retain["metrics"]["mem_bits"] == 0.0 and set(retain["per_example"]["mem_bits"]) == {0.0}
    assert full["metrics"]["mem_bits"] > 0 and full["metrics"]["mem_bits_erased"] == 0.0
    assert retain["metrics"]["mem_bits_erased"] == 1.0
    assert len(full["per_example"]["mem_bits"]) == retain["settings"]["n_items"]["forget"]


def test_cli_mem_bits_reference_option(test_world, tmp_path, uds):
    proc = uds("metrics", "--model", "tiny:test/full", "--metrics", "mem_bits,mem_bits_signed",
               "--mem-bits-reference", "tiny:test/full", "--out", str(tmp_path / "ref_full"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "ref_full" / "metrics.json").read_text())
    assert doc["metrics"]["mem_bits"] == 0.0 and doc["metrics"]["mem_bits_signed"] == 0.0
    assert doc["settings"]["references"]["mem_bits_reference"] == "tiny:test/full"
    assert doc["info"]["mem_bits_signed"]["reference"] == "tiny:test/full"
    proc = uds("metrics", "--model", "tiny:test/full", "--metrics", "mem_bits", "--mem-bits-reference",
               str(tmp_path / "no_such_model"), "--out", str(tmp_path / "bad"))
    assert proc.returncode == 2 and "no_such_model" in proc.stderr


def test_cli_reference_with_another_tokenizer(test_world, tmp_path, uds):
    retain = tmp_path / "retain_other_tok"
    shutil.copytree(_test_world_model("retain"), retain)
    # a folder edited by hand no longer matches its sealed manifest: drop it, as a user swapping files must
    (retain / "digests.json").unlink(missing_ok=True)
    for f in retain.glob("tokenizer*"):
        f.unlink()
    tiny_tokenizer().save_pretrained(str(retain))
    proc = uds("metrics", "--model", "tiny:test/full", "--retain", str(retain), "--metrics", "mem_bits",
               "--out", str(tmp_path / "out"))
    # the metric fails inside the metrics loop, after its progress bar drew 0 %: the error is the one other line
    proc.stderr = "\n".join(line for line in proc.stderr.splitlines() if not line.startswith("metrics:"))
    assert_one_line_error(proc, "another tokenizer", str(retain))


def test_cli_empty_data(test_world, tofu_dir, tmp_path, uds):
    for f in tofu_dir.iterdir():
        (tmp_path / f.name).symlink_to(f)
    (tmp_path / "forget10_perturbed.json").unlink()
    (tmp_path / "forget10_perturbed.json").write_text("[]\n")
    models = _test_world_model("full").parent
    proc = uds("metrics", "--model", str(models / "full"), "--full", str(models / "full"), "--retain",
               str(models / "retain"), "--tofu-dir", str(tmp_path), "--metrics", "mem_bits",
               "--out", str(tmp_path / "out"))
    assert_one_line_error(proc, "forget10_perturbed.json")
