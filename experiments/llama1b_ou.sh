#!/usr/bin/env bash
# Open-Unlearning's own src/eval.py with the uds plug-in, under OU's pins (transformers 4.45.1), on
# the llama1b world's unlearned model: OU's Llama-3.2-1B-Instruct model config (its template
# arguments, bfloat16) on the CPU with sdpa, only the `uds` metric (all 367 annotated items; OU's
# generation metrics would take hours at this size on 2 cores). Compared with `uds score --dtype
# bfloat16` on the same models (results/llama1b/score_bfloat16.json). Writes results/llama1b/ou_eval.json.
#
#   VENV=/path/to/ou-venv bash experiments/llama1b_ou.sh     (a venv from step 1 of experiments/ou_integration.sh)
#
# The plug-in is taken from this checkout (PYTHONPATH), so the venv is used as it is, nothing installed.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:?a venv with Open-Unlearning requirements (step 1 of experiments/ou_integration.sh)}
WORK=${WORK:-/tmp/llama1b_ou}
OU_SRC=${OU_SRC:-${UDS_SHARED_DIR:?set OU_SRC to an Open-Unlearning source tree, or UDS_SHARED_DIR (docs/testing.md)}/vendor/open-unlearning}
WORLD=${WORLD:-${UDS_HOME:-$HOME/.cache/uds}/world/llama1b-0}
OUT=${OUT:-$REPO/results/llama1b/ou_eval.json}
export UDS_TOFU_DIR=${UDS_TOFU_DIR:-${UDS_SHARED_DIR:?set UDS_TOFU_DIR or UDS_SHARED_DIR}/data/tofu}
rm -rf "$WORK/open-unlearning" && mkdir -p "$WORK" && cp -r "$OU_SRC" "$WORK/open-unlearning"
# OU's datasets read locuslab/TOFU/ from its working directory (the world's splits, offline)
"$REPO/.venv/bin/python" -c "
import sys; sys.path.insert(0, '$REPO/experiments'); sys.path.insert(0, '$REPO')
from pathlib import Path
from ou_integration import write_ou_data
write_ou_data(Path('$WORLD/data'), Path('$WORK/open-unlearning/locuslab/TOFU'))"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 PYTHONPATH=$REPO PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# a datasets cache of its own: offline, `datasets` would otherwise reuse a cached locuslab/TOFU of another
# run (another world's questions), which the plug-in then refuses as misaligned with the annotated rows
export HF_DATASETS_CACHE=$WORK/hf_datasets && rm -rf "$HF_DATASETS_CACHE"
M=$WORLD/models/unlearned
t0=$(date +%s)
(cd "$WORK/open-unlearning" && "$VENV/bin/python" src/eval.py 'hydra.searchpath=[pkg://uds.ou.configs]' \
   experiment=eval/tofu/default model=Llama-3.2-1B-Instruct hydra/callbacks=uds '+eval/tofu_metrics=[uds]' \
   $(for k in forget_truth_ratio forget_quality forget_Q_A_Prob forget_Q_A_ROUGE model_utility privleak \
      extraction_strength; do echo "~eval.tofu.metrics.$k"; done) \
   model.model_args.pretrained_model_name_or_path=$M model.tokenizer_args.pretrained_model_name_or_path=$M \
   model.model_args.attn_implementation=sdpa model.model_args.device_map=cpu \
   eval.tofu.metrics.uds.full_model=tiny:llama1b/full eval.tofu.metrics.uds.retain_model=tiny:llama1b/retain \
   task_name=llama1b_unlearned) > "$WORK/ou_eval.log" 2>&1
wall=$(( $(date +%s) - t0 ))
"$REPO/.venv/bin/python" - "$WORK" "$wall" "$OUT" "$VENV" <<'EOF'
import json, subprocess, sys
from pathlib import Path
work, wall, out, venv = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
found = sorted(work.glob("open-unlearning/saves/eval/llama1b_unlearned/TOFU_EVAL.json"))
ev = json.loads(found[0].read_text())["uds"]
version = subprocess.run([f"{venv}/bin/python", "-c", "import transformers; print(transformers.__version__)"],
                         capture_output=True, text=True).stdout.strip()
doc = {"command": "VENV=... bash experiments/llama1b_ou.sh", "transformers": version, "wall_s": wall,
       "ou_uds": ev["agg_value"], "n_scored": ev.get("n_scored"), "n_examples": ev.get("n_examples"),
       "settings": ev.get("settings")}
ours = out.parent / "score_bfloat16.json"
if ours.is_file():
    s = json.loads(ours.read_text())
    doc["uds_score_bfloat16"] = s["summary"]["uds"]
    doc["abs_diff"] = abs(s["summary"]["uds"] - ev["agg_value"])
out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
print(json.dumps(doc))
EOF
