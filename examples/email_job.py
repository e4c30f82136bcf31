#!/usr/bin/env python3
"""An own job with a side effect: for each order it emails the customer, then commits the order
and its checkpoint in one transaction. Restart-safe for its rows (a restart skips what is
checkpointed), but not for its emails: a kill after the email left and before the commit sends
that email again on the restart. The postmortem's last section, in a few lines.

Run it under reclaim, which starts a vendor on 127.0.0.1 for the night and tells the job where
(RECLAIM_VENDOR_URL), then counts the emails the customer got:

  reclaim run --exec "python3 examples/email_job.py" --table orders --key order_id \
      --key-format 'ord-%05d' --vendor --kill-at-message 50

`--kill-at-message 50` has the vendor take message 50 and never answer, and the host kills the
job while it waits: after the send, before the commit. Standard library only.
"""
import json
import os
import sqlite3
import time
import urllib.request

vendor = os.environ["RECLAIM_VENDOR_URL"]
pause = float(os.environ.get("RECLAIM_DELAY_MS", "10")) / 1000.0
with open(os.environ["RECLAIM_KEYS_FILE"]) as f:
    queue = [line.rstrip("\n") for line in f if line.strip()]

db = sqlite3.connect(os.environ["RECLAIM_DB"], timeout=30, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS orders(order_id TEXT PRIMARY KEY, amount INTEGER NOT NULL)")
db.execute("CREATE TABLE IF NOT EXISTS settled(order_id TEXT PRIMARY KEY)")
settled = {row[0] for row in db.execute("SELECT order_id FROM settled")}


def email(order):
    """The side effect: one POST per order, with no idempotency key."""
    body = json.dumps({"task": order, "text": "your order %s is confirmed" % order}).encode()
    request = urllib.request.Request(
        vendor, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        response.read()


for n, order in enumerate(queue):
    if order in settled:
        continue
    email(order)  # leaves the building before the commit below
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO orders(order_id, amount) VALUES (?, ?)", (order, 100 + n % 7))
    db.execute("INSERT INTO settled(order_id) VALUES (?)", (order,))
    db.execute("COMMIT")
    time.sleep(pause)

print("done orders=%d status=ok" % len(queue), flush=True)
