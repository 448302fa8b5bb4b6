#!/usr/bin/env bash
# Cold-build cost of opentelemetry-proto's message types (bench/otel-proto-cost):
# the whole crate graph from nothing, then only the crates rein's tree lacks
# (opentelemetry, opentelemetry_sdk, opentelemetry-proto, tonic, tonic-prost).
set -euo pipefail
cd "$(dirname "$0")/../bench/otel-proto-cost"
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
export CARGO_TARGET_DIR="$target"
echo "cold, everything:"
/usr/bin/time -f '  %e s wall, %U s user CPU, %M KiB peak' cargo build -q -j 2
echo "crates: $(ls "$target/debug/deps"/*.rlib | wc -l) rlibs"
cargo clean -q -p opentelemetry-proto -p opentelemetry -p opentelemetry_sdk -p tonic -p tonic-prost
echo "only the crates not already in rein's tree:"
/usr/bin/time -f '  %e s wall, %U s user CPU' cargo build -q -j 2
