#!/usr/bin/env bash
# The step of action.yml that runs rein: `rein review` or `rein exec`
# with the action's inputs (from the environment), the answer kept in a
# file for the comment step. Exit code: rein's.
set -uo pipefail
answer="${RUNNER_TEMP:-/tmp}/rein-answer.md"
args=()
[ -n "${REIN_RUN_PROVIDER:-}" ] && args+=(--provider "$REIN_RUN_PROVIDER")
[ -n "${REIN_RUN_MODEL:-}" ] && args+=(--model "$REIN_RUN_MODEL")
case "${REIN_COMMAND:-review}" in
  review)
    [ -n "${REIN_BASE:-}" ] && git fetch --quiet origin "$REIN_BASE" && args+=(--base "origin/$REIN_BASE")
    [ -n "${REIN_FAIL_ON:-}" ] && args+=(--fail-on "$REIN_FAIL_ON")
    rein review "${args[@]}" > "$answer"
    code=$?
    ;;
  exec)
    if [ -z "${REIN_TASK:-}" ]; then
      echo "rein action: \`exec\` needs \`prompt\`" >&2
      exit 2
    fi
    rein exec --mode "${REIN_RUN_MODE:-plan}" "${args[@]}" -o "$answer" -- "$REIN_TASK"
    code=$?
    ;;
  *)
    echo "rein action: command must be exec or review, not ${REIN_COMMAND}" >&2
    exit 2
    ;;
esac
echo "answer-file=$answer" >> "${GITHUB_OUTPUT:-/dev/null}"
exit $code
