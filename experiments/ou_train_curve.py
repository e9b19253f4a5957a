"""Helpers of experiments/ou_train_curve.sh (UdsCallback on Open-Unlearning's own trainer).

`experiment`: write `experiment/unlearn/tofu/default_uds.yaml` into the Hydra search path: OU's
own `unlearn/tofu/default.yaml` plus the lines a user adds (docs/curves.md), anchored on the
`test` world. `two-layers`: a 2-layer model with the test world's tokenizer (a model the anchors
do not fit). `check`: compare what the runs left and write `OUT/ou_train_curve.json` (and copy
the curve to `OUT/ou_test_npo.jsonl`): the curve's last point against `uds score` of OU's saved
model under both transformers versions, the per-step losses (trainer_state.json) and the saved
weights with and without the callback, and each bad input's exit status and stderr line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ENTRY_DEFAULTS = "  - override /hydra/callbacks: uds_curve      # uds: a curve while unlearning\n"
ENTRY_KEYS = """
hydra:
  callbacks:
    uds_curve:                                  # uds: keys of hydra/callbacks/uds_curve.yaml
      full_model: tiny:test/full
      retain_model: tiny:test/retain
      every: 3
      best: "uds, retain_q_prob>=0.9x"
"""


def experiment(args: argparse.Namespace) -> None:
    src = (Path(args.ou) / "configs" / "experiment" / "unlearn" / "tofu" / "default.yaml").read_text()
    anchor = "  - override /eval: tofu\n"
    if anchor not in src:
        raise SystemExit(f"OU's default.yaml has no line {anchor!r} to add the entry after")
    out = Path(args.conf) / "experiment" / "unlearn" / "tofu" / "default_uds.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(src.replace(anchor, anchor + ENTRY_DEFAULTS).rstrip("\n") + "\n" + ENTRY_KEYS)


def two_layers(args: argparse.Namespace) -> None:
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from checkpoints.world.store import write_legacy_fields

    cfg = LlamaConfig.from_pretrained(args.like)
    cfg.num_hidden_layers = 2
    LlamaForCausalLM(cfg).save_pretrained(args.out)
    AutoTokenizer.from_pretrained(args.like).save_pretrained(args.out)
    write_legacy_fields(Path(args.out))   # loadable under OU's transformers 4.45.1


def _losses(run: Path) -> list[float]:
    return [e["loss"] for e in json.loads((run / "trainer_state.json").read_text())["log_history"] if "loss" in e]


def _same_weights(a: Path, b: Path) -> bool:
    from safetensors.torch import load_file

    x, y = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    return x.keys() == y.keys() and all(bool((x[k] == y[k]).all()) for k in x)


def _error_line(log: Path) -> str | None:
    return next((ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("uds_curve: error:")), None)


def check(args: argparse.Namespace) -> int:
    from uds_core.curves import read_curve

    work, out = Path(args.work), Path(args.out)
    saves = work / "open-unlearning" / "saves" / "unlearn"
    curve = read_curve(saves / "curve" / "uds_curve.jsonl")
    last = curve.records[-1]
    scores = {p.name.removeprefix("score_"): json.loads((p / "summary.json").read_text())["uds"]
              for p in sorted(work.glob("score_*"))}
    doc = {"curve_steps": [r["step"] for r in curve.records], "last_point_uds": last["uds"],
           "uds_score_of_saved_model": scores,
           "max_abs_difference": max(abs(last["uds"] - v) for v in scores.values()),
           "losses_with_callback": _losses(saves / "curve"), "losses_without": _losses(saves / "plain"),
           "same_weights": _same_weights(saves / "curve", saves / "plain"),
           "bad_input": {name: {"exit": int((work / f"{name}.rc").read_text()),
                                "stderr": _error_line(work / f"{name}.log"),
                                "trained": (saves / name / "model.safetensors").is_file()}
                         for name in ("bad_every", "bad_model")}}
    doc["losses_identical"] = doc["losses_with_callback"] == doc["losses_without"]
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(curve.path, out / "ou_test_npo.jsonl")
    (out / "ou_train_curve.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(doc, indent=1))
    ok = (doc["max_abs_difference"] <= 1e-6 and doc["losses_identical"] and doc["same_weights"]
          and all(b["exit"] == 2 and b["stderr"] and not b["trained"] for b in doc["bad_input"].values()))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("experiment")
    e.add_argument("--ou", required=True)
    e.add_argument("--conf", required=True)
    t = sub.add_parser("two-layers")
    t.add_argument("--like", required=True)
    t.add_argument("--out", required=True)
    c = sub.add_parser("check")
    c.add_argument("--work", required=True)
    c.add_argument("--out", required=True)
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    if args.cmd == "experiment":
        experiment(args)
        return 0
    if args.cmd == "two-layers":
        two_layers(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
