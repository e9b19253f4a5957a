#!/usr/bin/env bash
# Every measurement of docs/llama1b.md, one after the other, each under the big-memory lock with one
# torch thread, each result committed as soon as it exists (a rerun skips the files already there;
# FORCE=1 redoes them). Needs UDS_REFERENCE_REPO for the parity step (a checkout of the reference).
#
#   UDS_REFERENCE_REPO=/path/to/unlearning-depth-score nohup bash experiments/llama1b_all.sh > llama1b.log 2>&1 &
set -uo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
PY=${PY:-.venv/bin/python}
LOCK=${LOCK:-/tmp/uds-bigmem.lock}
STEPS=${STEPS:-"score_bfloat16 score_bfloat16_kernels128 score_bfloat16_logprob32 parity score_float32 scale commands profile metrics"}
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

step() {   # name, output file, command...
  local name=$1 out=$2; shift 2
  if [ -f "$out" ] && [ -z "${FORCE:-}" ]; then log "$name: $out exists, skipped"; return 0; fi
  log "$name: start"
  if flock "$LOCK" "$@"; then
    git add "$out" && git commit -q -m "llama1b: $name measured ($out)" -- "$out" && log "$name: committed $out"
  else
    log "$name: FAILED (exit $?)"
  fi
}

for s in $STEPS; do
  case $s in
    parity) step parity results/llama1b/parity_float32.json $PY experiments/llama1b.py parity --n-examples 50 \
              --reference-commit "${REFERENCE_COMMIT:-}" ;;
    score_float32) step score_float32 results/llama1b/score_float32.json $PY experiments/llama1b.py score --dtype float32 ;;
    score_bfloat16) step score_bfloat16 results/llama1b/score_bfloat16.json $PY experiments/llama1b.py score --dtype bfloat16 ;;
    score_bfloat16_kernels128) step score_bfloat16_kernels128 results/llama1b/score_bfloat16_kernels128.json \
              $PY experiments/llama1b.py score --dtype bfloat16 --kernel-cache 128 ;;
    score_bfloat16_logprob32) step score_bfloat16_logprob32 results/llama1b/score_bfloat16_logprob32.json \
              $PY experiments/llama1b.py score --dtype bfloat16 --logprob-dtype float32 ;;
    scale) step scale results/llama1b/scale_smollm2.json $PY experiments/llama1b.py scale ;;
    profile) step profile results/llama1b/profile_float32.json $PY experiments/llama1b.py profile --dtype float32 ;;
    commands) step commands results/llama1b/commands.json $PY experiments/llama1b.py commands ;;
    metrics) step metrics results/llama1b/metrics_bfloat16.json $PY experiments/llama1b.py metrics --dtype bfloat16 ;;
    *) log "unknown step $s" ;;
  esac
done
log "done"
