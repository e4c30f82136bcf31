#!/usr/bin/env python3
"""The same job made safe to kill at any moment: each item's row and its checkpoint commit in
one transaction, a restart skips what is checkpointed, and a unique key on task_id refuses a
second copy of a row even when the checkpoints are gone. It keeps HEARTBEAT_FILE fresh, so a
supervisor can tell progress from mere liveness.

Run it under reclaim:  reclaim prove --exec "python3 /path/to/guarded_job.py"
Standard library only. Note that it creates its tables with CREATE TABLE IF NOT EXISTS: a
`records` table made beforehand without the key keeps running without it (see docs/own-job.md).
"""
import os
import sqlite3
import time

db_path = os.environ.get("RECLAIM_DB", "warehouse.db")
items = int(os.environ.get("RECLAIM_ITEMS", "200"))
pause = float(os.environ.get("RECLAIM_DELAY_MS", "10")) / 1000.0
beat_path = os.environ.get("HEARTBEAT_FILE")

# Autocommit mode: this script says where each transaction begins and ends.
db = sqlite3.connect(db_path, timeout=30, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute(
    "CREATE TABLE IF NOT EXISTS records(task_id TEXT PRIMARY KEY, payload TEXT NOT NULL)"
)
db.execute(
    "CREATE TABLE IF NOT EXISTS checkpoints(task_id TEXT PRIMARY KEY, finished REAL NOT NULL)"
)


def beat(task):
    """Replace the heartbeat in one step (write aside, rename), so a reader never sees half."""
    if not beat_path:
        return
    aside = "%s.%d.tmp" % (beat_path, os.getpid())
    with open(aside, "w") as out:
        out.write("%s %.3f\n" % (task, time.time()))
    os.replace(aside, beat_path)


done = {row[0] for row in db.execute("SELECT task_id FROM checkpoints")}
written = 0
for n in range(items):
    task = "task-%03d" % n
    if task in done:
        continue
    enriched = "enriched:" + task[::-1]
    db.execute("BEGIN IMMEDIATE")
    try:
        cur = db.execute(
            "INSERT INTO records(task_id, payload) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (task, enriched),
        )
        written += cur.rowcount
        db.execute(
            "INSERT OR REPLACE INTO checkpoints(task_id, finished) VALUES (?, ?)",
            (task, time.time()),
        )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    beat(task)
    time.sleep(pause)

total = db.execute("SELECT count(*) FROM records").fetchone()[0]
print("done rows_written=%d status=ok inserted=%d" % (total, written), flush=True)
