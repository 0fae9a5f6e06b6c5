# Shared by bench/hosting.sh and bench/accel-redirect.sh (sourced, not run): the service as
# bench/hosting-server.mjs runs it, a bench account, and pages of an exact size.
# Needs PORT, PLAIN_PORT, HTTP_PORT and DATA_DIR exported, and the repository as the cwd.

# start_hosting_server OUT_DIR [PREFIX...]: starts the server (PREFIX, e.g. taskset, before
# node), sets SERVER to its PID and returns once it listens; exits 2 with its stderr if not.
start_hosting_server() {
  local out=$1
  shift
  HOST=127.0.0.1 LOG_LEVEL=warn "$@" node bench/hosting-server.mjs >"$out/server.out" 2>"$out/server.err" &
  SERVER=$!
  for _ in $(seq 1 100); do
    grep -q '"plain"' "$out/server.out" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '"plain"' "$out/server.out" || { cat "$out/server.err" >&2; exit 2; }
}

# bench_account NAME: creates the user and sets KEY to a new API key of theirs.
bench_account() {
  bin/svc user add "$1" --password 'bench password 123' >/dev/null
  KEY=$(bin/svc key create "$1" | tail -n 1)
}

# bench_upload FILE: uploads FILE as a single page of the bench account.
bench_upload() { curl -sfk -H "Authorization: Bearer $KEY" -F "file=@$1" "https://127.0.0.1:$PORT/svc_api/upload" >/dev/null; }

# bench_page BYTES FILE: writes an HTML page of exactly BYTES bytes.
bench_page() {
  node -e '
    const n = Number(process.argv[1]); const head = "<!doctype html><html><head><meta charset=\"utf-8\"><title>bench</title></head><body>\n"
    const tail = "</body></html>\n"; let body = ""; let i = 0
    while (head.length + body.length + tail.length < n) body += `<p>paragraph ${i++} lorem ipsum dolor sit amet</p>\n`
    process.stdout.write((head + body).slice(0, n - tail.length) + tail)' "$1" >"$2"
}
