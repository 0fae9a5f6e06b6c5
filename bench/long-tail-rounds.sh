#!/usr/bin/env bash
# Random rounds over a long-tail site kept by bench/long-tail.sh, without redeploying it: for
# trying a server flag or a patched build against the same data, round after round.
#
#   PAGES=100000 ROUNDS=1 SECS=2 KEEP_DATA=/tmp/lt100k bench/long-tail.sh    # the site, once
#   bench/long-tail-rounds.sh /tmp/lt100k                                    # 4 s warm-up, 3 rounds of 8 s
#   ROUNDS=4 NODE_ARGS=--use-largepages=on bench/long-tail-rounds.sh /tmp/lt100k
#   DIR=/path/to/other/checkout bench/long-tail-rounds.sh /tmp/lt100k        # another build (dist/ built there)
#   ONE=1 bench/long-tail-rounds.sh /tmp/lt100k                              # one hot page instead
#
# Each run copies the kept data folder (the copy is removed after), starts the service as
# bench/hosting-server.mjs does (plain HTTP, the same app) on CPU 1 and runs wrk -t2 -c64 on
# CPU 0, each request a page drawn at random from paths.txt. Prints one line per round (req/s,
# p50, p99 in ms, non-2xx), then the server's VmRSS, its heap before and after a full GC, and
# its largest mappings' resident sizes. Loopback only; needs wrk and a built dist/.
set -euo pipefail
KEPT=${1:?usage: bench/long-tail-rounds.sh KEEP_DATA_DIR}
[ -f "$KEPT/paths.txt" ] && [ -d "$KEPT/data" ] || { echo "$KEPT: not a KEEP_DATA folder of bench/long-tail.sh" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${DIR:-$(dirname "$HERE")}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-8}
PLAIN_PORT=19123
# shellcheck source=bench/lib/limits.sh
. "$HERE/lib/limits.sh"
WORK=$(mktemp -d /tmp/svc-bench-lt-rounds.XXXXXX)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$PID" ] && wait "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT
cp -r "$KEPT/data" "$WORK/data"
if [ -n "${ONE:-}" ]; then head -n 1 "$KEPT/paths.txt" >"$WORK/paths.txt"; else cp "$KEPT/paths.txt" "$WORK/paths.txt"; fi
(cd "$DIR" && exec env DATA_DIR="$WORK/data" PORT=19121 HTTP_PORT=19122 PLAIN_PORT=$PLAIN_PORT HOST=127.0.0.1 LOG_LEVEL=warn \
  RATE_LIMITS="$BENCH_RATE_LIMITS" taskset -c 1 node --expose-gc ${NODE_ARGS:-} bench/hosting-server.mjs >"$WORK/svc.out" 2>"$WORK/svc.err") &
PID=$!
for _ in $(seq 1 300); do grep -q plain "$WORK/svc.out" 2>/dev/null && break; sleep 0.1; done
grep -q plain "$WORK/svc.out" || { echo "the service did not start:" >&2; cat "$WORK/svc.err" >&2; exit 2; }
# one round of $1 seconds -> "rps=... p50=... p99=... (ms) non2xx=..."
round() {
  PATHS="$WORK/paths.txt" taskset -c 0 wrk -t2 -c64 -d"$1s" -s "$HERE/lib/random-paths.lua" "http://127.0.0.1:$PLAIN_PORT" |
    awk '/^RESULT / { printf "rps=%s p50=%s p99=%s non2xx=%s\n", $2, $3, $4, $6 }'
}
echo "warm-up $(round 4)"
for r in $(seq 1 "$ROUNDS"); do echo "round $r  $(round "$SECS")"; done
awk '/VmRSS/ {printf "VmRSS %.0f MB\n", $2 / 1024}' "/proc/$PID/status"
kill -USR2 "$PID"
sleep 1.5
grep MEMORY "$WORK/svc.err" | tail -n 1
awk '/^[0-9a-f]+-[0-9a-f]+ / { n = $6; if (n == "") n = "[anon]" } /^Rss:/ { r[n] += $2 }
  END { for (n in r) if (r[n] > 4096) printf "  %6.0f MB %s\n", r[n] / 1024, n }' "/proc/$PID/smaps" | sort -rn
