#!/usr/bin/env python3
"""A nightly enrichment job written the way the postmortem's was: one row per item, committed
as it goes, and no memory of a previous attempt. Killed and restarted, it begins again at the
first item and writes every finished item a second time.

Run it under reclaim:  reclaim run --exec "python3 /path/to/naive_job.py" --kills 2
It reads RECLAIM_DB, RECLAIM_ITEMS and RECLAIM_DELAY_MS (falling back to ./warehouse.db, 200
items and 10 ms an item), so it also runs on its own. Standard library only.
"""
import os
import sqlite3
import time

db_path = os.environ.get("RECLAIM_DB", "warehouse.db")
items = int(os.environ.get("RECLAIM_ITEMS", "200"))
pause = float(os.environ.get("RECLAIM_DELAY_MS", "10")) / 1000.0

db = sqlite3.connect(db_path, timeout=30)
# The job trusts whatever table is already there: if someone made `records` first, this keeps it.
db.execute("CREATE TABLE IF NOT EXISTS records(task_id TEXT, payload TEXT)")
db.commit()

for n in range(items):
    task = "task-%03d" % n
    enriched = "enriched:" + task[::-1]
    db.execute("INSERT INTO records(task_id, payload) VALUES (?, ?)", (task, enriched))
    db.commit()
    time.sleep(pause)

total = db.execute("SELECT count(*) FROM records").fetchone()[0]
# Its own word on how the night went: it counts the table, sees nothing wrong, says ok.
print("done rows_written=%d status=ok" % total, flush=True)
