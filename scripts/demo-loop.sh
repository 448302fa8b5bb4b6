#!/usr/bin/env bash
# The demo's task (scripts/rein-demo.sh's) run N times (default 6) on the
# default 1.5B model, each in a fresh copy of examples/fix-the-test/project
# with a fresh REIN_HOME; prints each run's outcome and time, then solved/N.
# BENCHMARKS.md, "The demo's task, run six times a build".
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
runs="${1:-6}"
task="The test suite fails: run python3 test_calc.py, find the bug in calc.py and fix it."
cargo build --quiet --release --manifest-path "$root/Cargo.toml" -p rein-cli || exit 1
model=$("$root/scripts/fetch-model.sh" medium | tail -n 1) || exit 1
rein="${CARGO_TARGET_DIR:-$root/target}/release/rein"
solved=0
for i in $(seq 1 "$runs"); do
  work=$(mktemp -d)
  home=$(mktemp -d)
  cp -r "$root/examples/fix-the-test/project/." "$work"
  began=$(date +%s)
  REIN_HOME="$home" "$rein" exec -C "$work" --mode auto --model-path "$model" \
    --max-turns 15 "$task" >/dev/null 2>&1
  took=$(($(date +%s) - began))
  if (cd "$work" && python3 test_calc.py >/dev/null 2>&1); then
    solved=$((solved + 1))
    echo "run $i: solved in ${took} s"
  else
    echo "run $i: not solved in ${took} s"
  fi
  rm -rf "$work" "$home"
done
echo "solved $solved/$runs"
