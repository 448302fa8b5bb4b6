#!/usr/bin/env bash
# The main job on a fresh machine, with no key: build rein, fetch the default
# local model (once), and let rein fix the failing test of a small Python
# project, in a temporary copy, on that model. Then run the project's test.
#
#   scripts/rein-demo.sh [small|medium]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-small}
task="The test suite fails: run python3 test_calc.py, find the bug in calc.py and fix it."

echo "== building rein (release; the first build compiles llama.cpp and takes a few minutes)" >&2
cargo build --release --manifest-path "$root/Cargo.toml" -p rein-cli

echo "== fetching the $which model" >&2
model=$("$root/scripts/fetch-model.sh" "$which" | tail -n 1)

work=$(mktemp -d)
cp -r "$root/examples/fix-the-test/project/." "$work/"
echo "== running rein on $model in $work" >&2
echo "   task: $task" >&2
status=0
cargo run --quiet --release --manifest-path "$root/Cargo.toml" -p rein-cli -- \
  exec -C "$work" --mode auto --model-path "$model" --max-turns 15 "$task" || status=$?

echo
echo "--- python3 test_calc.py after the run ($work) ---"
(cd "$work" && python3 test_calc.py) || echo "(the test still fails: the small model did not find the fix this time)"
exit "$status"
