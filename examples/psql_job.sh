#!/bin/sh
# A batch job writing to PostgreSQL through psql, safe to kill anywhere: each item is one psql
# process running one transaction (row + checkpoint), a restart skips the checkpointed items,
# and the PRIMARY KEY refuses a second copy of a row. It reaches its server the way most jobs
# do, through libpq's variables (PGHOST, PGPORT, PGUSER, PGDATABASE, and PGOPTIONS, which puts
# the lane's schema first on the search path); reclaim sets them, and DATABASE_URL, for a job
# run with --warehouse postgres (or postgres://...).
#
#   reclaim run --exec "sh /path/to/psql_job.sh" --warehouse postgres --kills 2
set -eu
items="${RECLAIM_ITEMS:-200}"
psql_() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }

psql_ -c "
    CREATE TABLE IF NOT EXISTS records(task_id text PRIMARY KEY, payload text NOT NULL);
    CREATE TABLE IF NOT EXISTS checkpoints(task_id text PRIMARY KEY, finished timestamptz NOT NULL);" \
    >/dev/null 2>&1 || true

n=0
while [ "$n" -lt "$items" ]; do
    task=$(printf 'task-%03d' "$n")
    psql_ -c "
        BEGIN;
        INSERT INTO records(task_id, payload)
            SELECT '$task', 'enriched:$task'
            WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE task_id = '$task')
            ON CONFLICT DO NOTHING;
        INSERT INTO checkpoints(task_id, finished) VALUES ('$task', now())
            ON CONFLICT (task_id) DO NOTHING;
        COMMIT;" >/dev/null
    if [ -n "${HEARTBEAT_FILE:-}" ]; then
        printf '%s %s\n' "$task" "$(date +%s)" > "$HEARTBEAT_FILE.tmp.$$"
        mv "$HEARTBEAT_FILE.tmp.$$" "$HEARTBEAT_FILE"
    fi
    n=$((n + 1))
done
echo "done rows_written=$(psql_ -c 'SELECT count(*) FROM records') status=ok"
