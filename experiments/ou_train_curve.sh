#!/usr/bin/env bash
# UdsCallback on Open-Unlearning's own trainer (issue 43): OU's src/train.py (the vendored copy, on
# its pins: transformers 4.45.1) unlearns the `test` world's full model with NPO on CPU, the
# callback added by the experiment-file entry docs/curves.md shows (`override /hydra/callbacks:
# uds_curve` + its keys). Then the same run without the callback, two bad inputs, `uds score` of the
# saved model under 4.45.1 and 5.x, and experiments/ou_train_curve.py writes what it found:
#
#   VENV=<OU-pinned venv of experiments/ou_integration.sh step 1> bash experiments/ou_train_curve.sh
#
# (a few minutes on 2 CPU cores). This checkout's code is used through PYTHONPATH (in place of the
# wheel the venv may hold). Environment: VENV (required), WORK (scratch folder), SRC_HOME (a UDS_HOME
# with the test world's base, full and retain built; default the test suite's), OUT (where the
# curve and the summary JSON go; default results/curves), V5_PYTHON (this project on transformers 5.x).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
: "${VENV:?VENV: the OU-pinned venv (experiments/ou_integration.sh, step 1)}"
WORK=${WORK:-/tmp/uds_ou_train_curve}
SRC_HOME=${SRC_HOME:-$REPO/.uds_home/tests}
OUT=${OUT:-$REPO/results/curves}
V5_PYTHON=${V5_PYTHON:-$REPO/.venv/bin/python}
OU_SRC=${OU_SRC:-${UDS_SHARED_DIR:?set OU_SRC to an Open-Unlearning source tree, or UDS_SHARED_DIR (docs/testing.md)}/vendor/open-unlearning}
OU=$WORK/open-unlearning HOME_OU=$WORK/uds_home CONF=$WORK/conf
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
cp -r "$OU_SRC" "$OU"
"$V5_PYTHON" "$REPO/experiments/ou_integration.py" prepare --world "$SRC_HOME/world/test-0" --home "$HOME_OU" \
  --ou "$OU" --conf "$CONF" --models base,full,retain
"$V5_PYTHON" "$REPO/experiments/ou_train_curve.py" experiment --ou "$OU" --conf "$CONF"   # OU's default + the entry
"$V5_PYTHON" "$REPO/experiments/ou_train_curve.py" two-layers --like "$HOME_OU/world/test-0/models/full" --out "$WORK/two_layers"

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 UDS_HOME=$HOME_OU PYTHONPATH=$REPO OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
M=$HOME_OU/world/test-0/models/full
train() {   # TASK [overrides]: 6 NPO steps of 4 items, OU's CPU overrides, no evaluation suite
  local task=$1; shift
  (cd "$OU" && "$VENV/bin/python" src/train.py --config-name=unlearn.yaml trainer=NPO \
     "hydra.searchpath=[pkg://uds.ou.configs,file://$CONF]" model=uds_tiny \
     model.model_args.pretrained_model_name_or_path=$M model.tokenizer_args.pretrained_model_name_or_path=$M \
     trainer.args.per_device_train_batch_size=4 trainer.args.gradient_accumulation_steps=1 \
     trainer.args.num_train_epochs=1 ++trainer.args.max_steps=6 trainer.args.logging_steps=1 \
     trainer.args.learning_rate=1e-3 trainer.args.bf16=false trainer.args.bf16_full_eval=false \
     trainer.args.optim=adamw_torch trainer.args.report_to=none trainer.args.warmup_epochs=0 \
     trainer.args.do_eval=false trainer.args.eval_on_start=false trainer.args.eval_strategy=no \
     ++trainer.args.use_cpu=true task_name=$task "$@")
}
log "1. OU unlearns with the callback (experiment=unlearn/tofu/default_uds)"
train curve experiment=unlearn/tofu/default_uds > "$WORK/curve.log" 2>&1
log "2. the same run without it (experiment=unlearn/tofu/default)"
train plain experiment=unlearn/tofu/default > "$WORK/plain.log" 2>&1
log "3. bad input: every=0; OU's model with 2 layers against 4-layer anchors"
set +e
train bad_every experiment=unlearn/tofu/default_uds hydra.callbacks.uds_curve.every=0 > "$WORK/bad_every.log" 2>&1
echo $? > "$WORK/bad_every.rc"
train bad_model experiment=unlearn/tofu/default_uds model.model_args.pretrained_model_name_or_path=$WORK/two_layers \
  model.tokenizer_args.pretrained_model_name_or_path=$WORK/two_layers > "$WORK/bad_model.log" 2>&1
echo $? > "$WORK/bad_model.rc"
set -e
log "4. uds score of OU's saved model under transformers 4.45.1 and 5.x"
for py in "$VENV/bin/python" "$V5_PYTHON"; do
  tag=$("$py" -c "import transformers; print(transformers.__version__)")
  "$py" -m uds --quiet score --unlearned "$OU/saves/unlearn/curve" --full tiny:test/full --retain tiny:test/retain \
    --data "$HOME_OU/world/test-0/data/uds_data.json" --out "$WORK/score_$tag"
done
"$V5_PYTHON" "$REPO/experiments/ou_train_curve.py" check --work "$WORK" --out "$OUT"
