#!/usr/bin/env bash
# What one headless session costs the rein process: wall time, CPU (user +
# sys, children included) and peak memory, from /usr/bin/time, for three
# replayed sessions run alternately:
#   glob          bench/glob-session.json: serve_load's session (nine glob
#                 calls, then the answer) in one `rein exec` process
#   sandbox       bench/sandbox-session.json: ten turns, one sandboxed bash
#                 command each, in a git repository of 30 files; checkpoints off
#   sandbox+ckpt  the same with checkpoints on (rein's default)
# Each run starts from a fresh copy of the workspace and an empty REIN_HOME
# (but for its config.toml). A run that does not exit 0, or a sandbox run
# after which notes.txt does not hold its two lines, stops the script with
# exit 1. Prints one markdown row per session: median and range.
#
# Usage: scripts/bench-session.sh [REIN_BINARY] [RUNS]
#   (default: target/release/rein, 10 runs each). BENCHMARKS.md, "One
#   headless session" and "Sandboxed commands".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rein="$(realpath "${1:-$root/target/release/rein}")"
runs="${2:-10}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The workspace: a git repository of 30 small files, committed.
template="$work/template"
mkdir -p "$template/src"
for i in $(seq -w 1 29); do
  for l in $(seq 1 20); do echo "line $l of file $i"; done >"$template/src/f$i.txt"
done
echo "# bench workspace" >"$template/README.md"
git -C "$template" init -q
git -C "$template" -c user.name=bench -c user.email=bench@localhost add -A
git -C "$template" -c user.name=bench -c user.email=bench@localhost commit -qm "30 files"

home_with() { # name, config line -> a REIN_HOME with that config
  mkdir -p "$work/$1" && chmod 700 "$work/$1"
  echo "$2" >"$work/$1/config.toml"
}

once() { # session name -> appends "wall cpu rss_kib" to $work/$1.txt
  local name="$1" script checkpoints home ws
  case "$name" in
  glob) script="$root/bench/glob-session.json" checkpoints=false ;;
  sandbox) script="$root/bench/sandbox-session.json" checkpoints=false ;;
  sandbox+ckpt) script="$root/bench/sandbox-session.json" checkpoints=true ;;
  esac
  home="$work/home-run"
  rm -rf "$home" "$work/ws"
  home_with home-run "checkpoints = $checkpoints"
  cp -a "$template" "$work/ws"
  ws="$work/ws"
  if ! REIN_HOME="$home" /usr/bin/time -o "$work/time" -f "%e %U %S %M" \
    "$rein" exec -C "$ws" --mode auto --provider replay --script "$script" go >"$work/out" 2>&1; then
    echo "error: the $name run failed:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  if [[ "$name" != glob ]] && [[ "$(wc -l <"$ws/notes.txt" 2>/dev/null || echo 0)" != 2 ]]; then
    echo "error: the $name run did not run its commands:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  awk '{printf "%.3f %.3f %d\n", $1, $2 + $3, $4}' "$work/time" >>"$work/$name.txt"
}

for _ in $(seq "$runs"); do
  for name in glob sandbox sandbox+ckpt; do once "$name"; done
done

stats() { # column -> "median (min–max)"
  sort -n | awk '{a[NR]=$1} END {printf "%s (%s–%s)", a[int((NR+1)/2)], a[1], a[NR]}'
}
echo "| session | wall, s | CPU user+sys, s | peak RSS, KiB |"
echo "| --- | --- | --- | --- |"
for name in glob sandbox sandbox+ckpt; do
  f="$work/$name.txt"
  echo "| $name | $(cut -d' ' -f1 "$f" | stats) | $(cut -d' ' -f2 "$f" | stats) | $(cut -d' ' -f3 "$f" | stats) |"
done
echo "($runs runs each, alternating; $(nproc) cores; $("$rein" --version 2>/dev/null || echo rein))"
