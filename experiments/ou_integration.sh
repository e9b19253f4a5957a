#!/usr/bin/env bash
# Proof on real Open-Unlearning code: OU's own src/eval.py, on CPU, with the uds plug-in, on the
# tiny `small` world's full, retain and one unlearned model (PRESET=smol: the real SmolLM2 world); once
# with OU's default TOFU suite + uds,
# once appending uds_cka and uds_logit_lens (both with the anchors named as `tiny:` specs), and once
# with the anchors named as folders plus `data_path` (the world's annotated file; OU's dataset is the
# world's TOFU-shaped splits, not TOFU). Then `uds score` on the same models under OU's
# transformers 4.45.1 and under 5.x (this project's .venv), and the max difference over both forms.
#
#   bash experiments/ou_integration.sh        (about 30-60 min on 2 CPU cores, most of it pip and OU's generations)
#
# Environment: PRESET (world preset, default small), SRC_HOME (a UDS_HOME holding world/$PRESET-0 with
# full, retain, $UNLEARNED; read only), WORK (scratch folder), UNLEARNED, MODELS (default: full retain
# $UNLEARNED), V5_PYTHON (a python with this project on transformers 5.x),
# OU_SRC (the vendored OU copy), UDS_TOFU_DIR (where the build finds forget10_annotated.json),
# VENV (reuse a venv made by step 1), STEPS (which steps to run, default "1 2 3 4 5 6"; e.g. "1 2 3" sets up
# OU's venv, the wheel and the data for benchmarks/bench_ou_eval.py).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/uds_ou_integration}
SRC_HOME=${SRC_HOME:-$HOME/.cache/uds}
PRESET=${PRESET:-small}
UNLEARNED=${UNLEARNED:-npo_lr1e-4_b01_a1_ep10}
V5_PYTHON=${V5_PYTHON:-$REPO/.venv/bin/python}
OU_SRC=${OU_SRC:-${UDS_SHARED_DIR:?set OU_SRC to an Open-Unlearning source tree, or UDS_SHARED_DIR (docs/testing.md)}/vendor/open-unlearning}
if [ -z "${UDS_TOFU_DIR:-}" ] && [ -n "${UDS_SHARED_DIR:-}" ]; then export UDS_TOFU_DIR=$UDS_SHARED_DIR/data/tofu; fi
VENV=${VENV:-$WORK/venv} OU=$WORK/open-unlearning HOME_OU=$WORK/uds_home CONF=$WORK/conf
MODELS=${MODELS:-"full retain $UNLEARNED"}
STEPS=" ${STEPS:-1 2 3 4 5 6} "
log() { echo "[$(date -u +%H:%M:%S)] $*"; }
want() { [[ "$STEPS" == *" $1 "* ]]; }
mkdir -p "$WORK"

if want 1 && [ ! -x "$VENV/bin/python" ]; then
  log "1. venv with Open-Unlearning's pins (CPU torch 2.13.0 in place of its 2.4.1 CUDA pin)"
  python3.11 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  grep -v -e '^torch==' -e '^deepspeed==' "$OU_SRC/requirements.txt" > "$WORK/requirements.txt"
  "$VENV/bin/pip" install -q torch==2.13.0 -r "$WORK/requirements.txt"
  "$VENV/bin/pip" install -q --no-build-isolation deepspeed==0.15.4 lm-eval==0.4.8   # imported by src/eval.py
fi

if want 2; then
log "2. this project as a wheel (not editable), built from a copy of the tree"
rm -rf "$WORK/src" "$WORK/dist" && mkdir -p "$WORK/src"
(cd "$REPO" && { git ls-files; git ls-files --others --exclude-standard; } | sort -u \
  | while read -r f; do [ -f "$f" ] && echo "$f"; done | tar -cf - -T - | tar -xf - -C "$WORK/src")
"$VENV/bin/pip" wheel -q --no-deps -w "$WORK/dist" "$WORK/src"
WHEEL=$(ls "$WORK"/dist/uds-*.whl)
"$VENV/bin/pip" freeze > "$WORK/freeze_before.txt"
"$VENV/bin/pip" install -q "$WHEEL" && "$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEEL"
"$VENV/bin/pip" freeze > "$WORK/freeze_after.txt"
"$VENV/bin/python" "$REPO/experiments/ou_integration.py" pins --requirements "$OU_SRC/requirements.txt" \
  --freeze "$WORK/freeze_after.txt"
"$VENV/bin/pip" check
(cd "$WORK" && "$VENV/bin/python" -c "import transformers, accelerate, uds_core.paths as p; print('transformers', transformers.__version__, 'accelerate', accelerate.__version__, 'packaged annotated file:', p.packaged_file(p.ANNOTATED_FORGET10))")
fi

if want 3; then
log "3. Open-Unlearning copy, local data (locuslab/TOFU/ from the world's splits), 4.x-readable world copy"
rm -rf "$OU" && cp -r "$OU_SRC" "$OU"
"$VENV/bin/python" "$REPO/experiments/ou_integration.py" prepare --world "$SRC_HOME/world/$PRESET-0" \
  --home "$HOME_OU" --ou "$OU" --conf "$CONF" --models "$(echo base full retain $MODELS | tr ' ' '\n' | awk '!seen[$0]++' | paste -sd,)"
fi

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 UDS_HOME=$HOME_OU
# a datasets cache of its own: offline, `datasets` would otherwise reuse a locuslab/TOFU cached by another
# OU run (another world's rows, which the plug-in refuses as misaligned)
export HF_DATASETS_CACHE=$WORK/hf_datasets && rm -rf "$HF_DATASETS_CACHE"
ANCHORS="full_model=tiny:$PRESET/full" RETAIN="retain_model=tiny:$PRESET/retain"
WORLD_OU=$HOME_OU/world/$PRESET-0
want 4 && for m in $MODELS; do
  model_args=("hydra.searchpath=[pkg://uds.ou.configs,file://$CONF]" model=uds_tiny
              "model.model_args.pretrained_model_name_or_path=$WORLD_OU/models/$m"
              "model.tokenizer_args.pretrained_model_name_or_path=$WORLD_OU/models/$m" eval.tofu.batch_size=16)
  common=("${model_args[@]}" task_name=$m)
  log "4a. OU eval, default suite + uds: $m"
  (cd "$OU" && /usr/bin/time -f "   OU eval (suite + uds) $m: %e s" nice "$VENV/bin/python" src/eval.py "${common[@]}" \
     experiment=eval/tofu/uds eval.tofu.metrics.uds.$ANCHORS eval.tofu.metrics.uds.$RETAIN \
     > "$WORK/ou_${m}_suite.log" 2>&1)
  log "4b. OU eval, appending uds_cka and uds_logit_lens (metrics already in TOFU_EVAL.json are skipped): $m"
  (cd "$OU" && /usr/bin/time -f "   OU eval (+ uds_cka, uds_logit_lens) $m: %e s" nice "$VENV/bin/python" src/eval.py "${common[@]}" \
     experiment=eval/tofu/default hydra/callbacks=uds '+eval/tofu_metrics=[uds,uds_cka,uds_logit_lens]' \
     eval.tofu.metrics.uds.$ANCHORS eval.tofu.metrics.uds.$RETAIN \
     eval.tofu.metrics.uds_cka.$ANCHORS eval.tofu.metrics.uds_cka.$RETAIN \
     eval.tofu.metrics.uds_logit_lens.$ANCHORS eval.tofu.metrics.uds_logit_lens.$RETAIN \
     > "$WORK/ou_${m}_append.log" 2>&1)
  cat "$OU/saves/eval/$m/TOFU_SUMMARY.json"
  log "4c. OU eval, uds with the anchors as folders + data_path, S1 cache off (the suite's other results are reused): $m"
  "$VENV/bin/python" "$REPO/experiments/ou_integration.py" reuse --logs "$OU/saves/eval/$m/TOFU_EVAL.json" \
    --drop uds --out "$OU/saves/eval/${m}_folders/TOFU_EVAL.json"
  (cd "$OU" && /usr/bin/time -f "   OU eval (uds, folder anchors) $m: %e s" nice "$VENV/bin/python" src/eval.py \
     "${model_args[@]}" task_name=${m}_folders experiment=eval/tofu/uds \
     "eval.tofu.metrics.uds.full_model=$WORLD_OU/models/full" "eval.tofu.metrics.uds.retain_model=$WORLD_OU/models/retain" \
     "eval.tofu.metrics.uds.data_path=$WORLD_OU/data/uds_data.json" eval.tofu.metrics.uds.s1_cache=false \
     > "$WORK/ou_${m}_folders.log" 2>&1)
  cat "$OU/saves/eval/${m}_folders/TOFU_SUMMARY.json"
done

want 5 && log "5. uds score on the same models, S1 cache off (the same work): transformers 4.45.1, then 5.x"
want 5 && for m in $MODELS; do
  nice "$VENV/bin/uds" score --unlearned "tiny:$PRESET/$m" --no-s1-cache --out "$WORK/scores/t445_$m" | tail -1
  nice "$V5_PYTHON" -m uds score --unlearned "tiny:$PRESET/$m" --no-s1-cache --out "$WORK/scores/t5_$m" | tail -1
done

want 6 || exit 0
log "6. OU's uds vs uds score"
"$VENV/bin/python" "$REPO/experiments/ou_integration.py" compare --saves "$OU/saves/eval" --scores "$WORK/scores" \
  --models "${MODELS// /,}" --forms tiny,folders
"$VENV/bin/uds" leaderboard --results "$OU/saves/eval" --format md
