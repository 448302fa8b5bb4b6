#!/usr/bin/env bash
# MCP benchmark: (1) wall time of a one-turn headless run with no MCP
# server and with three stdio servers configured (servers start in the
# background, so they must not delay the run); (2) tokens of the request
# once a 100-tool server is up, with every schema offered and with
# tool_search instead.
#
# Usage: scripts/bench-mcp.sh [REIN_BINARY]   (default: target/release/rein)
# Needs python3; the three servers are the 100-tool test server.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rein="${1:-$root/target/release/rein}"
server="$root/crates/rein-mcp/tests/servers/many_tools.py"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/none" "$work/three" "$work/ws"
chmod 700 "$work/none" "$work/three"
for i in 1 2 3; do
  printf '[mcp_servers.s%s]\ncommand = "python3"\nargs = [%s, "100"]\n' "$i" "\"$server\"" >>"$work/three/config.toml"
done
echo '{"turns": [{"text": "done"}]}' >"$work/done.json"

ms() { echo $(($(date +%s%N) / 1000000)); }
once() { # home -> milliseconds of one run
  local t0 t1
  t0=$(ms)
  REIN_HOME="$1" "$rein" exec -C "$work/ws" --provider replay --script "$work/done.json" --profile full go >/dev/null 2>&1
  t1=$(ms)
  echo $((t1 - t0))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: >"$work/a"; : >"$work/b"
for _ in $(seq 10); do
  once "$work/none" >>"$work/a"
  once "$work/three" >>"$work/b"
done
echo "one-turn run, no MCP server:        median $(median <"$work/a") ms (10 runs)"
echo "one-turn run, 3 stdio servers:      median $(median <"$work/b") ms (10 runs)"

# Tokens: a first turn that waits three seconds (the server is up after it),
# then the answer; the estimate after the second request is compared.
cat >"$work/wait.json" <<'JSON'
{"turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 3"}}]}, {"text": "done"}]}
JSON
tokens() { # setting -> estimated tokens of the last request
  local home="$work/tok-$1"
  mkdir -p "$home" && chmod 700 "$home"
  printf 'mcp_tool_search = "%s"\n[mcp_servers.gh]\ncommand = "python3"\nargs = ["%s", "100"]\n' "$1" "$server" >"$home/config.toml"
  REIN_HOME="$home" "$rein" exec -C "$work/ws" --json --mode auto --provider replay --script "$work/wait.json" --profile full go 2>/dev/null |
    python3 -c 'import json,sys; print([json.loads(l)["estimated"] for l in sys.stdin if "\"token_update\"" in l][-1])'
}
echo "request with a 100-tool server, every schema: $(tokens never) tokens"
echo "request with a 100-tool server, tool_search:  $(tokens always) tokens"
