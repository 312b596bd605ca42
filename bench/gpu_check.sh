#!/usr/bin/env bash
# Every chapter and every benchmark on a machine that has Python and torch but no network (the GPU machine), with the
# wheels of everything else carried in a folder; writes bench/results/$NAME.{json,md}.
#
# Here, first: .venv/bin/python scripts/collect_gpu_wheels.py      (the missing wheels into .whl/, about 30 MiB)
# There:       bash bench/gpu_check.sh                             (CIRCUITS_DEVICE=cuda unless set)
#
# Nothing is fetched: pip installs the carried wheels only (--no-index) into $SITE, beside the machine's own packages.
# A chapter whose assert fails is reported (and the script exits 1) after the rest have run.
# tests/book/test_gpu_check.py runs it the same way on the CPU (system-like Python, carried wheels, CIRCUITS_DEVICE=cpu).
# Options (environment): PYTHON (python3), WHEELS (.whl), SITE (/tmp/circuits-site), NAME (gpu), BENCH_ARGS (passed to
# bench/run_all.py, e.g. "--chapters 05_induction_heads --only induction_train").
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHEELS=${WHEELS:-.whl}
SITE=${SITE:-/tmp/circuits-site}
NAME=${NAME:-gpu}
export CIRCUITS_DEVICE=${CIRCUITS_DEVICE:-cuda} CIRCUITS_PROGRESS=0 CIRCUITS_STRICT_CHECKS=1 PYTHONUNBUFFERED=1
"$PYTHON" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$WHEELS"/*.whl
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE/bin:$PATH"
"$PYTHON" -c "
import torch
from lib.core.device import pick_device
device = pick_device()
assert device.type == '$CIRCUITS_DEVICE', f'CIRCUITS_DEVICE=$CIRCUITS_DEVICE but the book would run on {device}'
print('torch', torch.__version__, 'on', torch.cuda.get_device_name(0) if device.type == 'cuda' else device)
"
# every module of lib imports (a missing wheel shows here, in seconds, not in the middle of a chapter)
"$PYTHON" -c "
import importlib, pkgutil, lib
names = [m.name for m in pkgutil.walk_packages(lib.__path__, 'lib.')]
for name in names:
    importlib.import_module(name)
print(len(names), 'modules of lib import')
"
# shellcheck disable=SC2086
"$PYTHON" bench/run_all.py --no-page --name "$NAME" ${BENCH_ARGS:-}
