#!/bin/sh
# A batch job as a shell loop over the sqlite3 command-line tool, safe to kill anywhere: each
# item is one sqlite3 process running one transaction (row + checkpoint), a restart skips the
# checkpointed items, and the PRIMARY KEY refuses a second copy of a row. Every item forks a
# child, so a kill often lands in sqlite3 rather than in the shell: the supervisor must kill the
# whole process group, and SQLite rolls the half-done transaction back.
#
#   reclaim run --exec "sh /path/to/guarded_loop.sh" --kills 3
set -eu
db="${RECLAIM_DB:-warehouse.db}"
items="${RECLAIM_ITEMS:-200}"

sqlite3 "$db" <<'SQL' >/dev/null
PRAGMA journal_mode=WAL;
CREATE TABLE IF NOT EXISTS records(task_id TEXT PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints(task_id TEXT PRIMARY KEY, finished REAL NOT NULL);
SQL

n=0
while [ "$n" -lt "$items" ]; do
    task=$(printf 'task-%03d' "$n")
    sqlite3 -cmd '.timeout 30000' "$db" "
        BEGIN IMMEDIATE;
        INSERT INTO records(task_id, payload)
            SELECT '$task', 'enriched:$task'
            WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE task_id = '$task')
            ON CONFLICT DO NOTHING;
        INSERT INTO checkpoints(task_id, finished) VALUES ('$task', julianday('now'))
            ON CONFLICT(task_id) DO NOTHING;
        COMMIT;"
    if [ -n "${HEARTBEAT_FILE:-}" ]; then
        printf '%s %s\n' "$task" "$(date +%s)" > "$HEARTBEAT_FILE.tmp.$$"
        mv "$HEARTBEAT_FILE.tmp.$$" "$HEARTBEAT_FILE"
    fi
    n=$((n + 1))
done
echo "done rows_written=$(sqlite3 "$db" 'SELECT count(*) FROM records') status=ok"
