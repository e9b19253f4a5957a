"""Helpers of experiments/ou_integration.sh (Open-Unlearning's src/eval.py with the uds plug-in).

`prepare`: copy a built tiny world (read only) to a writable UDS_HOME, adding the transformers-4.x
config/tokenizer fields (checkpoints.world.store.write_legacy_fields) so OU's transformers 4.45.1
loads the models, and write the world's splits as OU's local `locuslab/TOFU/` folder (one JSON per
config name, a README.md whose YAML maps them) plus a model config `model/uds_tiny.yaml`.
`reuse`: a copy of OU's TOFU_EVAL.json without some metrics, so that OU (which skips every metric
already in that file) computes only those again, e.g. `uds` with its anchors named another way.
`compare`: each model's `uds` from OU's TOFU_SUMMARY.json, for each form of naming the anchors
(`tiny`: saves/eval/<model>, `folders`: saves/eval/<model>_folders), next to `uds score`'s
summary.json under transformers 4.45.1 and 5.x, the max difference and the timings.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

# OU dataset config name -> (tiny-world split file, fields renamed to OU's names)
OU_SPLITS = {
    "forget10": "forget.json", "forget10_perturbed": "forget.json", "holdout10": "holdout.json",
    "retain90": "retain.json", "retain_perturbed": "retain_eval.json",
    "real_authors_perturbed": "real_authors.json", "world_facts_perturbed": "world_facts.json",
}
RENAMES = {"perturbed_answers": "perturbed_answer"}
MODEL_YAML = """# A tiny-world model in Open-Unlearning on CPU (the world's chat template, no system prompt)
model_args:
  pretrained_model_name_or_path: ???
  attn_implementation: sdpa
  torch_dtype: float32
  device_map: cpu
tokenizer_args:
  pretrained_model_name_or_path: ???   # OU pops model_args' path before this would be resolved
template_args:
  apply_chat_template: true
"""


def ou_record(item: dict) -> dict:
    out = {RENAMES.get(k, k): v for k, v in item.items()}
    out.setdefault("paraphrased_answer", out["answer"])   # real-author / world-fact sets lack it (OU uses answer)
    return out


def write_ou_data(world_data: Path, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["---", "configs:"]
    for name, source in OU_SPLITS.items():
        rows = [ou_record(it) for it in json.loads((world_data / source).read_text())]
        (folder / f"{name}.json").write_text(json.dumps(rows))
        lines += [f"- config_name: {name}", "  data_files:", "  - split: train", f"    path: {name}.json"]
    (folder / "README.md").write_text("\n".join(lines + ["---", "Tiny-world splits for Open-Unlearning.", ""]))


def prepare(args: argparse.Namespace) -> None:
    from checkpoints.world.store import write_legacy_fields

    src, dst = Path(args.world), Path(args.home) / "world" / Path(args.world).name
    shutil.rmtree(dst, ignore_errors=True)
    for part in ("data", "tokenizer"):
        shutil.copytree(src / part, dst / part)
    for name in args.models.split(","):
        shutil.copytree(src / "models" / name, dst / "models" / name)
        write_legacy_fields(dst / "models" / name)
    write_legacy_fields(dst / "tokenizer")
    write_ou_data(dst / "data", Path(args.ou) / "locuslab" / "TOFU")
    conf = Path(args.conf) / "model"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "uds_tiny.yaml").write_text(MODEL_YAML)


def reuse(args: argparse.Namespace) -> None:
    logs = json.loads(Path(args.logs).read_text())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({k: v for k, v in logs.items() if k not in args.drop.split(",")}, indent=4))


FORM_DIRS = {"tiny": "{}", "folders": "{}_folders"}   # how ou_integration.sh names each form's task


def compare(args: argparse.Namespace) -> int:
    rows, worst = [], 0.0
    for name in args.models.split(","):
        s45 = json.loads((Path(args.scores) / f"t445_{name}" / "summary.json").read_text())
        s5 = json.loads((Path(args.scores) / f"t5_{name}" / "summary.json").read_text())
        for form in args.forms.split(","):
            ou = json.loads((Path(args.saves) / FORM_DIRS[form].format(name) / "TOFU_SUMMARY.json").read_text())
            diff = max(abs(ou["uds"] - s45["uds"]), abs(ou["uds"] - s5["uds"]))
            worst = max(worst, diff)
            extra = {k: v for k, v in ou.items() if k.startswith("uds_")}
            rows.append(f"{name:28s} {form:8s} OU uds={ou['uds']:.9f}  uds score 4.45.1={s45['uds']:.9f} "
                        f"({s45['algorithm']}, {s45['elapsed_s']:.1f} s)  5.x={s5['uds']:.9f} ({s5['algorithm']}, "
                        f"{s5['elapsed_s']:.1f} s)  |diff|={diff:.2e}  {extra}")
    print("\n".join(rows))
    print(f"max |OU uds - uds score| = {worst:.3e}")
    return 0 if worst <= 1e-6 else 1


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _same(installed: str | None, pinned: str) -> bool:
    """`==1.3` is satisfied by 1.3.0 (PEP 440 zero padding)."""
    pad = lambda v: [int(x) if x.isdigit() else x for x in v.split(".")] + [0] * 4  # noqa: E731
    return installed is not None and pad(installed)[:4] == pad(pinned)[:4]


def pins(args: argparse.Namespace) -> int:
    """OU's `name==version` pins (torch excepted: the CPU build replaces it) that the environment's
    `pip freeze` output does not satisfy exactly; exit 1 if any."""
    have = {_norm(n): v.split("+")[0] for n, _, v in
            (line.partition("==") for line in Path(args.freeze).read_text().splitlines() if "==" in line)}
    bad = []
    for line in Path(args.requirements).read_text().splitlines():
        name, _, version = line.partition("==")
        installed = have.get(_norm(name))
        if version and _norm(name) != "torch" and not _same(installed, version.strip()):
            bad.append(f"{name}=={version} (installed: {installed})")
    print("OU pins changed: " + (", ".join(bad) if bad else "none"))
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("prepare")
    for opt in ("--world", "--home", "--ou", "--conf", "--models"):
        a.add_argument(opt, required=True)
    b = sub.add_parser("compare")
    for opt in ("--saves", "--scores", "--models"):
        b.add_argument(opt, required=True)
    b.add_argument("--forms", default="tiny", help="comma-separated: tiny, folders")
    r = sub.add_parser("reuse")
    for opt in ("--logs", "--drop", "--out"):
        r.add_argument(opt, required=True)
    c = sub.add_parser("pins")
    for opt in ("--requirements", "--freeze"):
        c.add_argument(opt, required=True)
    args = p.parse_args(argv)
    if args.cmd in ("prepare", "reuse"):
        (prepare if args.cmd == "prepare" else reuse)(args)
        return 0
    return compare(args) if args.cmd == "compare" else pins(args)


if __name__ == "__main__":
    sys.exit(main())
