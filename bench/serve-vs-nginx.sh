#!/usr/bin/env bash
# Requests per second of a loopback URL against nginx serving the same file, in alternating
# wrk rounds. Used by bench/hosting.sh; usable on its own.
#
#   bench/serve-vs-nginx.sh [options] URL FILE THRESHOLD
#     URL        http://127.0.0.1:PORT/path of a file the service serves (loopback); an https://
#                URL compares over TLS: nginx then listens with TLS too (a self-signed RSA 2048
#                certificate made here by openssl), and certificates are not verified
#     FILE       the same bytes on disk; nginx serves them at the same path
#     THRESHOLD  the lowest acceptable ratio service/nginx (0 = just report)
#   options: -r rounds (3)  -d seconds per round (8)  -c connections (64)  -t wrk threads (1)
#            -w nginx workers (1)  -W warm-up seconds before each round (2)
#            -P CPU list for wrk (taskset; default unpinned)  -p nginx port (default: free from 18480)
#
# Prints each round, the medians, and last: RATIO project/nginx rps = X (threshold T) PASS|FAIL.
# Exit 0 when the ratio reaches the threshold, 1 below it, 2 on a usage or set-up error or an
# invalid run (non-2xx answers, or socket errors on more than 1% of requests).
# Needs nginx, wrk and curl (Debian: apt-get install nginx wrk curl).
set -uo pipefail

ROUNDS=3 SECS=8 CONNS=64 THREADS=1 WORKERS=1 WARM=2 PIN="" NPORT=""
while getopts "r:d:c:t:w:W:P:p:" o; do
  case $o in
    r) ROUNDS=$OPTARG ;; d) SECS=$OPTARG ;; c) CONNS=$OPTARG ;; t) THREADS=$OPTARG ;;
    w) WORKERS=$OPTARG ;; W) WARM=$OPTARG ;; P) PIN=$OPTARG ;; p) NPORT=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 3 ] || { sed -n '2,16p' "$0"; exit 2; }
URL=$1 FILE=$2 THRESHOLD=$3
[[ $URL =~ ^(https?)://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?(/[^?#]+)$ ]] || { echo "need a loopback http:// or https:// URL naming a file, got $URL" >&2; exit 2; }
SCHEME=${BASH_REMATCH[1]}
URLPATH=${BASH_REMATCH[4]}
[ -r "$FILE" ] || { echo "cannot read $FILE" >&2; exit 2; }
for tool in nginx wrk curl; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "$tool is required" >&2; exit 2; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
WRK=(wrk); [ -n "$PIN" ] && WRK=(taskset -c "$PIN" wrk)

DIR=$(mktemp -d /tmp/svc-vs-nginx.XXXXXX)
NGINX_PID=""
cleanup() {
  if [ -n "$NGINX_PID" ]; then kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null; fi
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

# nginx serves a copy of FILE under the URL's (percent-decoded) path
DECODED=$(printf '%b' "${URLPATH//%/\\x}")
mkdir -p "$DIR/root$(dirname "$DECODED")" "$DIR/tmp"
cp "$FILE" "$DIR/root$DECODED"
chmod -R a+rX "$DIR"
free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [ -z "$NPORT" ]; then NPORT=18480; until free "$NPORT"; do NPORT=$((NPORT + 1)); done; fi
MIME=""; [ -f /etc/nginx/mime.types ] && MIME="include /etc/nginx/mime.types;"
LISTEN="listen 127.0.0.1:$NPORT;"
if [ "$SCHEME" = https ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 -keyout "$DIR/key.pem" -out "$DIR/cert.pem" >/dev/null 2>&1 ||
    { echo "openssl could not make a certificate" >&2; exit 2; }
  LISTEN="listen 127.0.0.1:$NPORT ssl; ssl_certificate $DIR/cert.pem; ssl_certificate_key $DIR/key.pem;"
fi
cat >"$DIR/nginx.conf" <<CONF
worker_processes $WORKERS;
pid $DIR/nginx.pid;
error_log $DIR/error.log warn;
events { worker_connections 4096; }
http {
  $MIME
  default_type application/octet-stream;
  access_log off; sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_timeout 65; keepalive_requests 1000000;
  client_body_temp_path $DIR/tmp; proxy_temp_path $DIR/tmp; fastcgi_temp_path $DIR/tmp;
  uwsgi_temp_path $DIR/tmp; scgi_temp_path $DIR/tmp;
  server { $LISTEN root $DIR/root; }
}
CONF
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -g 'daemon off;' >"$DIR/nginx.out" 2>&1 &
NGINX_PID=$!
for _ in $(seq 1 50); do free "$NPORT" || break; sleep 0.1; done
free "$NPORT" && { echo "nginx did not start:" >&2; cat "$DIR/nginx.out" "$DIR/error.log" >&2 2>/dev/null; exit 2; }
NGINX_URL="$SCHEME://127.0.0.1:$NPORT$URLPATH"

# both must answer 200 with exactly the file's bytes
WANT=$(sha256sum <"$FILE" | cut -d' ' -f1)
for u in "$URL" "$NGINX_URL"; do
  code=$(curl -sk --max-time 30 -o "$DIR/body" -w '%{http_code}' "$u")
  got=$(sha256sum <"$DIR/body" | cut -d' ' -f1)
  [ "$code" = 200 ] && [ "$got" = "$WANT" ] || { echo "$u: status $code, body differs from $FILE" >&2; exit 2; }
done

cat >"$DIR/done.lua" <<'LUA'
done = function(s, latency, _)
  local e = s.errors
  io.write(string.format("RESULT %.1f %.3f %.3f %d %d %d\n", s.requests / (s.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    e.connect + e.read + e.write + e.timeout, e.status, s.requests))
end
LUA
# one run -> "rps p50_ms p99_ms socket_errors non2xx requests"
measure() { "${WRK[@]}" -t"$THREADS" -c"$CONNS" -d"$2s" -s "$DIR/done.lua" "$1" 2>&1 | sed -n 's/^RESULT //p'; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "project: $URL"
echo "nginx:   $NGINX_URL ($WORKERS worker(s), sendfile on, access_log off${LISTEN/*ssl*/, TLS})"
echo "file:    $FILE ($(stat -c %s "$FILE") bytes); wrk -t$THREADS -c$CONNS -d${SECS}s, $ROUNDS rounds alternating${PIN:+, wrk on CPU $PIN}"
INVALID=0
: >"$DIR/project"; : >"$DIR/nginx"
for r in $(seq 1 "$ROUNDS"); do
  order="project nginx"; [ $((r % 2)) = 0 ] && order="nginx project"
  for who in $order; do
    u=$URL; [ "$who" = nginx ] && u=$NGINX_URL
    [ "$WARM" -gt 0 ] && measure "$u" "$WARM" >/dev/null
    res=$(measure "$u" "$SECS")
    [ -n "$res" ] || { echo "wrk gave no result for $u" >&2; exit 2; }
    echo "$res" >>"$DIR/$who"
    read -r rps p50 p99 sockerr non2xx requests <<<"$res"
    printf 'round %d %-7s rps=%-10s p50=%sms p99=%sms sock_errors=%s non2xx=%s\n' "$r" "$who" "$rps" "$p50" "$p99" "$sockerr" "$non2xx"
    if [ "$non2xx" -gt 0 ] || [ $((sockerr * 100)) -gt "$requests" ]; then INVALID=1; fi
  done
done
for who in project nginx; do
  printf 'median %-7s rps=%s p50=%sms p99=%sms\n' "$who" "$(cut -d' ' -f1 "$DIR/$who" | median)" \
    "$(cut -d' ' -f2 "$DIR/$who" | median)" "$(cut -d' ' -f3 "$DIR/$who" | median)"
done
RATIO=$(awk -v a="$(cut -d' ' -f1 "$DIR/project" | median)" -v b="$(cut -d' ' -f1 "$DIR/nginx" | median)" 'BEGIN {printf "%.3f", a / b}')
if [ "$INVALID" = 1 ]; then
  echo "non-2xx answers or socket errors over 1%: the ratio is not valid" >&2
  echo "RATIO project/nginx rps = $RATIO (threshold $THRESHOLD) FAIL"; exit 2
fi
if awk -v r="$RATIO" -v t="$THRESHOLD" 'BEGIN {exit !(r >= t)}'; then
  echo "RATIO project/nginx rps = $RATIO (threshold $THRESHOLD) PASS"; exit 0
fi
echo "RATIO project/nginx rps = $RATIO (threshold $THRESHOLD) FAIL"; exit 1
