#!/usr/bin/env python3
"""A queue worker with a lease: each copy claims the next item no one holds (its lease, two
seconds of real time, written in `queue.lease_until`), works on it, then writes its row in
`records(task_id, worker)` and marks it done. Run two copies and stop one mid-item for longer
than the lease: the other takes the item over and writes it, and the sleeper, woken, still
believes it holds the item. The copies wait for each other before their first claim, so the
copy stopped is one at work.

  reclaim run --exec "python3 $PWD/examples/lease_job.py" --items 20 --workers 2 \
      --pause-at-rows 5:3000

(3000 s of the night is 5 s of real time at the default --scale 600, longer than the lease.)

LEASE_MODE picks how the row is written:
  trusting (default) the row is written because the worker claimed the item: the woken
           sleeper writes it a second time
  fenced   each claim takes the item's next lease number, and the write counts only if that
           number is still the item's (checked in the row's transaction): the sleeper's write
           is refused, and the item is written once

Standard library only.
"""
import os
import sqlite3
import time

LEASE_SECS = 2.0
WORK_SECS = 0.2

db = sqlite3.connect(os.environ["RECLAIM_DB"], timeout=30, isolation_level=None)
items = int(os.environ["RECLAIM_ITEMS"])
fenced = os.environ.get("LEASE_MODE", "trusting") == "fenced"

db.execute(
    "CREATE TABLE IF NOT EXISTS queue (task_id TEXT PRIMARY KEY, lease_until REAL,"
    " lease_no INTEGER NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0)"
)
db.execute("CREATE TABLE IF NOT EXISTS records (task_id TEXT, worker INTEGER)")
db.execute("CREATE TABLE IF NOT EXISTS copies (worker INTEGER PRIMARY KEY)")
db.execute("BEGIN IMMEDIATE")
for i in range(items):
    db.execute("INSERT OR IGNORE INTO queue (task_id) VALUES (?)", (f"task-{i:03d}",))
db.execute("INSERT OR IGNORE INTO copies VALUES (?)", (int(os.environ.get("RECLAIM_WORKER", "1")),))
db.execute("COMMIT")

# The copies start together: on its first attempt each waits (30 s at most) until every copy of
# its lane (RECLAIM_WORKERS) has opened the queue, so that a pause at N rows stops a copy at
# work, holding an item, and not one still starting up on a busy machine.
if os.environ.get("RECLAIM_ATTEMPT", "1") == "1":
    copies = int(os.environ.get("RECLAIM_WORKERS", "1"))
    until = time.monotonic() + 30
    while time.monotonic() < until:
        if db.execute("SELECT count(*) FROM copies").fetchone()[0] >= copies:
            break
        time.sleep(0.02)

def claim_next():
    """Leases the next item no one holds, in the transaction open: (task, lease number), or
    None when every item is done or held by another worker."""
    item = db.execute(
        "SELECT task_id, lease_no + 1 FROM queue WHERE done = 0"
        " AND (lease_until IS NULL OR lease_until < ?) ORDER BY task_id LIMIT 1",
        (time.time(),),
    ).fetchone()
    if item is not None:
        db.execute(
            "UPDATE queue SET lease_until = ?, lease_no = ? WHERE task_id = ?",
            (time.time() + LEASE_SECS, item[1], item[0]),
        )
    return item


while True:
    db.execute("BEGIN IMMEDIATE")
    item = claim_next()
    left = db.execute("SELECT count(*) FROM queue WHERE done = 0").fetchone()[0]
    db.execute("COMMIT")
    if left == 0:
        break
    # As many queue workers do, each commit also takes the next item: from here on this
    # worker holds a lease at every moment it is not waiting for one.
    while item is not None:
        task, lease = item
        time.sleep(WORK_SECS)  # the work
        db.execute("BEGIN IMMEDIATE")
        if fenced:
            # The one line that makes the difference: the write holds only under this lease.
            held = db.execute(
                "UPDATE queue SET done = 1 WHERE task_id = ? AND lease_no = ?", (task, lease)
            ).rowcount
        else:
            held = db.execute("UPDATE queue SET done = 1 WHERE task_id = ?", (task,)).rowcount
        if held:
            db.execute("INSERT INTO records VALUES (?, ?)", (task, os.getpid()))
        item = claim_next()
        db.execute("COMMIT")
    time.sleep(0.05)

print("done status=ok", flush=True)
