#!/usr/bin/env bash
# Write path under load (issue 22): hot-key incr, distinct-key store and form submit at 64
# connections, and a neighbour tenant's page with and without a tenant writing ~500/s.
#
#   bench/write-path.sh                       this checkout, SQLite and PostgreSQL
#   BUILDS="before:/path/to/main-checkout after:." ROUNDS=3 bench/write-path.sh
#   ENGINES=sqlite DURATION=10s bench/write-path.sh
#   PIN=1 SCENARIOS=neighbour bench/write-path.sh
#
# Each of incr, store and submit first runs WARMUP (default 3s) on its own, reported as
# NAME-first (a fresh start: V8 still compiling the path, the first of the 1,000 store keys
# being created), then DURATION measured, reported as NAME: the steady state.
#
# neighbour: the page alone; with a control client (the writer's process and rate, reading a
# public page: what the client itself takes from a shared machine); with the writer.
# NEIGHBOUR_WARMUP=N (default 0) first runs the writer's increments for N seconds unmeasured:
# with SCENARIOS=neighbour alone, nothing else has warmed the write path.
#
# refuse: a user at a 10-key quota; authenticated reads of one of its keys (refuse-read, the
# yardstick), then stores of new keys, every one refused with 1605 (refuse; its non-2xx column
# counts them).
#
# SCENARIOS: any of "incr store submit neighbour refuse" (default all). PIN=1 (on 2+ cores): the
# server on CPU 1, wrk and the writer on CPU 0, so the neighbour figures measure what the
# writes cost the server, not the load generators' share of a small machine.
#
# Each line ends with the server's CPU microseconds per request over that run (cpu_us).
#
# Needs dist/ built in every checkout (npm run build), wrk, curl, PostgreSQL at 127.0.0.1:5432
# (trust, database test) for the postgres engine; loopback only. Each checkout is started with
# `bin/svc serve` on plain HTTP (TRUST_PROXY=1, requests carry X-Forwarded-Proto: https) and
# a fresh DATA_DIR (and schema) per run. Rounds alternate the builds, so a machine shared with
# other work spreads its noise over all of them. Prints one line per measurement, then the
# range (min-max) per build, engine and scenario.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
cd "$HERE/.."
# shellcheck source=bench/lib/limits.sh
. bench/lib/limits.sh

BUILDS=${BUILDS:-"this:."}
# space- or comma-separated; anything but sqlite and postgres is refused before a run
ENGINES=${ENGINES:-"sqlite postgres"}
ENGINES=${ENGINES//,/ }
for e in $ENGINES; do
  case $e in sqlite | postgres) ;; *) echo "ENGINES: unknown engine \"$e\" (sqlite, postgres)" >&2 && exit 2 ;; esac
done
ROUNDS=${ROUNDS:-1}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-3s}
CONNS=${CONNS:-64}
THREADS=${THREADS:-2}
WRITE_RATE=${WRITE_RATE:-500}
PORT=${PORT:-19120}
PG=${PG:-postgres://postgres@127.0.0.1:5432/test}
SCENARIOS=${SCENARIOS:-"incr store submit neighbour refuse"}
PIN=${PIN:-0}
SRV_PIN=() LOAD_PIN=()
if [ "$PIN" = 1 ]; then
  SRV_PIN=(taskset -c 1)
  LOAD_PIN=(taskset -c 0)
fi
has() { [[ " $SCENARIOS " == *" $1 "* ]]; }
OUT=${OUT:-$(mktemp /tmp/svc-bench-write-path.XXXXXX.tsv)}
BASE="http://127.0.0.1:$PORT"
H=(-H 'X-Forwarded-Proto: https')
SERVER= DATA= SCHEMA=

stop_server() {
  if [ -n "$SERVER" ]; then
    kill "$SERVER" 2>/dev/null || true
    wait "$SERVER" 2>/dev/null || true
  fi
  SERVER=
  [ -z "$DATA" ] || rm -rf "$DATA"
  DATA=
  [ -z "$SCHEMA" ] || psql -q "$PG" -c "drop schema if exists $SCHEMA cascade" >/dev/null 2>&1 || true
  SCHEMA=
}
trap stop_server EXIT

# the server's CPU time (user + system, all threads) in clock ticks, from /proc
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
# wrk_run NAME ARGS...: one wrk run; appends "build engine round NAME req/s p99_ms non2xx
# cpu_us": cpu_us is the server's CPU microseconds per request over the run, what a request
# costs the server, which a machine shared with other work disturbs less than req/s
wrk_run() {
  local name=$1
  shift
  local out rps p99 bad reqs t0 t1 cpu
  t0=$(cpu_ticks)
  out=$("${LOAD_PIN[@]}" wrk -t"$THREADS" -c"$CONNS" -d"${RUN_FOR:-$DURATION}" --latency "$@")
  t1=$(cpu_ticks)
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  reqs=$(awk '/ requests in / {print $1}' <<<"$out")
  cpu=$(awk -v d=$((t1 - t0)) -v us="$TICK_US" -v n="$reqs" 'BEGIN {printf "%.1f", (n > 0) ? d * us / n : 0}')
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BUILD" "$ENGINE" "$ROUND" "$name" "$rps" "$p99" "${bad:-0}" "$cpu" | tee -a "$OUT"
}

for ROUND in $(seq 1 "$ROUNDS"); do
  for ENGINE in $ENGINES; do
    for B in $BUILDS; do
      BUILD=${B%%:*}
      DIR=${B#*:}
      DATA=$(mktemp -d /tmp/svc-bench-wp.XXXXXX)
      env=(DATA_DIR="$DATA" PORT="$PORT" HOST=127.0.0.1 TRUST_PROXY=1 LOG_LEVEL=warn
        RATE_LIMITS="$BENCH_RATE_LIMITS")
      if [ "$ENGINE" = postgres ]; then
        SCHEMA=bench_wp_$$_$ROUND
        env+=(DATABASE_URL="$PG?schema=$SCHEMA")
      fi
      svc() { env "${env[@]}" "$DIR/bin/svc" "$@"; }
      "${SRV_PIN[@]}" env "${env[@]}" "$DIR/bin/svc" serve >"$DATA/serve.log" 2>&1 &
      SERVER=$!
      up=
      for _ in $(seq 1 600); do
        curl -sf "$BASE/healthz" >/dev/null 2>&1 && up=1 && break
        sleep 0.1
      done
      [ -n "$up" ] || { echo "$BUILD did not start:" && cat "$DATA/serve.log" && exit 1; }
      kill -0 "$SERVER" || { echo "port $PORT answers, but not from $BUILD" && exit 1; }
      svc user add writer --password 'bench password 123' >/dev/null
      svc user add neighbour --password 'bench password 123' >/dev/null
      svc user set writer --limit kv_keys=1000000 --limit form_submissions_month=1000000000 >/dev/null
      WKEY=$(svc key create writer | tail -n 1)
      NKEY=$(svc key create neighbour | tail -n 1)
      SLUG=bench-$RANDOM
      curl -s --fail-with-body "${H[@]}" -H "Authorization: Bearer $WKEY" -H 'Content-Type: application/json' \
        -d "{\"form_name\":\"Bench\",\"form_slug\":\"$SLUG\"}" "$BASE/svc_api/forms/create" >"$DATA/form.json" || { cat "$DATA/form.json"; exit 1; }
      node -e 'process.stdout.write("<!doctype html><title>n</title><p>" + "neighbour ".repeat(300) + "</p>\n")' >"$DATA/page.html"
      curl -sf "${H[@]}" -H "Authorization: Bearer $NKEY" -F "file=@$DATA/page.html;type=text/html" "$BASE/svc_api/upload" >/dev/null
      PAGE="$BASE/neighbour/page.html"
      curl -sf "${H[@]}" "$PAGE" -o /dev/null

      # scenario NAME URL: the first WARMUP seconds, then the measured run
      scenario() {
        RUN_FOR=$WARMUP MODE=$1 API_KEY=$WKEY wrk_run "$1-first" -s "$HERE/write-path.lua" "$2"
        MODE=$1 API_KEY=$WKEY wrk_run "$1" -s "$HERE/write-path.lua" "$2"
      }
      if has incr; then scenario incr "$BASE/svc_api/data/incr"; fi
      if has store; then scenario store "$BASE/svc_api/data/store"; fi
      if has submit; then scenario submit "$BASE/api/forms/submit/$SLUG"; fi
      if has refuse; then
        svc user add full --password 'bench password 123' >/dev/null
        svc user set full --limit kv_keys=10 >/dev/null
        FKEY=$(svc key create full | tail -n 1)
        for i in $(seq 0 9); do
          curl -sf "${H[@]}" -H "Authorization: Bearer $FKEY" -H 'Content-Type: application/json' -d "{\"key\":\"k$i\",\"value\":$i}" "$BASE/svc_api/data/store" >/dev/null
        done
        RUN_FOR=$WARMUP wrk_run refuse-read-first "${H[@]}" -H "Authorization: Bearer $FKEY" "$BASE/svc_api/data/get?key=k1"
        wrk_run refuse-read "${H[@]}" -H "Authorization: Bearer $FKEY" "$BASE/svc_api/data/get?key=k1"
        RUN_FOR=$WARMUP MODE=refuse API_KEY=$FKEY wrk_run refuse-first -s "$HERE/write-path.lua" "$BASE/svc_api/data/store"
        MODE=refuse API_KEY=$FKEY wrk_run refuse -s "$HERE/write-path.lua" "$BASE/svc_api/data/store"
      fi
      if has neighbour; then
        wrk_run page-alone "${H[@]}" "$PAGE"
        secs=${DURATION%s}
        # the writer's path (increments at 2,000/s) warmed first, unmeasured, when asked
        if [ "${NEIGHBOUR_WARMUP:-0}" != 0 ]; then
          BASE=$BASE PAGE=$PAGE MODE=incr API_KEY=$WKEY RATE=2000 DURATION_S=$NEIGHBOUR_WARMUP "${LOAD_PIN[@]}" node "$HERE/write-path-writer.mjs" >/dev/null
        fi
        # the same client process and rate: MODE=page (the control, public page reads), then MODE=incr (the writer)
        for mode in page incr; do
          BASE=$BASE PAGE=$PAGE MODE=$mode API_KEY=$WKEY RATE=$WRITE_RATE DURATION_S=$((secs + 2)) "${LOAD_PIN[@]}" node "$HERE/write-path-writer.mjs" >"$DATA/writer.json" &
          WRITER=$!
          sleep 1
          name=page-with-writer
          [ "$mode" = incr ] || name=page-with-control
          wrk_run "$name" "${H[@]}" "$PAGE"
          wait "$WRITER"
          printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BUILD" "$ENGINE" "$ROUND" "${name#page-with-}-achieved" "$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).per_second)' "$DATA/writer.json")" - - - | tee -a "$OUT"
        done
      fi
      stop_server
    done
  done
done

echo
echo "ranges over $ROUNDS round(s) (min-max): req/s | p99 ms | server CPU us per request    [raw: $OUT]"
awk -F'\t' '$5 != "" && $6 != "-" {
  k = $1 "\t" $2 "\t" $4
  if (!(k in lo) || $5 < lo[k]) lo[k] = $5; if ($5 > hi[k]) hi[k] = $5
  if (!(k in plo) || $6 < plo[k]) plo[k] = $6; if ($6 > phi[k]) phi[k] = $6
  if (!(k in clo) || $8 < clo[k]) clo[k] = $8; if ($8 > chi[k]) chi[k] = $8
} END { for (k in lo) printf "%s\t%d-%d\t%.2f-%.2f\t%.0f-%.0f\n", k, lo[k], hi[k], plo[k], phi[k], clo[k], chi[k] }' "$OUT" | sort
