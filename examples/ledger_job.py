#!/usr/bin/env python3
"""A job that moves money: each transfer of its queue (`tr-0000`, `tr-0001`, ...) takes an
amount from one account and adds it to another, `UPDATE accounts SET balance = balance + ?`,
and records the transfer in `applied(transfer_id, applied_at)`. A rerun of a transfer leaves no
new row anywhere, only a wrong balance: the one-row-per-key rule cannot see it, the
comparison with the undisturbed night can.

  reclaim run --exec "python3 $PWD/examples/ledger_job.py" --table applied \
      --key transfer_id --key-format 'tr-%04d' --items 40 --kills 1 --compare \
      --ignore-column applied.applied_at

LEDGER_MODE picks how it is written:
  naive  (default) the balances commit, then the job confirms the transfer (RECLAIM_DELAY_MS),
         then records it as applied in a second transaction: a kill between the two applies
         the transfer again after the restart
  safe   the record in `applied` (its transfer_id the primary key) and the balances commit in
         one transaction: a transfer is applied once, whatever is killed when

It announces its crash points through examples/reclaim_point.py: `after-balance-commit` (naive
only, between its two commits) and `after-commit`, so `--crash-at tr-0005:after-balance-commit`
kills it exactly there, and `map --exec` at each.

`applied_at` is the moment the transfer was applied (the clock's, so it differs from night to
night): `--compare` says so until `--ignore-column applied.applied_at` names it.

Standard library only.
"""
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reclaim_point import point  # noqa: E402  (the helper beside this file)

mode = os.environ.get("LEDGER_MODE", "naive")
pause = float(os.environ.get("RECLAIM_DELAY_MS", "10")) / 1000.0
ACCOUNTS = 8

keys_file = os.environ.get("RECLAIM_KEYS_FILE")
if keys_file:
    with open(keys_file) as f:
        queue = [line.rstrip("\n") for line in f if line.strip()]
else:
    queue = ["tr-%04d" % n for n in range(int(os.environ.get("RECLAIM_ITEMS", "200")))]

db = sqlite3.connect(os.environ.get("RECLAIM_DB", "ledger.db"), timeout=30, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("BEGIN IMMEDIATE")
db.execute("CREATE TABLE IF NOT EXISTS accounts(id TEXT PRIMARY KEY, balance INTEGER NOT NULL)")
db.execute("CREATE TABLE IF NOT EXISTS applied(transfer_id TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
for a in range(ACCOUNTS):
    db.execute("INSERT OR IGNORE INTO accounts(id, balance) VALUES (?, 1000)", ("acct-%d" % a,))
db.execute("COMMIT")

NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')"


def move(n):
    """The transfer's accounts and amount, from its place in the queue."""
    src = n % ACCOUNTS
    dst = (n * 3 + 1) % ACCOUNTS
    if dst == src:
        dst = (src + 1) % ACCOUNTS
    return "acct-%d" % src, "acct-%d" % dst, 10 + n % 13


def post(src, dst, amount):
    db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, src))
    db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, dst))


done = {row[0] for row in db.execute("SELECT transfer_id FROM applied")}
applied = 0
for n, transfer in enumerate(queue):
    if transfer in done:
        continue
    src, dst, amount = move(n)
    if mode == "safe":
        time.sleep(pause)  # fetching the transfer
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"INSERT INTO applied(transfer_id, applied_at) VALUES (?, {NOW})", (transfer,))
        except sqlite3.IntegrityError:
            db.execute("ROLLBACK")  # applied already: nothing to do
            continue
        post(src, dst, amount)
        db.execute("COMMIT")
    else:
        db.execute("BEGIN IMMEDIATE")
        post(src, dst, amount)
        db.execute("COMMIT")
        point("after-balance-commit", transfer)
        time.sleep(pause)  # confirming the transfer with the bank
        db.execute(f"INSERT INTO applied(transfer_id, applied_at) VALUES (?, {NOW})", (transfer,))
    point("after-commit", transfer)
    applied += 1

print(f"done transfers={applied} status=ok", flush=True)
