#!/usr/bin/env bash
# A lock around a shell command, with curl and a baton server (no Node needed):
#
#   examples/curl.sh NAME -- COMMAND [ARGS...]
#
# Waits for the lock NAME, runs COMMAND with BATON_TOKEN (the fencing token)
# in its environment, renews the lease every third of its ttl while COMMAND
# runs, and releases it when COMMAND exits; exits with COMMAND's code.
# If the lease is lost, COMMAND gets SIGTERM and the script exits 70.
#
#   BATON_SERVER  the server (default http://127.0.0.1:7420)
#   BATON_AUTH    a bearer token, if the server runs with --tokens
#   BATON_TTL     lease length in ms (default 30000)
#   BATON_WAIT    how long to wait, in ms (default 600000)
#
# Needs curl and sed. `baton run` does all of this and more; this is the
# recipe for machines without Node.
set -euo pipefail

name=${1:?usage: curl.sh NAME -- COMMAND [ARGS...]}
shift
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "usage: curl.sh NAME -- COMMAND [ARGS...]" >&2; exit 2; }

server=${BATON_SERVER:-http://127.0.0.1:7420}
ttl=${BATON_TTL:-30000}
wait_ms=${BATON_WAIT:-600000}
auth=()
[ -n "${BATON_AUTH:-}" ] && auth=(-H "authorization: Bearer $BATON_AUTH")

# The name goes in the path, percent-encoded ("/" too).
encoded=$(printf '%s' "$name" | od -An -tx1 -v | tr -s ' \n' ' ' | sed 's/ $//; s/^ //; s/ /%/g; s/^/%/')

# curl -s: quiet; -w: the status on the last line, after the body.
call() { curl -s -w '\n%{http_code}' "${auth[@]}" "$@"; }
post() { call -X POST -H 'content-type: application/json' "$@"; }
field() { sed -n "s/.*\"$1\":\"\\{0,1\\}\\([^\",}]*\\).*/\\1/p" <<<"$2" | head -n1; }

# Long-polls of at most 45 s (under proxies' idle timeouts and the server's
# cap), again until granted or BATON_WAIT is spent: the server answers the
# moment the lock is granted. 409 is "still held", 202 "still waiting".
start=$SECONDS
while :; do
  left=$(( wait_ms - (SECONDS - start) * 1000 )); [ "$left" -lt 0 ] && left=0
  poll=$(( left > 45000 ? 45000 : left ))
  answer=$(post --max-time $(( poll / 1000 + 10 )) -d "{\"ttl\":$ttl,\"wait\":$poll}" "$server/v1/locks/$encoded/acquire")
  status=${answer##*$'\n'}
  body=${answer%$'\n'*}
  case $status in 409|202) [ $(( wait_ms - (SECONDS - start) * 1000 )) -ge 1000 ] && continue ;; esac
  break
done
if [ "$status" != 200 ]; then
  echo "curl.sh: \"$name\" not acquired: $status $body" >&2
  case $status in 409|202) exit 75 ;; esac   # still held when the wait ran out
  exit 69
fi
lease=$(field leaseId "$body")
export BATON_TOKEN=$(field token "$body")
echo "curl.sh: holding \"$name\" with fencing token $BATON_TOKEN" >&2

"$@" &
child=$!
lost=0
renew() {
  while sleep "$(printf '%d.%03d' $(( ttl / 3000 )) $(( ttl / 3 % 1000 )))"; do
    answer=$(post -d '{}' "$server/v1/leases/$lease/extend") || continue
    if [ "${answer##*$'\n'}" = 410 ]; then   # LEASE_LOST: stop the command
      echo "curl.sh: the lease on \"$name\" was lost; stopping the command" >&2
      kill -TERM "$child" 2>/dev/null || true
      return 70
    fi
  done
}
renew &
renewer=$!
code=0
wait "$child" || code=$?
if ! kill -0 "$renewer" 2>/dev/null; then
  wait "$renewer" || lost=$?
fi
kill "$renewer" 2>/dev/null || true
released=$(call -X DELETE "$server/v1/leases/$lease")
echo "curl.sh: released \"$name\": $(field released "${released%$'\n'*}")" >&2
[ "$lost" = 70 ] && exit 70
exit "$code"
