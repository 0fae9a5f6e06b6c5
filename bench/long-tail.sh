#!/usr/bin/env bash
# The public host on the long tail, against nginx serving the same tree (issue 21).
#
#   bench/long-tail.sh                        20,000 pages of 2 KB in 200 folders
#   PAGES=100000 ROUNDS=3 SECS=8 bench/long-tail.sh
#   PAGES=100000 ROUNDS=1 SECS=2 KEEP_DATA=/tmp/lt100k bench/long-tail.sh   then bench/resolve-miss.mjs
#
# Needs: built dist/ (npm run build), nginx, wrk, curl; loopback only. Writes the site to a
# temp folder, starts the service as bench/hosting-server.mjs runs it (plain HTTP listener on
# the same app, as behind a TLS-terminating proxy), deploys the folder with `svc deploy` (over
# 50,000 pages, in projects of 50,000: the manifest's limit), prints the server's RSS, and
# starts nginx (1 worker, sendfile, open_file_cache) on the same files under the same paths.
# Then, for each server:
#   cold   one pass over every page once, in order, right after a fresh start of the server
#          (the OS page cache is warm for both: it measures the servers' own caches)
#   random ROUNDS rounds of wrk at CONNS connections, each request a page drawn at random,
#          alternating which server goes first
# and the service's VmRSS after the random rounds. Servers on CPU 1, wrk on CPU 0 (PIN=0: off).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib/limits.sh
. bench/lib/limits.sh

PAGES=${PAGES:-20000}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-8}
CONNS=${CONNS:-64}
PORT=19101 HTTP_PORT=19102 PLAIN_PORT=19103 NGINX_PORT=19110
WORK=$(mktemp -d /tmp/svc-bench-long-tail.XXXXXX)
SRV=() WRK=(wrk) CLIENT=()
if [ "${PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  SRV=(taskset -c 1) WRK=(taskset -c 0 wrk) CLIENT=(taskset -c 0)
fi
SVC_PID="" NGINX_PID=""
stop_svc() {
  if [ -n "$SVC_PID" ]; then kill "$SVC_PID" 2>/dev/null || true; wait "$SVC_PID" 2>/dev/null || true; fi
  SVC_PID=""
}
stop_nginx() {
  if [ -n "$NGINX_PID" ]; then kill "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; fi
  NGINX_PID=""
}
# KEEP_DATA=DIR: the deployed data folder and paths.txt are copied there once the server has
# stopped (for bench/resolve-miss.mjs)
keep_data() { if [ -n "${KEEP_DATA:-}" ] && [ -d "$WORK/data" ]; then mkdir -p "$KEEP_DATA" && cp -r "$WORK/data" "$WORK/paths.txt" "$KEEP_DATA/"; fi; }
trap 'stop_svc; stop_nginx; keep_data; [ -s "$WORK/nginx.err" ] && tail -3 "$WORK/nginx.err" >&2; rm -rf "$WORK"' EXIT

# the site: index.html and PAGES-1 pages in 200 folders, 2 KB each, text as HTML compresses;
# over 50,000 pages (a deploy's manifest limit), in projects of 50,000: site, site2, site3...
node - "$WORK/sites" "$PAGES" <<'JS'
const fs = require('node:fs'), path = require('node:path'), crypto = require('node:crypto')
const [dir, n] = [process.argv[2], Number(process.argv[3])]
const list = []
for (let i = 0; i < n; i++) {
  const k = Math.floor(i / 50000)
  const rel = `${k === 0 ? 'site' : `site${k + 1}`}/${i % 50000 === 0 ? 'index.html' : `f${i % 200}/page-${i}.html`}`
  fs.mkdirSync(path.join(dir, path.dirname(rel)), { recursive: true })
  const filler = crypto.randomBytes(700).toString('base64').replace(/[+/=]/g, ' ')
  const body = `<!doctype html><html><head><title>Page ${i}</title></head><body><h1>Page ${i}</h1><p>${filler}</p>${'<p>lorem ipsum dolor sit amet</p>'.repeat(40)}</body></html>`
  fs.writeFileSync(path.join(dir, rel), body.padEnd(2048, ' ').slice(0, 2048))
  list.push(`/bench/${rel}`)
}
fs.writeFileSync(path.join(dir, '..', 'paths.txt'), list.join('\n') + '\n')
JS

env=(DATA_DIR="$WORK/data" PORT=$PORT HTTP_PORT=$HTTP_PORT PLAIN_PORT=$PLAIN_PORT HOST=127.0.0.1 LOG_LEVEL=warn
  RATE_LIMITS="$BENCH_RATE_LIMITS")
mkdir -p "$WORK/data"
start_svc() {
  env "${env[@]}" "${SRV[@]}" node ${MEM:+--expose-gc} ${SVC_NODE_ARGS:-} bench/hosting-server.mjs >"$WORK/svc.out" 2>"$WORK/svc.err" &
  SVC_PID=$!
  for _ in $(seq 1 300); do grep -q plain "$WORK/svc.out" 2>/dev/null && return 0; sleep 0.1; done
  echo "the service did not start:" >&2; cat "$WORK/svc.err" >&2; exit 2
}
rss() {
  awk '/VmRSS/ {printf "%.0f MB", $2 / 1024}' "/proc/$SVC_PID/status"
  # MEM=1: the heap's figures (MB) before and after a full GC, from the server's SIGUSR2 report
  if [ -n "${MEM:-}" ]; then
    kill -USR2 "$SVC_PID"; sleep 1
    printf ' %s' "$(grep MEMORY "$WORK/svc.err" | tail -n 1)"
  fi
}
start_svc
echo "svc VmRSS after start: $(rss)"
env "${env[@]}" bin/svc user add bench --password 'bench password 123' >/dev/null
KEY=$(env "${env[@]}" bin/svc key create bench | tail -n 1)
t0=$(date +%s.%N)
for project in $(ls "$WORK/sites"); do
  SVC_URL=https://127.0.0.1:$PORT SVC_API_KEY=$KEY SVC_INSECURE=1 SVC_CONFIG="$WORK/cfg.json" bin/svc deploy "$WORK/sites/$project" --project "$project" \
    >/dev/null 2>"$WORK/deploy.err" || { cat "$WORK/deploy.err" >&2; exit 1; }
done
printf 'deployed %s pages in %.1f s\n' "$PAGES" "$(echo "$(date +%s.%N) - $t0" | bc)"
echo "svc VmRSS after the deploy: $(rss)"

# nginx: the same files under the same paths
mkdir -p "$WORK/root" "$WORK/ntmp"
ln -s "$WORK/sites" "$WORK/root/bench"
chmod a+rx "$WORK" && chmod -R a+rX "$WORK/sites" "$WORK/root"  # nginx's workers run as www-data
MIME=""; [ -f /etc/nginx/mime.types ] && MIME="include /etc/nginx/mime.types;"
cat >"$WORK/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile 19000;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err warn;
events { worker_connections 4096; }
http {
  $MIME
  default_type application/octet-stream;
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 1000000;
  open_file_cache max=10000 inactive=120s; open_file_cache_valid 120s;
  client_body_temp_path $WORK/ntmp; proxy_temp_path $WORK/ntmp; fastcgi_temp_path $WORK/ntmp;
  uwsgi_temp_path $WORK/ntmp; scgi_temp_path $WORK/ntmp;
  server { listen 127.0.0.1:$NGINX_PORT; root $WORK/root; }
}
CONF
start_nginx() {
  "${SRV[@]}" nginx -p "$WORK" -c "$WORK/nginx.conf" -g 'daemon off;' >"$WORK/nginx.out" 2>&1 &
  NGINX_PID=$!
  for _ in $(seq 1 50); do curl -sf -o /dev/null "http://127.0.0.1:$NGINX_PORT/bench/site/index.html" && return 0; sleep 0.1; done
  echo "nginx did not start:" >&2; cat "$WORK/nginx.out" "$WORK/nginx.err" >&2; exit 2
}
start_nginx
SVC_BASE=http://127.0.0.1:$PLAIN_PORT NGINX_BASE=http://127.0.0.1:$NGINX_PORT

# both serve the same bytes for a sample of pages
for p in $(shuf -n 20 "$WORK/paths.txt"); do
  a=$(curl -sf "$SVC_BASE$p" | sha256sum) b=$(curl -sf "$NGINX_BASE$p" | sha256sum)
  [ "$a" = "$b" ] || { echo "$p differs between the service and nginx" >&2; exit 2; }
done

# run random URL SECS THREADS CONNS -> "rps p50 p99 sockerr non2xx requests"
run() {
  PATHS="$WORK/paths.txt" "${WRK[@]}" -t"$4" -c"$5" -d"$3s" -s bench/lib/random-paths.lua "$2" 2>&1 | sed -n 's/^RESULT //p'
}
show() { read -r rps p50 p99 se bad req <<<"$2"; printf '%-22s rps=%-9s p50=%sms p99=%sms errors=%s non2xx=%s requests=%s\n' "$1" "$rps" "$p50" "$p99" "$se" "$bad" "$req"; }

echo "pages: $PAGES; wrk -c$CONNS, ${SECS}s rounds${SRV:+; servers on CPU 1, wrk on CPU 0}"
# cold: a fresh start of each server, then every page once (1 thread, 16 connections)
stop_svc; start_svc; stop_nginx; start_nginx
echo "svc VmRSS after a restart: $(rss)"
# one pass: every page once, in order, over 16 keep-alive connections (a Node client on wrk's
# CPU; wrk cannot stop after a set number of requests) -> "rps p50 p99 errors non2xx requests"
cold() {
  "${CLIENT[@]}" node - "$1" "$WORK/paths.txt" <<'JS'
const http = require('node:http'), fs = require('node:fs')
const [base, file] = process.argv.slice(2)
const paths = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
const lat = []
let next = 0, errors = 0, bad = 0
const get = (p) => new Promise((resolve) => {
  const t0 = process.hrtime.bigint()
  http.get(base + p, { agent }, (res) => {
    res.resume()
    res.on('end', () => { lat.push(Number(process.hrtime.bigint() - t0) / 1e6); if (res.statusCode !== 200) bad++; resolve() })
  }).on('error', () => { errors++; resolve() })
})
const worker = async () => { while (next < paths.length) await get(paths[next++]) }
const t0 = process.hrtime.bigint()
Promise.all(Array.from({ length: 16 }, worker)).then(() => {
  const s = Number(process.hrtime.bigint() - t0) / 1e9
  lat.sort((a, b) => a - b)
  const q = (f) => lat[Math.min(lat.length - 1, Math.floor(f * lat.length))].toFixed(3)
  console.log(`${(paths.length / s).toFixed(1)} ${q(0.5)} ${q(0.99)} ${errors} ${bad} ${paths.length}`)
  agent.destroy()
})
JS
}
show "cold svc (one pass)" "$(cold "$SVC_BASE")"
echo "svc VmRSS after the cold pass: $(rss)"
show "cold nginx (one pass)" "$(cold "$NGINX_BASE")"
: >"$WORK/r.svc"; : >"$WORK/r.nginx"
for r in $(seq 1 "$ROUNDS"); do
  order="svc nginx"; [ $((r % 2)) = 0 ] && order="nginx svc"
  for who in $order; do
    base=$SVC_BASE; [ "$who" = nginx ] && base=$NGINX_BASE
    res=$(run random "$base" "$SECS" 1 "$CONNS")
    echo "$res" >>"$WORK/r.$who"
    show "random r$r $who" "$res"
  done
done
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for who in svc nginx; do
  printf 'median random %-6s rps=%s p99=%sms\n' "$who" "$(cut -d' ' -f1 "$WORK/r.$who" | median)" "$(cut -d' ' -f3 "$WORK/r.$who" | median)"
done
awk -v a="$(cut -d' ' -f1 "$WORK/r.svc" | median)" -v b="$(cut -d' ' -f1 "$WORK/r.nginx" | median)" 'BEGIN {printf "RATIO random svc/nginx = %.3f\n", a / b}'
echo "svc VmRSS after the random rounds: $(rss)"
echo "nginx worker VmRSS: $(for p in $(pgrep -P "$NGINX_PID"); do awk '/VmRSS/ {printf "%.0f MB ", $2 / 1024}' "/proc/$p/status"; done)"
