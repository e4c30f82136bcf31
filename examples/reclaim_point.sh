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
        while :; do sleep 60; done
    fi
}
