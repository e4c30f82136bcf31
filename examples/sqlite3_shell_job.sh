#!/bin/sh
# A batch job as the sqlite3 shell run once per item, as many a cron script is written: SQLite's
# default rollback journal (no WAL), and no busy timeout (the shell's default is none), so any
# lock another process holds while this one commits fails the item with "database is locked",
# and `set -e` fails the job. Each item is one guarded transaction (row + checkpoint), the row
# kept once by its UNIQUE key, so the job is safe to kill anywhere and restart.
#
# reclaim reads this database without taking any lock, so watching it never fails a commit:
#
#   reclaim run --exec "sh /path/to/sqlite3_shell_job.sh" --kills 3 --kill-rows 5..30
set -eu
db="${RECLAIM_DB:-warehouse.db}"
items="${RECLAIM_ITEMS:-200}"

sqlite3 "$db" "
    CREATE TABLE IF NOT EXISTS records(task_id TEXT NOT NULL UNIQUE, payload TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS checkpoints(task_id TEXT PRIMARY KEY, finished REAL NOT NULL);"

n=0
while [ "$n" -lt "$items" ]; do
    task=$(printf 'task-%03d' "$n")
    sqlite3 "$db" "
        BEGIN IMMEDIATE;
        INSERT INTO records(task_id, payload)
            SELECT '$task', 'enriched:$task'
            WHERE NOT EXISTS (SELECT 1 FROM checkpoints WHERE task_id = '$task')
            ON CONFLICT DO NOTHING;
        INSERT INTO checkpoints(task_id, finished) VALUES ('$task', julianday('now'))
            ON CONFLICT(task_id) DO NOTHING;
        COMMIT;"
    n=$((n + 1))
done
echo "done rows_written=$(sqlite3 "$db" 'SELECT count(*) FROM records') status=ok"
