#!/bin/sh
# examples/psql_job.sh without its safety, to see reclaim catch it on PostgreSQL: no checkpoint,
# no key, every attempt starts again at the first item, one psql transaction per row. Killed
# after any commit, its restart writes those rows a second time (the postmortem's duplicates).
#
#   reclaim prove --exec "sh /path/to/psql_naive_job.sh" --warehouse postgres --items 40
set -eu
items="${RECLAIM_ITEMS:-200}"
psql_() { psql -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }

psql_ -c "CREATE TABLE IF NOT EXISTS records(task_id text NOT NULL, payload text NOT NULL)" \
    >/dev/null 2>&1 || true

n=0
while [ "$n" -lt "$items" ]; do
    task=$(printf 'task-%03d' "$n")
    psql_ -c "INSERT INTO records(task_id, payload) VALUES ('$task', 'enriched:$task')" >/dev/null
    if [ -n "${HEARTBEAT_FILE:-}" ]; then
        printf '%s %s\n' "$task" "$(date +%s)" > "$HEARTBEAT_FILE.tmp.$$"
        mv "$HEARTBEAT_FILE.tmp.$$" "$HEARTBEAT_FILE"
    fi
    n=$((n + 1))
done
echo "done rows_written=$(psql_ -c 'SELECT count(*) FROM records') status=ok"
