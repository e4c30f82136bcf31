#!/usr/bin/env python3
"""The same job with an outbox: each order, its checkpoint and its outbox entry commit in one
transaction; then a relay loop sends every unsent entry with the order's own key as its
Idempotency-Key, and marks it sent. A kill between the send and the mark sends that entry again
on the restart, with the same key: a vendor that honours keys answers from its store and the
customer gets one email; a vendor that ignores keys sends a second.

  reclaim run --exec "python3 examples/outbox_job.py" --table orders --key order_id \
      --key-format 'ord-%05d' --vendor honour --kill-at-message 50     # exactly once
  ... --vendor ignore --kill-at-message 50                             # a duplicate

Standard library only.
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
db.execute(
    "CREATE TABLE IF NOT EXISTS outbox(order_id TEXT PRIMARY KEY, body TEXT NOT NULL, sent INTEGER NOT NULL DEFAULT 0)"
)


def relay():
    """Sends what the outbox holds unsent, oldest first, each with its order as the key."""
    for order, body in db.execute(
        "SELECT order_id, body FROM outbox WHERE sent = 0 ORDER BY rowid"
    ).fetchall():
        request = urllib.request.Request(
            vendor,
            data=body.encode(),
            headers={"Content-Type": "application/json", "Idempotency-Key": "email:" + order},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
        db.execute("UPDATE outbox SET sent = 1 WHERE order_id = ?", (order,))


relay()  # a restart first delivers what the killed attempt left unsent
settled = {row[0] for row in db.execute("SELECT order_id FROM settled")}
for n, order in enumerate(queue):
    if order in settled:
        continue
    body = json.dumps({"task": order, "text": "your order %s is confirmed" % order})
    db.execute("BEGIN IMMEDIATE")
    # OR IGNORE: a rerun whose checkpoints were lost finds the order, its outbox entry (sent or
    # not) and goes on; the unique keys alone keep it from writing or sending twice.
    db.execute("INSERT OR IGNORE INTO orders(order_id, amount) VALUES (?, ?)", (order, 100 + n % 7))
    db.execute("INSERT OR IGNORE INTO settled(order_id) VALUES (?)", (order,))
    db.execute("INSERT OR IGNORE INTO outbox(order_id, body) VALUES (?, ?)", (order, body))
    db.execute("COMMIT")
    relay()
    time.sleep(pause)

print("done orders=%d status=ok" % len(queue), flush=True)
