#!/usr/bin/env python3
"""The same job made safe to kill at any moment: each item's row and its checkpoint commit in
one transaction, a restart skips what is checkpointed, and a unique key on task_id refuses a
second copy of a row even when the checkpoints are gone. It keeps HEARTBEAT_FILE fresh, so a
supervisor can tell progress from mere liveness.

Run it under reclaim:  reclaim prove --exec "python3 /path/to/guarded_job.py"
Standard library only. Note that it creates its tables with CREATE TABLE IF NOT EXISTS: a
`records` table made beforehand without the key keeps running without it (see docs/own-job.md).
"""
import glob
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


def clear_stale_beats():
    """Removes the aside files of earlier attempts that were killed between write and rename:
    each is named by its writer's pid, and a writer that is gone will never rename it."""
    if not beat_path:
        return
    for aside in glob.glob(glob.escape(beat_path) + ".*.tmp"):
        pid = aside[len(beat_path) + 1 : -len(".tmp")]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        if gone(int(pid)):
            try:
                os.remove(aside)
            except FileNotFoundError:
                pass  # another copy of the job removed it first


def gone(pid):
    """Whether process `pid` has ended: it does not exist, or it is a zombie not yet reaped (a
    killed attempt can be one for a moment after its successor starts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, someone else's
    try:
        with open("/proc/%d/stat" % pid) as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False  # no /proc here: alive as far as can be told


def beat(task):
    """Replace the heartbeat in one step (write aside, rename), so a reader never sees half."""
    if not beat_path:
        return
    aside = "%s.%d.tmp" % (beat_path, os.getpid())
    with open(aside, "w") as out:
        out.write("%s %.3f\n" % (task, time.time()))
    os.replace(aside, beat_path)


clear_stale_beats()
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

# Once more at the end: an attempt killed just before this one started may not have been gone
# yet when the first look was made.
clear_stale_beats()
total = db.execute("SELECT count(*) FROM records").fetchone()[0]
print("done rows_written=%d status=ok inserted=%d" % (total, written), flush=True)
