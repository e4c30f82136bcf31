"""reclaim's crash points for your own Python job: a few lines, no library to install.

Call point(NAME, KEY) where a kill would matter (after a commit, after a send), with the key
of the unit of work at hand:

    from reclaim_point import point
    ...
    db.execute("COMMIT")
    point("after-row-commit", order_id)

Under reclaim it prints `reclaim-point NAME KEY` on stdout, which reclaim counts (so a run can
say where each kill landed). When reclaim planned a crash right there (`--crash-at KEY:NAME`, in
RECLAIM_CRASH_AT on that attempt only), it waits, and reclaim SIGKILLs the job at that exact
point, from outside, as the host would. Outside reclaim it does nothing.
"""
import os
import sys
import time

# reclaim kills the job within milliseconds of reading the line; a job still here after this
# long was not heard (its stdout does not reach reclaim), and stops rather than hang.
_WAIT_S = 60

_UNDER_RECLAIM = "RECLAIM_DB" in os.environ
_CRASH_AT = os.environ.get("RECLAIM_CRASH_AT")


def point(name, key):
    if not _UNDER_RECLAIM:
        return
    sys.stdout.write("reclaim-point %s %s\n" % (name, key))
    sys.stdout.flush()
    if _CRASH_AT == "%s:%s" % (key, name):
        time.sleep(_WAIT_S)  # reclaim's SIGKILL ends this; the job never goes past the point
        sys.stderr.write(
            "reclaim_point: not killed at %s:%s after %d s; is stdout reaching reclaim?\n"
            % (key, name, _WAIT_S)
        )
        sys.exit(70)
