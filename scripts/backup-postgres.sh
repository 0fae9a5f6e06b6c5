#!/bin/sh
# Backup of an svc instance on PostgreSQL (and an S3 bucket or local blobs), in the order
# docs/operations/backups.md explains: the database first (pg_dump, one consistent snapshot),
# then every blob, copied incrementally into DEST/blobs and verified against its name.
#
#   DATABASE_URL=postgres://...[?schema=S] STORAGE_URL=s3://... scripts/backup-postgres.sh DEST
#
# Writes DEST/<UTC time>/svc.dump (pg_dump -Fc) and SHA256SUMS, under a .partial name until
# both steps succeed. Needs pg_dump (same major version as the server or newer) and a built
# checkout (npm run build). Restore: pg_restore, then copy DEST/blobs back (see the docs).
set -eu
# the dump holds password hashes, secrets and form submissions: nothing written here is for
# other accounts (files 0640, folders 0750, as svc backup writes its snapshots)
umask 027

dest=${1:?usage: scripts/backup-postgres.sh DEST}
url=${DATABASE_URL:?DATABASE_URL must name the PostgreSQL database}
here=$(cd "$(dirname "$0")" && pwd)

# libpq does not know ?schema=: pass it to pg_dump as -n
schema=public
case "$url" in
  *\?schema=*) schema=${url#*\?schema=}; schema=${schema%%&*} ;;
esac
base=${url%%\?*}

# one snapshot per second: a second backup within the same second waits for the next name
ts=$(date -u +%Y-%m-%dT%H-%M-%SZ)
while [ -e "$dest/$ts" ] || [ -e "$dest/$ts.partial" ]; do
  sleep 1
  ts=$(date -u +%Y-%m-%dT%H-%M-%SZ)
done
work="$dest/$ts.partial"
mkdir -p "$work" "$dest/blobs"
trap 'rm -rf "$work"' EXIT

pg_dump --format=custom --no-owner --schema="$schema" --dbname="$base" --file="$work/svc.dump"
node "$here/copy-blobs.mjs" "$dest/blobs" > "$work/blobs.txt"
(cd "$work" && sha256sum svc.dump > SHA256SUMS)
mv "$work" "$dest/$ts"
trap - EXIT
echo "backup $dest/$ts: database $(wc -c < "$dest/$ts/svc.dump") bytes, blobs: $(cat "$dest/$ts/blobs.txt")"
