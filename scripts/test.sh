#!/usr/bin/env bash
# `cargo test` with a count of the tests that skipped (and why) at the end.
# Every skip goes through rein-test-support, which appends a line to
# rein-skipped.log in the build's profile folder (or panics under
# REIN_REQUIRE_ALL=1). Arguments go to `cargo test`.
set -uo pipefail
cd "$(dirname "$0")/.."
log="${CARGO_TARGET_DIR:-target}/debug/rein-skipped.log"
rm -f "$log"
cargo test "$@"
status=$?
if [ -s "$log" ]; then
  echo "skipped: $(wc -l < "$log") test(s) or case(s) did not run:"
  cut -f2 "$log" | sort | uniq -c | sort -rn
  echo "(details: $log; set REIN_REQUIRE_ALL=1 to make each a failure)"
else
  echo "skipped: 0"
fi
exit $status
