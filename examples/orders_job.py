#!/usr/bin/env python3
"""An engineer's own nightly job, not shaped like reclaim's: it settles orders keyed
`ord-00000`, `ord-00001`, ... in a table `orders(order_id, amount)`, remembering its progress in
`settled(order_id)`. It reads its queue from RECLAIM_KEYS_FILE (one key a line), as any job may.

Run it under reclaim, telling reclaim the job's table, key, queue and checkpoints:

  reclaim run --exec "python3 examples/orders_job.py" --table orders --key order_id \
      --key-format 'ord-%05d' --checkpoint-table settled --kills 2

ORDERS_MODE picks how it is written (the default is the right way):
  atomic          the order and its progress commit in one transaction; a restart resumes
                  after the last settled order
  skip-on-resume  the same, with an off-by-one resume: each restart skips one order (lost work
                  that the job itself reports as `status=ok`)
  two-commit      the order commits, then its progress in a second transaction (a kill
                  between the two settles that order twice); ORDERS_PAUSE_S waits between them
                  on the first attempt, so a kill can be aimed there (only at the order
                  ORDERS_PAUSE_AT names, when it names one: a long wait there holds the job
                  until a kill by rows arrives, however busy the machine)
ORDERS_POINTS=a,b announces only those crash points (default: all three).

It announces its crash points through examples/reclaim_point.py (before-write, after-commit,
and after-row-commit between its two commits in two-commit mode), so reclaim can kill it at any
of them (`--crash-at ord-00042:after-row-commit`) and say where each kill landed.

Standard library only.
"""
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reclaim_point import point as announce  # noqa: E402  (the helper beside this file)

# ORDERS_POINTS=after-commit,... announces only those (a map of one point per order); all three
# by default.
only = os.environ.get("ORDERS_POINTS")


def point(name, key):
    if not only or name in only.split(","):
        announce(name, key)


mode = os.environ.get("ORDERS_MODE", "atomic")
pause = float(os.environ.get("RECLAIM_DELAY_MS", "10")) / 1000.0
between = float(os.environ.get("ORDERS_PAUSE_S", "0"))
between_at = os.environ.get("ORDERS_PAUSE_AT")
first_attempt = os.environ.get("RECLAIM_ATTEMPT", "1") == "1"

keys_file = os.environ.get("RECLAIM_KEYS_FILE")
if keys_file:
    with open(keys_file) as f:
        queue = [line.rstrip("\n") for line in f if line.strip()]
else:
    queue = ["ord-%05d" % n for n in range(int(os.environ.get("RECLAIM_ITEMS", "200")))]

db = sqlite3.connect(os.environ.get("RECLAIM_DB", "orders.db"), timeout=30, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS orders(order_id TEXT NOT NULL, amount INTEGER NOT NULL)")
db.execute("CREATE TABLE IF NOT EXISTS settled(order_id TEXT PRIMARY KEY)")

settled = {row[0] for row in db.execute("SELECT order_id FROM settled")}
start = 0
if settled:
    start = max(queue.index(k) for k in settled if k in queue) + 1
    if mode == "skip-on-resume":
        start += 1  # the bug: the resume steps over one order

for n, order in enumerate(queue[start:], start):
    amount = 100 + n % 7
    point("before-write", order)
    if mode == "two-commit":
        db.execute("INSERT INTO orders(order_id, amount) VALUES (?, ?)", (order, amount))
        point("after-row-commit", order)
        if first_attempt and between > 0 and between_at in (None, order):
            time.sleep(between)
        db.execute("INSERT OR REPLACE INTO settled(order_id) VALUES (?)", (order,))
    else:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO orders(order_id, amount) VALUES (?, ?)", (order, amount))
        db.execute("INSERT OR REPLACE INTO settled(order_id) VALUES (?)", (order,))
        db.execute("COMMIT")
    point("after-commit", order)
    time.sleep(pause)

total = db.execute("SELECT count(*) FROM orders").fetchone()[0]
print("done orders=%d status=ok" % total, flush=True)
