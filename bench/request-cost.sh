#!/usr/bin/env bash
# What one request costs the server at a steady low rate, with nothing else running: the
# server's CPU per request on its main thread (the event loop) and over all its threads, and
# the client's own CPU. The neighbour scenario of bench/write-path.sh measures the same cost
# inside a page load; this isolates it.
#
#   bench/request-cost.sh                              MODES="page get incr", 500/s for 10 s each
#   MODES="incr incr incr" SECS=25 bench/request-cost.sh
#   NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" MODES=incr bench/request-cost.sh
#   DIR=/path/to/other/checkout bench/request-cost.sh   another build (dist/ built there)
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test?schema=bench_rc bench/request-cost.sh   (the schema is dropped after)
#   SATURATE=1 MODES="get incr" SECS=6 bench/request-cost.sh   at saturation instead (below)
#
# Modes are bench/write-path-writer.mjs's: page (a public page, unauthenticated), get (an
# authenticated KV read of a missing key: the API path without a write), incr (a KV increment).
# Each mode first runs 2 s unmeasured (the JIT, first-use schema compiles), then SECS measured.
# Prints one line per mode: main-thread and all-thread CPU microseconds per request, from
# /proc/PID/task/PID/stat and /proc/PID/stat. Loopback only; needs curl and a built dist/.
#
# SATURATE=1: the server on CPU 1 and wrk -t1 -c16 on CPU 0 instead of the paced client, as
# many requests as the server answers (get reads the missing key "missing": a 404); each mode
# runs 3 s unmeasured, then SECS. Prints req/s and the server's CPU per request; needs wrk.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DIR=${DIR:-"$HERE/.."}
MODES=${MODES:-"page get incr"}
SECS=${SECS:-10}
RATE=${RATE:-500}
PORT=${PORT:-19131}
BASE="http://127.0.0.1:$PORT"
H=(-H 'X-Forwarded-Proto: https')
DATA=$(mktemp -d /tmp/svc-bench-rc.XXXXXX)
SERVER=
cleanup() {
  if [ -n "$SERVER" ]; then
    kill -INT "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
  fi
  rm -rf "$DATA"
  # a ?schema= of DATABASE_URL is the run's own: dropped with it
  local schema=${DATABASE_URL:-}
  if [[ "$schema" == *"schema="* ]]; then
    schema=${schema##*schema=}
    psql -q "${DATABASE_URL%%\?*}" -c "drop schema if exists ${schema%%&*} cascade" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# shellcheck source=bench/lib/limits.sh
. "$HERE/lib/limits.sh"
env=(DATA_DIR="$DATA/data" PORT="$PORT" HOST=127.0.0.1 TRUST_PROXY=1 LOG_LEVEL=warn RATE_LIMITS="$BENCH_RATE_LIMITS")
[ -z "${DATABASE_URL:-}" ] || env+=(DATABASE_URL="$DATABASE_URL")
# word splitting of NODE_ARGS is wanted: several flags
# shellcheck disable=SC2086
PIN=()
[ "${SATURATE:-0}" = 0 ] || PIN=(taskset -c 1)
env "${env[@]}" "${PIN[@]}" node ${NODE_ARGS:-} "$DIR/bin/svc" serve >"$DATA/serve.log" 2>&1 &
SERVER=$!
for _ in $(seq 1 600); do
  curl -sf "$BASE/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "$BASE/healthz" >/dev/null || { cat "$DATA/serve.log" && exit 1; }
svc() { env "${env[@]}" "$DIR/bin/svc" "$@"; }
svc user add writer --password 'bench password 123' >/dev/null
svc user set writer --limit kv_keys=1000000 >/dev/null
KEY=$(svc key create writer | tail -n 1)
node -e 'process.stdout.write("<!doctype html><title>n</title><p>" + "neighbour ".repeat(300) + "</p>\n")' >"$DATA/page.html"
curl -sf "${H[@]}" -H "Authorization: Bearer $KEY" -F "file=@$DATA/page.html;type=text/html" "$BASE/svc_api/upload" >/dev/null
PAGE="$BASE/writer/page.html"

# clock ticks of the server's main thread, and of all its threads
main_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/task/$SERVER/stat"; }
all_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
if [ "${SATURATE:-0}" != 0 ]; then
  # wrk for one mode for $1: its output
  saturate() {
    case "$mode" in
      page) taskset -c 0 wrk -t1 -c16 -d"$1" "$PAGE" ;;
      get) taskset -c 0 wrk -t1 -c16 -d"$1" "${H[@]}" -H "Authorization: Bearer $KEY" "$BASE/svc_api/data/get?key=missing" ;;
      incr) MODE=incr API_KEY=$KEY taskset -c 0 wrk -t1 -c16 -d"$1" -s "$HERE/write-path.lua" "$BASE/svc_api/data/incr" ;;
      *) echo "unknown mode $mode" >&2 && exit 2 ;;
    esac
  }
  printf 'mode\treq_s\tmain_us\tall_us\n'
  for mode in $MODES; do
    saturate 3s >/dev/null
    m0=$(main_ticks) a0=$(all_ticks)
    out=$(saturate "${SECS}s")
    m1=$(main_ticks) a1=$(all_ticks)
    n=$(echo "$out" | awk '/requests in/ {print $1}')
    printf '%s\t%s\t%d\t%d\n' "$mode" "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" $(((m1 - m0) * TICK_US / n)) $(((a1 - a0) * TICK_US / n))
  done
  exit 0
fi
printf 'mode\tmain_us\tall_us\tclient_cpu_s\tachieved\n'
for mode in $MODES; do
  BASE=$BASE PAGE=$PAGE MODE=$mode API_KEY=$KEY RATE=$RATE DURATION_S=2 node "$HERE/write-path-writer.mjs" >/dev/null
  m0=$(main_ticks) a0=$(all_ticks)
  BASE=$BASE PAGE=$PAGE MODE=$mode API_KEY=$KEY RATE=$RATE DURATION_S=$SECS \
    /usr/bin/time -f '%U %S' -o "$DATA/client.time" node "$HERE/write-path-writer.mjs" >"$DATA/w.json"
  m1=$(main_ticks) a1=$(all_ticks)
  n=$((RATE * SECS))
  printf '%s\t%d\t%d\t%s\t%s\n' "$mode" $(((m1 - m0) * TICK_US / n)) $(((a1 - a0) * TICK_US / n)) \
    "$(awk '{print $1 + $2}' "$DATA/client.time")" "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).per_second)' "$DATA/w.json")"
done
