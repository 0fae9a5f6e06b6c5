#!/usr/bin/env bash
# Would nginx's X-Accel-Redirect serve hosted pages faster than the service sends them itself?
#
#   bench/accel-redirect.sh                    ROUNDS=3 DURATION=6 by default
#   ROUNDS=5 DURATION=8 bench/accel-redirect.sh
#
# With X-Accel-Redirect, a proxy (nginx) forwards every request to the service, the service
# answers with headers only and names a blob file, and nginx sends that file itself. The
# request still crosses the proxy and the service, so the service can at best save sending the
# body. This script measures, on one machine and in alternating rounds, for a 2 KB and a 50 KB
# page (wrk, 64 connections, one nginx worker with sendfile and open_file_cache):
#   static   nginx serving the file from disk (the reference)
#   svc      the service alone, plain HTTP (bench/hosting-server.mjs, as behind a TLS proxy)
#   proxy    nginx proxying to the service (keep-alive upstream): the body crosses both
#   accel    nginx proxying to a bare node:http server that answers X-Accel-Redirect to the
#            file and nginx sending it: the best any X-Accel answer from the service could do,
#            since the service does more per request than a bare server
#   bare     nginx proxying to the same bare server sending the body itself (accel's control)
# and prints req/s medians and each one's ratio to static.
#
# Needs a built dist/ (npm run build), nginx, wrk, curl; loopback only. Everything started is
# stopped by PID on exit.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-6}
CONNS=${CONNS:-64}
BASE_PORT=${BASE_PORT:-19300}
PORT=$BASE_PORT HTTP_PORT=$((BASE_PORT + 1)) PLAIN_PORT=$((BASE_PORT + 2))
STATIC=$((BASE_PORT + 3)) PROXY=$((BASE_PORT + 4)) ACCEL=$((BASE_PORT + 5)) BARE=$((BASE_PORT + 6))
BARE_ACCEL_UP=$((BASE_PORT + 7)) BARE_BODY_UP=$((BASE_PORT + 8))
for t in nginx wrk curl; do command -v $t >/dev/null || { echo "needs $t" >&2; exit 2; }; done
[ -f dist/bin/main.js ] || npm run build

DATA=$(mktemp -d /tmp/svc-bench-accel.XXXXXX)
# nginx's worker runs as an unprivileged user: it must read the pages
chmod 755 "$DATA"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$DATA/nginx.pid" ] && kill "$(cat "$DATA/nginx.pid")" 2>/dev/null || true
  sleep 0.3
  rm -rf "$DATA"
}
trap cleanup EXIT

# shellcheck source=bench/lib/hosting-setup.sh
. bench/lib/hosting-setup.sh
export DATA_DIR=$DATA/svc PORT PLAIN_PORT HTTP_PORT
start_hosting_server "$DATA"
PIDS+=("$SERVER")

USER=benchaccel
bench_account "$USER"
mkdir -p "$DATA/www/$USER"
bench_page 2048 "$DATA/www/$USER/page-2k.html"
bench_page 51200 "$DATA/www/$USER/page-50k.html"
for f in page-2k.html page-50k.html; do bench_upload "$DATA/www/$USER/$f"; done

# the bare upstreams: one answers X-Accel-Redirect (headers only), one sends the body; both
# send the headers the service sends for the page
HEADERS=$(curl -sI -H 'X-Forwarded-Proto: https' "http://127.0.0.1:$PLAIN_PORT/$USER/page-2k.html" | tr -d '\r' | awk -F': ' 'NR > 1 && NF > 1 && $1 !~ /^(Date|Connection|Keep-Alive|Content-Length|ETag|Last-Modified|Accept-Ranges)$/ {print}')
bare() { # PORT MODE(accel|body)
  node -e '
    const http = require("http"); const fs = require("fs"); const path = require("path")
    const [port, mode, headerText, dir] = process.argv.slice(1)
    const common = headerText.split("\n").filter(Boolean).flatMap((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)])
    const pages = new Map()
    for (const f of fs.readdirSync(dir)) pages.set("/'"$USER"'/" + f, fs.readFileSync(path.join(dir, f)))
    http.createServer((req, res) => {
      const b = pages.get(req.url)
      if (!b) { res.writeHead(404, ["Content-Length", "0"]); res.end(); return }
      if (mode === "accel") { res.writeHead(200, [...common, "X-Accel-Redirect", "/_files" + req.url, "Content-Length", "0"]); res.end(); return }
      res.writeHead(200, [...common, "Content-Length", String(b.length)]); res.end(b)
    }).listen(Number(port), "127.0.0.1")' "$1" "$2" "$HEADERS" "$DATA/www/$USER" &
  PIDS+=($!)
}
bare "$BARE_ACCEL_UP" accel
bare "$BARE_BODY_UP" body

mkdir -p "$DATA/nginx-tmp"
cat >"$DATA/nginx.conf" <<EOF
worker_processes 1;
pid $DATA/nginx.pid;
error_log $DATA/nginx-error.log warn;
daemon on;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  open_file_cache max=10000 inactive=60s; open_file_cache_valid 60s;
  keepalive_requests 1000000;
  client_body_temp_path $DATA/nginx-tmp; proxy_temp_path $DATA/nginx-tmp; fastcgi_temp_path $DATA/nginx-tmp;
  uwsgi_temp_path $DATA/nginx-tmp; scgi_temp_path $DATA/nginx-tmp;
  default_type text/html;
  upstream svc { server 127.0.0.1:$PLAIN_PORT; keepalive 64; }
  upstream accel { server 127.0.0.1:$BARE_ACCEL_UP; keepalive 64; }
  upstream body { server 127.0.0.1:$BARE_BODY_UP; keepalive 64; }
  server { listen 127.0.0.1:$STATIC; root $DATA/www; }
  server {
    listen 127.0.0.1:$PROXY;
    location / { proxy_pass http://svc; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header Host \$host; proxy_set_header X-Forwarded-Proto https; }
  }
  server {
    listen 127.0.0.1:$ACCEL;
    location / { proxy_pass http://accel; proxy_http_version 1.1; proxy_set_header Connection ""; }
    location /_files/ { internal; alias $DATA/www/; }
  }
  server {
    listen 127.0.0.1:$BARE;
    location / { proxy_pass http://body; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
EOF
nginx -c "$DATA/nginx.conf" -p "$DATA"
sleep 0.5

# every target must answer the same body before anything is measured
for f in page-2k.html page-50k.html; do
  want=$(sha256sum <"$DATA/www/$USER/$f" | cut -c1-64)
  for url in "http://127.0.0.1:$STATIC" "http://127.0.0.1:$PLAIN_PORT" "http://127.0.0.1:$PROXY" "http://127.0.0.1:$ACCEL" "http://127.0.0.1:$BARE"; do
    got=$(curl -sf -H 'X-Forwarded-Proto: https' "$url/$USER/$f" | sha256sum | cut -c1-64)
    [ "$got" = "$want" ] || { echo "$url/$USER/$f: wrong body" >&2; exit 2; }
  done
done

names() { curl -sI "$1" | tr -d '\r' | awk -F': ' 'NR > 1 && NF > 1 {print $1}' | sort; }
echo "headers of the service's answer that nginx drops on the X-Accel-Redirect path (the same headers sent through the body path kept):"
comm -23 <(names "http://127.0.0.1:$BARE/$USER/page-2k.html") <(names "http://127.0.0.1:$ACCEL/$USER/page-2k.html") | sed 's/^/  /'

OUT="$DATA/runs.tsv"
run() { # NAME PORT FILE ROUND
  local r rps
  r=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" -H 'X-Forwarded-Proto: https' "http://127.0.0.1:$2/$USER/$3" 2>&1)
  if grep -q 'Non-2xx' <<<"$r"; then echo "$1 $3: non-2xx answers" >&2; exit 2; fi
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$r")
  printf '%s\t%s\t%s\t%s\n' "$3" "$1" "$4" "$rps" | tee -a "$OUT"
}
TARGETS=("static:$STATIC" "svc:$PLAIN_PORT" "proxy:$PROXY" "accel:$ACCEL" "bare:$BARE")
for f in page-2k.html page-50k.html; do
  for t in "${TARGETS[@]}"; do wrk -t1 -c"$CONNS" -d2s -H 'X-Forwarded-Proto: https' "http://127.0.0.1:${t#*:}/$USER/$f" >/dev/null; done
  for round in $(seq 1 "$ROUNDS"); do
    for t in "${TARGETS[@]}"; do run "${t%%:*}" "${t#*:}" "$f" "$round"; done
  done
done

echo
echo "medians over $ROUNDS rounds (req/s, and the ratio to nginx serving the file itself):"
for f in page-2k.html page-50k.html; do
  ref=$(awk -F'\t' -v f="$f" '$1 == f && $2 == "static" {print $4}' "$OUT" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  for t in "${TARGETS[@]}"; do
    name=${t%%:*}
    med=$(awk -F'\t' -v f="$f" -v n="$name" '$1 == f && $2 == n {print $4}' "$OUT" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '%-14s %-7s %10.0f  %.2f\n' "$f" "$name" "$med" "$(echo "$med / $ref" | bc -l)"
  done
done
