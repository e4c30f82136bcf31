#!/usr/bin/env bash
# Measures the dashboard process's own CPU share and peak RSS over the default scenario's night.
#
# Runs `./target/release/reclaim` (the incident scenario, ~20 s of real time at scale 100) in a
# detached 120x40 tmux session, samples utime+stime from /proc/PID/stat, reads VmHWM from
# /proc/PID/status just before quitting with `q`. The workers are separate processes: their CPU
# is not in the dashboard's utime+stime (the reaped ones show up in cutime+cstime, printed for
# reference only).
#
# Usage: benches/dashboard-cpu.sh            (DURATION=20 SESSION=bench by default)
#        DURATION=night benches/dashboard-cpu.sh
#                                            (the whole night: sampled until the screen says the
#                                            night is over, at most 300 s)
#        ARGS="tui --scenario benches/million.toml" DURATION=60 benches/dashboard-cpu.sh
#                                            (the million-item night; ARGS go to reclaim as is)
#        BIN=/path/to/other/reclaim benches/dashboard-cpu.sh   (another build, not rebuilt)
set -euo pipefail

cd "$(dirname "$0")/.."

session="${SESSION:-bench}"
duration="${DURATION:-20}"
bin="${BIN:-./target/release/reclaim}"
args="${ARGS:-}"
what="${ARGS:-default scenario (incident)}"

if [[ -z "${BIN:-}" ]]; then
    cargo build --release --quiet
fi

if tmux has-session -t "$session" 2>/dev/null; then
    echo "dashboard-cpu: a tmux session named '$session' already exists; set SESSION=other" >&2
    exit 2
fi

cleanup() {
    # Only the session this script created, and only if it is still there.
    if tmux has-session -t "$session" 2>/dev/null; then
        tmux kill-session -t "$session"
    fi
}
trap cleanup EXIT

tmux new -d -s "$session" -x 120 -y 40 "$bin $args"

# tmux runs the command through a shell, which usually execs it; find the dashboard either way,
# by the binary's own name as the kernel keeps it (its first 15 bytes): a build copied under
# another name (BIN=/tmp/old-reclaim) is not called `reclaim`.
comm=$(basename "$bin" | cut -c1-15)
pid=""
for _ in $(seq 100); do
    pane_pid=$(tmux list-panes -t "$session" -F '#{pane_pid}' | head -n 1)
    if [[ "$(cat "/proc/$pane_pid/comm" 2>/dev/null)" == "$comm" ]]; then
        pid=$pane_pid
    else
        pid=$(pgrep -P "$pane_pid" -x "$comm" | head -n 1 || true)
    fi
    [[ -n "$pid" ]] && break
    sleep 0.1
done
if [[ -z "$pid" ]]; then
    echo "dashboard-cpu: the dashboard did not start in tmux session '$session'" >&2
    exit 2
fi

clk=$(getconf CLK_TCK)

# Fields of /proc/PID/stat after "pid (comm) ": $12 utime, $13 stime, $14 cutime, $15 cstime,
# $20 starttime (all in clock ticks).
stat_fields() {
    local stat
    stat=$(<"/proc/$pid/stat")
    echo "${stat##*) }"
}
own_ticks() { stat_fields | awk '{ print $12 + $13 }'; }
child_ticks() { stat_fields | awk '{ print $14 + $15 }'; }
now() { date +%s.%N; }

t0=$(now)
ticks0=$(own_ticks)
per_second=()
prev=$ticks0
seconds=$duration
[[ "$duration" == night ]] && seconds=300
for _ in $(seq "$seconds"); do
    sleep 1
    cur=$(own_ticks)
    per_second+=("$(awk -v d=$((cur - prev)) -v c="$clk" 'BEGIN { printf "%.1f", 100 * d / c }')")
    prev=$cur
    if [[ "$duration" == night ]] && tmux capture-pane -p -t "$session" | grep -q "the night is over"; then
        break
    fi
done
t1=$(now)
ticks1=$(own_ticks)

hwm=$(awk '/^VmHWM:/ { print $2, $3 }' "/proc/$pid/status")
rss=$(awk '/^VmRSS:/ { print $2, $3 }' "/proc/$pid/status")
workers=$(child_ticks)
start_ticks=$(stat_fields | awk '{ print $20 }')
uptime=$(awk '{ print $1 }' /proc/uptime)
header=$(tmux capture-pane -p -t "$session" | head -n 1 | sed 's/[[:space:]]*$//')

tmux send-keys -t "$session" q
for _ in $(seq 100); do
    [[ -d "/proc/$pid" ]] || break
    sleep 0.1
done
if [[ -d "/proc/$pid" ]]; then
    echo "dashboard-cpu: the dashboard (pid $pid) did not quit on 'q' within 10 s" >&2
    exit 1
fi

awk -v t0="$t0" -v t1="$t1" -v a="$ticks0" -v b="$ticks1" -v c="$clk" \
    -v whole="$ticks1" -v start="$start_ticks" -v up="$uptime" -v w="$workers" \
    -v hwm="$hwm" -v rss="$rss" -v per="${per_second[*]}" -v header="$header" -v pid="$pid" -v what="$what" '
BEGIN {
    wall = t1 - t0
    cpu = (b - a) / c
    n = split(per, s, " ")
    peak = 0
    for (i = 1; i <= n; i++) if (s[i] + 0 > peak) peak = s[i] + 0
    life = up - start / c
    printf "dashboard pid %s, 120x40, %s\n", pid, what
    printf "screen at the end of sampling: %s\n", header
    printf "sampled over             %.1f s wall\n", wall
    printf "dashboard CPU            %.2f s (utime+stime)  = %.2f%% of one core\n", cpu, 100 * cpu / wall
    printf "busiest second           %.1f%% of one core\n", peak
    printf "per second (%% of a core) %s\n", per
    printf "whole life incl. startup %.2f s CPU over %.1f s = %.2f%% of one core\n", whole / c, life, 100 * (whole / c) / life
    printf "peak RSS (VmHWM)         %s (VmRSS now %s)\n", hwm, rss
    printf "reaped workers, for reference (cutime+cstime, not included above): %.2f s\n", w / c
}'
