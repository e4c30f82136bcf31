#!/usr/bin/env python3
"""The floor under a kill storm on this machine: how many times a second a process can be
started (fork+exec), SIGKILLed and reaped, with nothing else done. A trivial program first
(`/bin/sleep`), then reclaim's own binary (its loader and runtime start-up included).

Usage: benches/kill-floor.py [SECONDS] [RECLAIM_BINARY]
"""
import os
import signal
import subprocess
import sys
import time

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
reclaim = sys.argv[2] if len(sys.argv) > 2 else "target/release/reclaim"


def loop(argv, wait_line):
    """Starts argv, (optionally) waits for its first line of output, SIGKILLs it, reaps it;
    as many times as fit in `seconds`. Returns (cycles, wall seconds)."""
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        if wait_line:
            p.stdout.readline()
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stdout.close()
        n += 1
    return n, time.monotonic() - t0


for name, argv, wait_line in [
    ("fork+exec+SIGKILL of /bin/sleep (killed as soon as started)", ["/bin/sleep", "60"], False),
    ("fork+exec of /bin/echo, SIGKILL after its first line", ["/bin/echo", "x"], True),
    ("... of reclaim, after its first output line (--version)", [reclaim, "--version"], True),
]:
    n, wall = loop(argv, wait_line)
    print(f"{name}: {n} in {wall:.1f} s = {n / wall:.0f} a second")
