#!/usr/bin/env bash
# Run every chapter and every benchmark on a CUDA machine and write the timings to bench/results/gpu.{json,md}.
# Usage (from the repository root, on a Linux machine with an NVIDIA GPU): bash bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-gpu}
test -x "$VENV/bin/python" || python3 -m venv "$VENV"
# On Linux, PyPI's torch==2.13.0 is a CUDA build; the rest of the stack is the same as on the CPU.
"$VENV/bin/pip" install -q -r requirements.txt
"$VENV/bin/pip" install -q --no-deps -e .
"$VENV/bin/python" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device visible to torch'; print('GPU:', torch.cuda.get_device_name(0))"
export CIRCUITS_DEVICE=cuda CIRCUITS_PROGRESS=0
"$VENV/bin/python" -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env chapters
"$VENV/bin/python" bench/run_all.py --no-page --name gpu
