#!/usr/bin/env bash
# Remakes crates/rein-cli/text-order.txt, the functions the release `rein`
# lays out together (crates/rein-cli/build.rs says why): builds the release
# binary, runs the scripted bench task once under valgrind's callgrind
# (scripts/bench-turns.sh, column rein-callgrind), and lists the functions
# it executed (scripts/text-order.py). Needs valgrind and nm. Rebuild the
# release binary afterwards for the new list to take effect.
#
# Usage: scripts/text-order.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v valgrind >/dev/null || { echo "error: valgrind is needed" >&2; exit 1; }
cargo build --release --bin rein
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
profiles="$(mktemp -d)"
trap 'rm -rf "$profiles"' EXIT
BENCH_CALLGRIND="$profiles" scripts/bench-turns.sh "$target/release/rein" 3 rein-callgrind >/dev/null
scripts/text-order.py "$target/release/rein" crates/rein-cli/text-order.txt "$profiles"/callgrind.* \
  >"$profiles/order.txt"
mv "$profiles/order.txt" crates/rein-cli/text-order.txt
