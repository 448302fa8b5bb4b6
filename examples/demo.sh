#!/usr/bin/env bash
# Runs rein on a copy of a small broken project, with the replay provider
# playing a recorded model session: it lists, reads, runs the failing test,
# fixes the bug, re-runs the test and writes a report.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cp -r "$here/fix-the-test/project/." "$work/"
cargo run --quiet --release --manifest-path "$here/../Cargo.toml" -p rein-cli -- \
  exec -C "$work" --mode auto --provider replay --script "$here/fix-the-test/script.json" \
  "The test suite fails. Find the bug, fix it, and write REPORT.md."
echo
echo "--- the project after the run ($work) ---"
cat "$work/calc.py"
