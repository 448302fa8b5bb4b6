#!/usr/bin/env bash
# Per-turn cost side by side (issue 37): one scripted 10-turn task (nine
# tool calls: six shell commands, two reads, one edit; then the answer,
# bench/turns/task.json) played by a local mock model speaking the OpenAI
# Chat Completions streaming protocol (bench/turns/mock_openai.py), run by:
#   rein           rein exec --mode auto: commands in the sandbox (default
#                  sandbox, checkpoints on as by default)
#   rein-before    rein as in `rein`, run by the binary $REIN_BEFORE (an
#                  older build, for before and after in one run)
#   rein-bwrap     the same with REIN_SANDBOX_SERVER=off: one bubblewrap per
#                  command (the fallback)
#   rein-bypass    rein exec --mode bypass: no sandbox
#   rein-notok     rein as in `rein` with --model mock: a model name with no
#                  offline tokenizer (token counts are estimates), where
#                  rein's default model builds OpenAI's o200k tables
#   rein-callgrind rein as in `rein`, under valgrind's callgrind with
#                  instruction addresses, one profile a run written into the
#                  folder $BENCH_CALLGRIND (for scripts/text-order.sh; its
#                  times mean nothing)
#   floor          bench/turns/floor.py: a 116-line Python loop, no sandbox
#   codex          Codex CLI (only when CODEX=/path/to/codex is set), its
#                  own sandbox, pointed at the same mock
# Each run starts from a fresh copy of a git workspace and an empty home;
# a run that fails, or after which calc.py is not fixed and notes.txt does
# not hold its line, stops the script (exit 1). Runs alternate between the
# columns. Figures from /usr/bin/time: wall; CPU = user + sys of the whole
# process tree (every descendant is waited for inside it); peak RSS = the
# largest single process of the tree (ru_maxrss), in MiB.
#
# Usage: scripts/bench-turns.sh [REIN_BINARY] [RUNS] [COLUMNS]
#   defaults: target/release/rein, 5 runs, "rein rein-bwrap rein-bypass rein-notok floor"
#   (add codex with CODEX set). Prints one markdown row per column: median
#   (min–max), the load before and after, and the first request's size.
#   BENCHMARKS.md, "Per-turn cost side by side".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rein="$(realpath "${1:-$root/target/release/rein}")"
runs="${2:-5}"
columns="${3:-rein rein-bwrap rein-bypass rein-notok floor}"
task="$root/bench/turns/task.json"
prompt="The add function in calc.py is wrong: find the bug, fix it, and run test.sh."
# Not under /tmp: Codex refuses to set up its sandbox helper there.
work="$(mktemp -d -p /var/tmp)"
cleanup() {
  [[ -n "${mock_pid:-}" ]] && kill "$mock_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# The workspace: calc.py with a bug in add, test.sh, 28 small files, committed.
template="$work/template"
mkdir -p "$template/src"
for i in $(seq -w 1 28); do
  for l in $(seq 1 20); do echo "line $l of file $i"; done >"$template/src/f$i.txt"
done
printf 'def add(a, b):\n    return a - b  # add\n\n\ndef mul(a, b):\n    return a * b\n' >"$template/calc.py"
printf 'grep -q "return a + b" calc.py && echo PASS || { echo FAIL; exit 1; }\n' >"$template/test.sh"
git -C "$template" init -q
git -C "$template" -c user.name=bench -c user.email=bench@localhost add -A
git -C "$template" -c user.name=bench -c user.email=bench@localhost commit -qm "calc"

python3 "$root/bench/turns/mock_openai.py" "$task" "$work/port" "$work/requests.log" \
  "$work/first-request.json" &
mock_pid=$!
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.05; done
base="http://127.0.0.1:$(cat "$work/port")/v1"

once() { # column -> appends "wall cpu rss_kib" to $work/$1.txt
  local col="$1" home="$work/home" ws="$work/ws"
  rm -rf "$home" "$ws"
  mkdir -m 700 "$home"
  cp -a "$template" "$ws"
  local -a cmd
  case "$col" in
  rein) cmd=(env REIN_HOME="$home" "$rein" exec -C "$ws" --mode auto) ;;
  rein-before)
    cmd=(env REIN_HOME="$home" "${REIN_BEFORE:?set REIN_BEFORE to the older binary}" exec -C "$ws" --mode auto) ;;
  rein-bwrap) cmd=(env REIN_HOME="$home" REIN_SANDBOX_SERVER=off "$rein" exec -C "$ws" --mode auto) ;;
  rein-bypass) cmd=(env REIN_HOME="$home" "$rein" exec -C "$ws" --mode bypass) ;;
  rein-notok) cmd=(env REIN_HOME="$home" "$rein" exec -C "$ws" --mode auto --model mock) ;;
  rein-callgrind)
    cmd=(env REIN_HOME="$home" valgrind --tool=callgrind --dump-instr=yes
      --callgrind-out-file="${BENCH_CALLGRIND:?set BENCH_CALLGRIND to a folder for the profiles}/callgrind.%p"
      "$rein" exec -C "$ws" --mode auto) ;;
  floor) cmd=(python3 "$root/bench/turns/floor.py" "$base" "$ws") ;;
  codex)
    printf 'model = "mock"\nmodel_provider = "mock"\n[model_providers.mock]\nname = "mock"\nbase_url = "%s"\nwire_api = "responses"\n' \
      "$base" >"$home/config.toml"
    cmd=(env CODEX_HOME="$home" "$CODEX" exec --skip-git-repo-check -s workspace-write -C "$ws") ;;
  *) echo "error: unknown column $col" >&2; exit 1 ;;
  esac
  if ! OPENAI_BASE_URL="$base" OPENAI_API_KEY=bench /usr/bin/time -o "$work/time" -f "%e %U %S %M" \
    "${cmd[@]}" "$prompt" </dev/null >"$work/out" 2>&1; then
    echo "error: the $col run failed:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  if ! grep -q "return a + b" "$ws/calc.py" || [[ "$(cat "$ws/notes.txt" 2>/dev/null)" != checked ]]; then
    echo "error: the $col run did not do the task:" >&2
    cat "$work/out" >&2
    exit 1
  fi
  awk '{printf "%.3f %.3f %d\n", $1, $2 + $3, $4}' "$work/time" >>"$work/$col.txt"
  cp "$work/first-request.json" "$work/first-$col.json"
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
  for col in $columns; do once "$col"; done
done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"

stats() { # scale -> "median (min–max)"
  sort -n | awk -v s="$1" '{a[NR]=$1/s} END {printf "%.*f (%.*f–%.*f)", (s>1?1:2), a[int((NR+1)/2)], (s>1?1:2), a[1], (s>1?1:2), a[NR]}'
}
echo "| column | wall, s | CPU user+sys, s | peak RSS, MiB |"
echo "| --- | --- | --- | --- |"
for col in $columns; do
  f="$work/$col.txt"
  echo "| $col | $(cut -d' ' -f1 "$f" | stats 1) | $(cut -d' ' -f2 "$f" | stats 1) | $(cut -d' ' -f3 "$f" | stats 1024) |"
done
echo "($runs runs each, alternating; $(nproc) cores; load $load_before before, $load_after after;"
echo " $("$rein" --version 2>/dev/null | head -1 || echo rein); first request, bytes:$(for col in $columns; do printf ' %s %s' "$col" "$(wc -c <"$work/first-$col.json")"; done))"
# BENCH_KEEP_REQUEST=FILE keeps rein's first request (for request_tokens).
if [[ -n "${BENCH_KEEP_REQUEST:-}" && -f "$work/first-rein.json" ]]; then
  cp "$work/first-rein.json" "$BENCH_KEEP_REQUEST"
fi
