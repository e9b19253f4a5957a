"""How often one command resolves a model spec and loads a model or tokenizer (a run should do
each once per model).

Runs `uds score` and `uds metrics` in-process on a tiny world and counts, with a profiler hook,
the calls of `resolve_spec` (each entry, and the outermost entries only: an adapter's base or a
recursion inside one resolution is not a second climb), of `default_references`, and of
transformers' `from_pretrained` for models and tokenizers. Prints one JSON object per command.

    python benchmarks/trace_loads.py [--unlearned tiny:test/npo_...] [--metrics all]

The counts are by function name, so the same script measures any layout of the code. Each command
runs once untraced first (building what is missing), so the traced run counts only its own work.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

WATCHED = {"resolve_spec", "default_references"}


class CallCounter:
    """sys.setprofile hook: counts calls by function name, and outermost calls of each name."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.outer: Counter[str] = Counter()
        self.loads: Counter[str] = Counter()
        self._depth: Counter[str] = Counter()
        self._stack: list[str | None] = []

    def __call__(self, frame, event, arg) -> None:
        if event == "call":
            name = self._name(frame)
            self._stack.append(name)
            if name is None:
                return
            self.calls[name] += 1
            if self._depth[name] == 0:
                self.outer[name] += 1
            self._depth[name] += 1
        elif event == "return" and self._stack:
            name = self._stack.pop()
            if name is not None:
                self._depth[name] -= 1

    def _name(self, frame) -> str | None:
        code = frame.f_code
        if code.co_name in WATCHED:
            return code.co_name
        if code.co_name == "from_pretrained" and "transformers" in code.co_filename:
            owner = code.co_qualname.split(".")[0]   # count the Auto* entries, not the classes they dispatch to
            kind = {"_BaseAutoModelClass": "model", "AutoTokenizer": "tokenizer"}.get(owner)
            if kind:
                self.loads[kind] += 1
        return None


def traced(argv: list[str]) -> dict:
    from uds.cli import main

    counter = CallCounter()
    sys.setprofile(counter)
    try:
        code = main(argv)
    finally:
        sys.setprofile(None)
    return {"exit": code, "resolve_spec_calls": counter.calls["resolve_spec"],
            "resolve_spec_outermost": counter.outer["resolve_spec"],
            "default_references": counter.calls["default_references"],
            "model_loads": counter.loads["model"], "tokenizer_loads": counter.loads["tokenizer"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unlearned", default="tiny:test/npo_lr1e-3_ep5")
    parser.add_argument("--metrics", default="all")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory() as tmp:
        score_argv = ["score", "--unlearned", args.unlearned, "--out", f"{tmp}/score", "--device", "cpu"]
        metrics_argv = ["metrics", "--model", args.unlearned, "--metrics", args.metrics, "--out", f"{tmp}/m",
                        "--device", "cpu", "--max-new-tokens", "8"]
        from uds.cli import main as run

        run(score_argv)   # untraced first: builds what is missing and fills the S1 cache
        score, metrics = traced(score_argv), traced(metrics_argv)
    print(json.dumps({"uds score": score, "uds metrics": metrics}, indent=1))


if __name__ == "__main__":
    main()
