#!/usr/bin/env bash
# Requests per second of one authenticated API request at saturation: `svc serve` (SQLite,
# TRUST_PROXY=1, a fresh DATA_DIR) on CPU 1, wrk -t1 -c16 on CPU 0, with an API key.
#
#   bench/api-saturation.sh                    MODE=get: GET /svc_api/data/get of a missing key (404)
#   MODE=incr bench/api-saturation.sh          POST /svc_api/data/incr of one hot key
#   NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" SECS=5 bench/api-saturation.sh
#
# Warms up for 3 s, then prints wrk's Requests/sec (and non-2xx count) of RUNS runs of SECS
# seconds (default 2 x 6). Loopback only; needs wrk, curl, taskset and a built dist/.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/.."
MODE=${MODE:-get} SECS=${SECS:-6} RUNS=${RUNS:-2} PORT=${PORT:-19141}
BASE=http://127.0.0.1:$PORT
DATA=$(mktemp -d /tmp/svc-bench-api.XXXXXX)
SERVER=
cleanup() {
  if [ -n "$SERVER" ]; then
    kill -INT "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
  fi
  rm -rf "$DATA"
}
trap cleanup EXIT

# shellcheck source=bench/lib/limits.sh
. "$HERE/lib/limits.sh"
env=(DATA_DIR="$DATA/data" PORT="$PORT" HOST=127.0.0.1 TRUST_PROXY=1 LOG_LEVEL=warn RATE_LIMITS="$BENCH_RATE_LIMITS")
# word splitting of NODE_ARGS is wanted: several flags
# shellcheck disable=SC2086
env "${env[@]}" taskset -c 1 node ${NODE_ARGS:-} bin/svc serve >"$DATA/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 100); do
  curl -sf "$BASE/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "$BASE/healthz" >/dev/null || { cat "$DATA/serve.log" && exit 1; }
env "${env[@]}" bin/svc user add writer --password 'bench password 123' >/dev/null
KEY=$(env "${env[@]}" bin/svc key create writer | tail -n 1)
run() {
  if [ "$MODE" = get ]; then
    printf 'wrk.headers["X-Forwarded-Proto"] = "https"\nwrk.headers["Authorization"] = "Bearer %s"\n' "$KEY" >"$DATA/get.lua"
    taskset -c 0 wrk -t1 -c16 -d"$1" -s "$DATA/get.lua" "$BASE/svc_api/data/get?key=missing"
  else
    MODE=incr API_KEY=$KEY taskset -c 0 wrk -t1 -c16 -d"$1" -s "$HERE/write-path.lua" "$BASE/svc_api/data/incr"
  fi
}
run 3s >/dev/null
for _ in $(seq 1 "$RUNS"); do run "${SECS}s" | grep -E 'Requests/sec|Non-2xx' | tr -s ' ' | paste -sd ' ' -; done
