#!/usr/bin/env bash
# Requests per second of one hot 2 KB page, served by two builds of the service in turn: an A/B
# comparison of the public host between commits, without nginx in the way.
#
#   bench/hot-page-ab.sh DIR_A DIR_B [RUNS] [SECS]
#     DIR_A, DIR_B  checkouts with a built dist/ (npm run build) and bench/hosting-server.mjs
#                   (any commit since 2026-11-22); e.g. `git worktree add /tmp/base <commit>`,
#                   `ln -s "$PWD/node_modules" /tmp/base/`, `(cd /tmp/base && npm run build)`
#     RUNS          alternations, A then B (default 2)
#     SECS          seconds of each of the 3 wrk rounds per run (default 4)
#   TLS=1           the page over the service's own HTTPS port instead of the plain listener
#   NODE_A, NODE_B  the node binary each build runs on (default: node on PATH); with the same
#                   DIR twice and two binaries, this compares Node versions (each DIR's
#                   node_modules must be installed by its binary: better-sqlite3 is native)
#
# Each run starts the build's server as bench/hosting.sh does (plain HTTP listener, LOG_LEVEL
# warn, a fresh DATA_DIR) on CPU 1, makes an account, uploads a 2 KB page, warms up for 2 s,
# then runs wrk -t1 -c64 on CPU 0 three times. NODE_FLAGS are passed to node (e.g.
# NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof"). Loopback only; needs wrk, curl, taskset.
set -euo pipefail

[ $# -ge 2 ] || { sed -n '2,16p' "$0"; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) RUNS=${3:-2} SECS=${4:-4}
PORT=19101 PLAIN_PORT=19102 HTTP_PORT=19103

one() {
  local dir=$1 node=$2 data srv key url out=""
  data=$(mktemp -d /tmp/svc-bench-ab.XXXXXX)
  cd "$dir"
  # shellcheck disable=SC2086 # NODE_FLAGS is a list of flags
  DATA_DIR=$data PORT=$PORT HTTP_PORT=$HTTP_PORT PLAIN_PORT=$PLAIN_PORT HOST=127.0.0.1 LOG_LEVEL=warn \
    taskset -c 1 "$node" ${NODE_FLAGS:-} bench/hosting-server.mjs >"$data/out" 2>"$data/err" &
  srv=$!
  for _ in $(seq 1 100); do
    grep -q '"plain"' "$data/out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '"plain"' "$data/out" || { cat "$data/err" >&2; kill $srv; exit 2; }
  DATA_DIR=$data "$node" bin/svc user add benchhost --password 'bench password 123' >/dev/null
  key=$(DATA_DIR=$data "$node" bin/svc key create benchhost | tail -n 1)
  node -e '
    const n = 2048; const head = "<!doctype html><html><head><meta charset=\"utf-8\"><title>bench</title></head><body>\n"
    const tail = "</body></html>\n"; let body = ""; let i = 0
    while (head.length + body.length + tail.length < n) body += `<p>paragraph ${i++} lorem ipsum dolor sit amet</p>\n`
    process.stdout.write((head + body).slice(0, n - tail.length) + tail)' >"$data/page-2k.html"
  curl -sfk -H "Authorization: Bearer $key" -F "file=@$data/page-2k.html" "https://127.0.0.1:$PORT/svc_api/upload" >/dev/null
  url=http://127.0.0.1:$PLAIN_PORT/benchhost/page-2k.html
  [ "${TLS:-0}" = 1 ] && url=https://127.0.0.1:$PORT/benchhost/page-2k.html
  [ "$(curl -sk -o /dev/null -w '%{http_code}' "$url")" = 200 ] || { echo "no 200 from $url" >&2; kill $srv; exit 2; }
  taskset -c 0 wrk -t1 -c64 -d2 "$url" >/dev/null
  for _ in 1 2 3; do out="$out $(taskset -c 0 wrk -t1 -c64 -d"$SECS" "$url" | awk '/Requests\/sec/ {printf "%.0f", $2}')"; done
  echo "$(git -C "$dir" rev-parse --short HEAD) ($dir, node $("$node" -v)): req/s$out"
  kill $srv
  wait $srv 2>/dev/null || true
  rm -rf "$data"
}

for _ in $(seq 1 "$RUNS"); do
  one "$A" "${NODE_A:-node}"
  one "$B" "${NODE_B:-node}"
done
