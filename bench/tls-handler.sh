#!/usr/bin/env bash
# Where the service's TLS answer of a hot 2 KB page spends its time, against bare Node HTTPS
# servers in the same process (bench/tls-handler-server.mjs): each variant takes one part of
# the service's answer (its server, its request listener, its prepared responses, its
# headers), so the gaps between them say which part costs what. The server on CPU 1, wrk -t1
# -c64 on CPU 0; each variant 1 s unmeasured then SECS, ROUNDS rounds in turn. Prints req/s
# and the server's CPU per request (utime + stime from /proc, over the measured run).
#
#   bench/tls-handler.sh                 ROUNDS=4 SECS=4
#   NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" ONLY=svc bench/tls-handler.sh
#
# Loopback only; needs a built dist/, wrk, curl and taskset. Figures: docs/benchmarks/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f dist/bin/main.js ] || npm run build
PORT=19141 PLAIN_PORT=19142 HTTP_PORT=19143
DATA=$(mktemp -d /tmp/svc-bench-tls.XXXXXX)
export DATA_DIR=$DATA PORT PLAIN_PORT HTTP_PORT
# shellcheck source=bench/lib/hosting-setup.sh
. bench/lib/hosting-setup.sh
bench_page 2048 "$DATA/page-2k.html"
# shellcheck disable=SC2086 # NODE_FLAGS is a list of flags
HOST=127.0.0.1 LOG_LEVEL=warn BARE_FILE=$DATA/page-2k.html taskset -c 1 node ${NODE_FLAGS:-} bench/tls-handler-server.mjs >"$DATA/server.out" 2>"$DATA/server.err" &
SERVER=$!
cleanup() {
  kill -TERM "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  grep -q '"https"' "$DATA/server.out" 2>/dev/null && break
  sleep 0.1
done
grep -q '"https"' "$DATA/server.out" || { cat "$DATA/server.err" >&2; exit 2; }
bench_account benchhost
bench_upload "$DATA/page-2k.html"
P=benchhost/page-2k.html
# the service's own headers for the page, for the variant that sends them (PORT+14)
curl -sk -D - -o /dev/null "https://127.0.0.1:$PORT/$P" | tr -d '\r' |
  awk -F': ' 'NR > 1 && NF > 1 && $1 !~ /^(Date|Connection|Keep-Alive)$/ {print}' |
  node -e 'const l = require("fs").readFileSync(0, "utf8").split("\n").filter(Boolean)
    console.log(JSON.stringify(l.flatMap((x) => [x.slice(0, x.indexOf(": ")), x.slice(x.indexOf(": ") + 2)])))' >"$DATA/page-2k.html.headers"

cpu() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
run() { # NAME PORT
  local c0 c1 out reqs
  taskset -c 0 wrk -t1 -c64 -d1s "https://127.0.0.1:$2/$P" >/dev/null
  c0=$(cpu)
  out=$(taskset -c 0 wrk -t1 -c64 -d"${SECS:-4}"s "https://127.0.0.1:$2/$P")
  c1=$(cpu)
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  printf '%-34s rps=%-7s cpu_us_per_request=%s\n' "$1" "$(echo "$out" | awk '/Requests\/sec/ {printf "%.0f", $2}')" \
    "$(echo "($c1 - $c0) * 1000000 / $(getconf CLK_TCK) / $reqs" | bc -l | cut -c1-5)"
}
VARIANTS=("svc:$PORT" "bare:$((PORT + 10))" "bare-on-svc-server:$((PORT + 11))" "svc-listener-default-server:$((PORT + 12))"
  "prepared-file:$((PORT + 13))" "prepared-file-svc-headers:$((PORT + 14))" "prepared-memory:$((PORT + 15))")
for r in $(seq 1 "${ROUNDS:-4}"); do
  echo "== round $r"
  for v in "${VARIANTS[@]}"; do
    [ -n "${ONLY:-}" ] && [ "${v%%:*}" != "$ONLY" ] && continue
    run "${v%%:*}" "${v##*:}"
  done
done
