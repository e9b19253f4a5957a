"""benchmarks/measure_profile.py, the instrumentation behind bench_measure's phase table: under it
the metrics give the values they give without it, and it sees the work each phase does (teacher-forced
sequences, generated prompts and tokens, Fisher items), counted independently from the inputs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from metrics.encoding import encode_qa
from metrics.registry import evaluate
from tests.metrics_fixtures import make_ctx, tiny_splits, tiny_tokenizer
from tests.metrics_fixtures import zoo as trained_zoo

ROLES = {"model": "tiny:t/unl", "full": "tiny:t/full", "retain": "tiny:t/retain"}
KEYS = ["prob", "rouge", "fisher_masked_0.01"]


def _profile_module():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "measure_profile.py"
    spec = importlib.util.spec_from_file_location("measure_profile", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod    # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def zoo() -> dict:
    return trained_zoo()


def test_instrumented_values_equal_plain_ones_and_the_work_is_counted(zoo):
    mp = _profile_module()
    plain = evaluate(make_ctx(zoo, ROLES, keys=KEYS), KEYS)
    clock = mp.PhaseClock()
    with mp.instrument(clock):
        seen = evaluate(make_ctx(zoo, ROLES, keys=KEYS), KEYS)
    assert {k: r.value for k, r in seen.items()} == {k: r.value for k, r in plain.items()}
    counts = {phase: c for phase, c in clock.counts.items()}
    forget = tiny_splits()["forget"]
    # prob: one teacher-forced sequence per forget item and model sweep; every label counted
    tf = counts["teacher_forced"]
    labels = sum(sum(1 for y in encode_qa(tiny_tokenizer(), r["question"], r["answer"]).labels if y != -100)
                 for r in forget)
    assert tf.sequences >= len(forget) and tf.labels >= labels and tf.forward_calls > 0
    # rouge: each forget question generated once by the evaluated model, its tokens recorded
    gen = counts["generation"]
    assert gen.prompts == len(forget) and gen.generated_tokens == sum(len(ids) for _, ids in clock.generations)
    assert {spec for (spec, _), _ in clock.generations} == {ROLES["model"]}
    # fisher: full's and retain's diagonals over the scored items
    assert counts["fisher"].sequences > 0 and counts["fisher"].forward_calls > 0
