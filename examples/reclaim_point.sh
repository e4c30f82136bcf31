# reclaim's crash points for your own shell job: source this file, then call
#   reclaim_point NAME KEY
# where a kill would matter (after a commit, after a send). Under reclaim it prints
# `reclaim-point NAME KEY` on stdout, which reclaim counts; when reclaim planned a crash right
# there (--crash-at KEY:NAME, in RECLAIM_CRASH_AT on that attempt only) it waits, and reclaim
# SIGKILLs the job at that exact point, from outside. Outside reclaim it does nothing.
reclaim_point() {
    [ -n "${RECLAIM_DB:-}" ] || return 0
    printf 'reclaim-point %s %s\n' "$1" "$2"
    if [ "${RECLAIM_CRASH_AT:-}" = "$2:$1" ]; then
        # reclaim kills the job within milliseconds of reading the line; still here after a
        # minute, it was not heard (stdout not reaching reclaim): stop rather than hang.
        sleep 60
        echo "reclaim_point: not killed at $2:$1 after 60 s; is stdout reaching reclaim?" >&2
        exit 70
    fi
}
