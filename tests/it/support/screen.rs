//! The dashboard as the tests see it: the terminal's size, how long it may take, its clock and
//! lanes on screen, its workers (and that none is left), and the terminal given back.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use nix::unistd::Pid;

use super::pty::Dashboard;
use super::{assert_one_line_error, cmdline, reclaim_within};

/// The terminal most tests run in: large enough for two lanes side by side.
pub(crate) const COLS: u16 = 100;
pub(crate) const ROWS: u16 = 30;
/// How long the dashboard may take to show its first workers (a debug build, two cores shared).
pub(crate) const STARTUP: Duration = Duration::from_secs(15);
/// "Exit promptly": from the key or signal to the process gone.
pub(crate) const PROMPTLY: Duration = Duration::from_secs(3);
/// How long after reclaim's exit a worker may still be alive.
pub(crate) const ORPHAN_GRACE: Duration = Duration::from_secs(1);
/// How often the screen is looked at while waiting.
pub(crate) const POLL: Duration = Duration::from_millis(25);

/// Waits until every lane shows a running worker; returns the lanes' pids.
pub(crate) fn wait_for_workers(
    dashboard: &mut Dashboard,
    lanes: usize,
) -> Result<Vec<Vec<u32>>, String> {
    let mut pids = Vec::new();
    dashboard.wait_for(
        "a running pid in every lane",
        Instant::now() + STARTUP,
        |screen| {
            pids = (0..lanes)
                .map(|lane| lane_pids(screen, lane, lanes))
                .collect();
            pids.iter().all(|p: &Vec<u32>| !p.is_empty())
        },
    )?;
    Ok(pids)
}

/// Keeps reading every lane's worker pids for `window`, to collect all of them.
pub(crate) fn collect_pids(
    dashboard: &mut Dashboard,
    lanes: usize,
    window: Duration,
) -> Result<BTreeSet<u32>, String> {
    let mut seen = BTreeSet::new();
    for pids in wait_for_workers(dashboard, lanes)? {
        seen.extend(pids);
    }
    let until = Instant::now() + window;
    while Instant::now() < until {
        if dashboard.poll_exit()?.is_some() {
            return Err(format!(
                "reclaim exited while its workers were being read:\n{}",
                dashboard.text()
            ));
        }
        dashboard.with_screen(|screen| {
            for lane in 0..lanes {
                seen.extend(lane_pids(screen, lane, lanes));
            }
        });
        thread::sleep(POLL);
    }
    Ok(seen)
}

/// The text of lane `lane`'s panel, `lanes` panels side by side.
pub(crate) fn lane_text(screen: &vt100::Screen, lane: usize, lanes: usize) -> String {
    let (_, cols) = screen.size();
    let cols = usize::from(cols.get());
    let width = cols / lanes.max(1);
    let start = u16::try_from(width * lane).unwrap_or(u16::MAX);
    let width = u16::try_from(width).unwrap_or(u16::MAX);
    screen.rows(start, width).collect::<Vec<_>>().join("\n")
}

/// The worker pids a lane shows: `running pid 1234` (or `1234,1240` for several workers), or
/// `starting at 02:00:03, pid 1234` before its start on the clock.
pub(crate) fn lane_pids(screen: &vt100::Screen, lane: usize, lanes: usize) -> Vec<u32> {
    running_pids(&lane_text(screen, lane, lanes))
}

pub(crate) fn running_pids(text: &str) -> Vec<u32> {
    let running = text.match_indices("running pid ").map(|(at, _)| at + 12);
    // `starting at HH:MM:SS, pid `: the clock is 8 characters.
    let starting = (text
        .match_indices("starting at ")
        .map(|(at, _)| at + 12 + 8))
    .filter(|&at| text.get(at..).is_some_and(|t| t.starts_with(", pid ")))
    .map(|at| at + 6);
    running
        .chain(starting)
        .flat_map(|at| {
            let list: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == ',')
                .collect();
            list.split(',')
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The dashboard's clock (the last `HH:MM:SS` of the header row; the title may hold another),
/// in seconds since midnight, and the header row itself.
pub(crate) fn header_clock(screen: &vt100::Screen) -> Option<(u32, String)> {
    let (_, cols) = screen.size();
    let header = screen.rows(0, cols.get()).next()?;
    let chars: Vec<char> = header.chars().collect();
    let clock = chars.windows(8).rev().find_map(parse_clock)?;
    Some((clock, header))
}

pub(crate) fn parse_clock(w: &[char]) -> Option<u32> {
    if w[2] != ':' || w[5] != ':' {
        return None;
    }
    let two = |at: usize| Some(w[at].to_digit(10)? * 10 + w[at + 1].to_digit(10)?);
    Some(two(0)? * 3600 + two(3)? * 60 + two(6)?)
}

/// `/proc/PID/stat`'s fields after the command name (which may hold spaces and parentheses).
pub(crate) fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Alive: the process exists, is not a zombie waiting to be reaped and has no SIGKILL pending
/// (`process_gone`).
pub(crate) fn alive(pid: u32) -> bool {
    i32::try_from(pid).is_ok_and(|pid| !super::process_gone(pid))
}

pub(crate) fn parent(pid: u32) -> Option<i32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// A live `reclaim worker` process: a pid read from a half-drawn frame, or reused by the system,
/// is never taken for one of ours.
pub(crate) fn alive_worker(pid: u32) -> bool {
    alive(pid) && cmdline(pid).get(1).is_some_and(|arg| arg == "worker")
}

/// A live worker whose parent is the dashboard `dashboard`.
pub(crate) fn worker_of(pid: u32, dashboard: Pid) -> bool {
    alive_worker(pid) && parent(pid) == Some(dashboard.as_raw())
}

/// The live processes whose parent is `pid`.
pub(crate) fn children(pid: Pid) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| alive(p) && parent(p) == Some(pid.as_raw()))
        .collect()
}

/// Fails when any of `pids` is still a live worker `ORPHAN_GRACE` after reclaim's exit.
pub(crate) fn assert_no_worker_left(pids: &BTreeSet<u32>) {
    let deadline = Instant::now() + ORPHAN_GRACE;
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|&p| alive_worker(p)).collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "workers {left:?} outlived the dashboard by {ORPHAN_GRACE:?}"
        );
        thread::sleep(POLL);
    }
}

/// The terminal as the user gets it back: main screen, cursor shown, no mouse reporting.
pub(crate) fn assert_terminal_restored(dashboard: &Dashboard) {
    dashboard.with_screen(assert_screen_restored);
}

pub(crate) fn assert_screen_restored(screen: &vt100::Screen) {
    let text = screen.contents();
    assert!(
        !screen.alternate_screen(),
        "still on the alternate screen:\n{text}"
    );
    assert!(!screen.hide_cursor(), "the cursor is still hidden:\n{text}");
    assert_eq!(
        screen.mouse_protocol_mode(),
        vt100::MouseProtocolMode::None,
        "the terminal still reports the mouse:\n{text}"
    );
}

/// The `tui-*` night folders the dashboard made in reclaim's home under `tmp`
/// (`TMPDIR/reclaim-UID`).
pub(crate) fn tui_dirs(tmp: &Path) -> Vec<PathBuf> {
    let home = tmp.join(format!("reclaim-{}", nix::unistd::geteuid()));
    fs::read_dir(home)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("tui-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn the_tui_dir(tmp: &Path) -> PathBuf {
    let mut dirs = tui_dirs(tmp);
    assert_eq!(dirs.len(), 1, "expected one tui-* night folder: {dirs:?}");
    dirs.remove(0)
}

pub(crate) const NAIVE_DB: &str = "night1-1-naive.db";
pub(crate) const GUARDED_DB: &str = "night1-2-guarded.db";

/// The night holds at its first caption (02:00:00) while it is read; `c` goes on at once.
pub(crate) fn past_the_first_caption(dashboard: &mut Dashboard) {
    dashboard
        .wait_for("the first caption", Instant::now() + STARTUP, |screen| {
            screen.contents().contains("02:00, the nightly job")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"c").unwrap_or_else(|e| panic!("{e}"));
}

/// `reclaim ARGS` is refused with one line naming `needle`, exit 2, before the terminal is
/// touched: in a pty (no alternate screen, ever) and with plain pipes.
pub(crate) fn assert_refused_before_the_terminal(args: &[&str], needle: &str) {
    let tmp = crate::support::tempdir();
    let mut dashboard = Dashboard::start(args, tmp.path(), COLS, ROWS)
        .unwrap_or_else(|e| panic!("cannot start reclaim {args:?}: {e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    let text = dashboard.text();
    assert_eq!(status.exit_code(), 2, "{status:?}:\n{text}");
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on the terminal:\n{text}");
    assert!(lines[0].contains(needle), "{needle:?} not named:\n{text}");
    assert!(
        !dashboard.entered_alternate_screen(),
        "reclaim {args:?} switched to the alternate screen before refusing"
    );
    assert_terminal_restored(&dashboard);
    assert_eq!(tui_dirs(tmp.path()), Vec::<PathBuf>::new(), "{args:?}");

    let run = reclaim_within(args, &[("TMPDIR", tmp.path())], Duration::from_secs(10));
    assert_one_line_error(&run, needle);
}
