#!/usr/bin/env bash
# The GPU sweep of chapter 8 (issue 15; bench/README.md has what it measured; run them one at a time or few at once:
# side by side, twelve runs slowed each other 5-10 times): attention-only models on the Python corpus, trained side by side for
# SECONDS each, then gathered by bench/natural_collect.py into OUT. Usage: bash bench/natural_sweep.sh OUT [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?output folder}
SECONDS_EACH=${2:-300}
SWEEP=/tmp/natural_sweep
mkdir -p "$SWEEP" "$OUT"
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
run() { python3 scripts/train_natural.py --out "$SWEEP/$2.pt" --max-seconds "$SECONDS_EACH" --steps 200000 \
  --device cuda "$@" >"$SWEEP/$2.log" 2>&1 & }
run --tag L2_lr1e-3 --lr 1e-3 --warmup 200
run --tag L2_lr3e-3 --lr 3e-3 --warmup 500
run --tag L2_LN_lr1e-3 --lr 1e-3 --warmup 200 --layer-norm
run --tag L2_LN_lr3e-3 --lr 3e-3 --warmup 500 --layer-norm
run --tag L2_ctx512 --lr 1e-3 --warmup 200 --seq-len 512 --batch 32
run --tag L2_b256 --lr 2e-3 --warmup 300 --batch 256
run --tag L1_b256 --lr 2e-3 --warmup 300 --batch 256 --layers 1
run --tag L1_lr1e-3 --lr 1e-3 --warmup 200 --layers 1
run --tag L1_lr3e-3 --lr 3e-3 --warmup 500 --layers 1
run --tag L1_LN_lr1e-3 --lr 1e-3 --warmup 200 --layers 1 --layer-norm
run --tag L1s_lr1e-3 --lr 1e-3 --warmup 200 --layers 1 --smeared
run --tag L1s_lr3e-3 --lr 3e-3 --warmup 500 --layers 1 --smeared
wait
tail -n 3 "$SWEEP"/*.log
nvidia-smi --query-gpu=name,memory.used --format=csv
python3 bench/natural_collect.py "$SWEEP" "$OUT"
