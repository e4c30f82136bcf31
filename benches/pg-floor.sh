#!/bin/sh
# The floor under a PostgreSQL night: the transactions reclaim's guarded worker commits (a row
# and its checkpoint, upserted, per item), from one plain client with prepared statements
# (`pgbench -M prepared`), on the tables reclaim makes, in a schema of this script's own.
# Two shapes: an explicit transaction (BEGIN; two INSERTs; COMMIT: four round trips), and
# the same writes as one statement (reclaim's: one round trip).
#
# Usage: benches/pg-floor.sh HOST_OR_SOCKET_DIR PORT [ITEMS]   (role reclaim, database postgres;
# SHAPES="one" runs one shape only; a password from PGPASSFILE, e.g. a kept cluster's `pgpass`)
set -eu
host=$1 port=$2 items=${3:-100000}
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
psql() { "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U reclaim postgres "$@"; }
schema() {
  psql -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS floor CASCADE; CREATE SCHEMA floor; SET search_path = floor;
    CREATE TABLE records(rowid bigint GENERATED ALWAYS AS IDENTITY, task_id text NOT NULL,
      payload text NOT NULL, idem_key text NOT NULL UNIQUE, run_id text NOT NULL,
      written_at double precision NOT NULL);
    CREATE INDEX records_rowid ON records(rowid);
    CREATE TABLE checkpoints(task_id text PRIMARY KEY, completed_at double precision NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY);
    CREATE INDEX checkpoints_seq ON checkpoints(seq);"
}
cat > "$dir/tx.sql" <<'SQL'
\set i random(0, 999999999999)
BEGIN;
INSERT INTO floor.records(task_id, payload, idem_key, run_id, written_at) VALUES ('task-' || :i, md5(:i::text) || md5(:i::text), md5('k' || :i), 'floor', 1.0) ON CONFLICT (idem_key) DO NOTHING;
INSERT INTO floor.checkpoints(task_id, completed_at) VALUES ('task-' || :i, 1.0) ON CONFLICT (task_id) DO UPDATE SET completed_at = EXCLUDED.completed_at;
END;
SQL
cat > "$dir/one.sql" <<'SQL'
\set i random(0, 999999999999)
WITH r AS (INSERT INTO floor.records(task_id, payload, idem_key, run_id, written_at) VALUES ('task-' || :i, md5(:i::text) || md5(:i::text), md5('k' || :i), 'floor', 1.0) ON CONFLICT (idem_key) DO NOTHING RETURNING 1), c AS (INSERT INTO floor.checkpoints(task_id, completed_at) VALUES ('task-' || :i, 1.0) ON CONFLICT (task_id) DO UPDATE SET completed_at = EXCLUDED.completed_at) SELECT count(*) FROM r;
SQL
for shape in ${SHAPES:-tx one}; do
  schema
  start=$(date +%s.%N)
  "$bin/pgbench" -n -M prepared -c 1 -t "$items" -f "$dir/$shape.sql" -h "$host" -p "$port" -U reclaim postgres >/dev/null
  end=$(date +%s.%N)
  echo "$shape: $items transactions in $(echo "$end - $start" | bc) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
done
psql -c "SET client_min_messages = warning; DROP SCHEMA floor CASCADE"
