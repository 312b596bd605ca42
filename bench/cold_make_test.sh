#!/usr/bin/env bash
# Time a cold `make test` (fresh clone, new .venv, set-up included) and write bench/results/cold_make_test.json,
# which bench/run_all.py adds to the Performance page. Usage: bash bench/cold_make_test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q . "$work/book"
start=$(date +%s)
(cd "$work/book" && make test > "$work/log" 2>&1) || { tail -20 "$work/log"; exit 1; }
seconds=$(( $(date +%s) - start ))
mkdir -p bench/results
printf '{"cold make test, set-up included (s)": %d, "date": "%s"}\n' "$seconds" "$(date -u '+%Y-%m-%d %H:%M UTC')" > bench/results/cold_make_test.json
tail -1 "$work/log"
echo "cold make test: ${seconds} s"
