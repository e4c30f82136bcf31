//! A job's descendants that leave its process group (`setsid`, a double fork) or re-fork
//! forever die with it: on its normal end, under the host's kills, and when reclaim is stopped
//! or SIGKILLed; held by a cgroup where the machine offers one, and by the subreaper without.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::tempdir;
use crate::support::{cmdline, path_arg, process_gone};

const LIMIT: Duration = Duration::from_secs(60);
const GRACE: Duration = Duration::from_secs(5);

/// A naive job that first starts two sleeps in sessions of their own: one by `setsid`, one by
/// `setsid` inside a subshell that exits at once (a double fork: its parent is gone).
fn escaping_job() -> String {
    format!(
        "setsid sleep 313 & (setsid sleep 314 &); {py} {}/examples/naive_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    )
}

/// Live processes whose working folder is under `dir` (the job's, and only the job's).
fn job_processes(dir: &Path) -> BTreeSet<i32> {
    let Ok(real) = fs::canonicalize(dir) else {
        return BTreeSet::new();
    };
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            !process_gone(pid)
                && fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&real))
        })
        .collect()
}

fn sleeps(dir: &Path) -> Vec<i32> {
    job_processes(dir)
        .into_iter()
        .filter(|&p| cmdline(p).first().is_some_and(|a| a == "sleep"))
        .collect()
}

fn start(dir: &Path, extra: &[&str]) -> (Child, PathBuf) {
    start_job(dir, &escaping_job(), extra, "on")
}

/// Starts `run --exec job` in `dir/night`, with `RECLAIM_CGROUP=cgroup`.
fn start_job(dir: &Path, job: &str, extra: &[&str], cgroup: &str) -> (Child, PathBuf) {
    let night = dir.join("night");
    fs::create_dir_all(&night).unwrap_or_else(|e| panic!("{e}"));
    let child = crate::support::reclaim_command()
        .env("RECLAIM_CGROUP", cgroup)
        .args(["run", "--exec", job, "--db"])
        .arg(path_arg(&night.join("warehouse.db")))
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start reclaim: {e}"));
    (child, night)
}

fn wait_for_both_sleeps(night: &Path) {
    let deadline = Instant::now() + LIMIT;
    while sleeps(night).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the job never started its sleeps"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child) -> Instant {
    let deadline = Instant::now() + LIMIT;
    while child.try_wait().ok().flatten().is_none() {
        assert!(Instant::now() < deadline, "reclaim never exited");
        std::thread::sleep(Duration::from_millis(20));
    }
    Instant::now()
}

/// Reads of `/proc` in a row that must find none before none is said to be left: one read is
/// not one moment, and a fork loop's generation that exits between the listing and its own line
/// takes with it the only trace of the next (a walker read as gone once outlived the test and
/// forked for hours). Its log (`WALK_LOG`) must not grow over them either.
const EMPTY_READS: usize = 60;

/// What the walker (`WALKER`) writes in its folder: its process group once it has one, then a
/// byte for every generation. The log says a walker lives where `/proc` cannot: a generation
/// lives about a millisecond, often less than a read of `/proc` takes to reach it.
const WALK_GROUP: &str = "walk.group";
const WALK_LOG: &str = "walk.log";

/// The size of the walker's log in `night` (0 when there is none).
fn walked(night: &Path) -> u64 {
    fs::metadata(night.join(WALK_LOG)).map_or(0, |m| m.len())
}

/// One look at `night`: the job's processes `/proc` shows, and whether the walker's log grew
/// since the last look (its size then in `log`, updated).
fn look(night: &Path, log: &mut u64) -> (BTreeSet<i32>, bool) {
    let left = job_processes(night);
    let now = walked(night);
    let grew = now != *log;
    *log = now;
    (left, grew)
}

fn assert_none_left(night: &Path, exited: Instant, what: &str) {
    let mut empty = 0;
    let mut log = walked(night);
    loop {
        let (left, grew) = look(night, &mut log);
        if left.is_empty() && !grew {
            empty += 1;
            if empty == EMPTY_READS {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        empty = 0;
        if Instant::now() > exited + GRACE {
            let names: Vec<Vec<String>> = left.iter().map(|&p| cmdline(p)).collect();
            end_left(night);
            panic!(
                "{what}: {names:?} outlived reclaim by {GRACE:?} (walker's log growing: {grew})"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends what a failed test found left, so that a fork loop does not outlive the test either:
/// the walker's process group and each found one's killed at once (a group's signal and a fork
/// in it cannot cross), then each one stopped and killed, read again until reads in a row find
/// none and the walker's log stays still.
fn end_left(night: &Path) {
    let ours = nix::unistd::getpgrp();
    let walker = (fs::read_to_string(night.join(WALK_GROUP)).ok())
        .and_then(|text| text.trim().parse::<i32>().ok())
        .filter(|&group| group > 1)
        .map(Pid::from_raw)
        .filter(|&group| group != ours);
    let cleanup = Instant::now() + GRACE;
    let mut empty = 0;
    let mut log = walked(night);
    while Instant::now() < cleanup && empty < EMPTY_READS {
        if let Some(group) = walker {
            let _ = nix::sys::signal::killpg(group, Signal::SIGKILL);
        }
        let (left, grew) = look(night, &mut log);
        if left.is_empty() && !grew {
            empty += 1;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        }
        empty = 0;
        for &pid in &left {
            let pid = Pid::from_raw(pid);
            if let Ok(group) = nix::unistd::getpgid(Some(pid))
                && group != ours
            {
                let _ = nix::sys::signal::killpg(group, Signal::SIGKILL);
            }
            for signal in [Signal::SIGSTOP, Signal::SIGKILL] {
                let _ = kill(pid, signal);
            }
        }
    }
}

#[test]
fn descendants_in_sessions_of_their_own_die_when_the_job_ends_or_is_killed() {
    let tmp = tempdir();
    for (name, extra) in [
        ("ends", vec![]),
        ("killed", vec!["--kills", "2", "--seed", "5"]),
    ] {
        let dir = tmp.path().join(name);
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        let (mut child, night) = start(&dir, &extra);
        wait_for_both_sleeps(&night);
        let exited = wait_exit(&mut child);
        assert_none_left(&night, exited, name);
    }
}

#[test]
fn descendants_in_sessions_of_their_own_die_when_reclaim_is_stopped_or_killed() {
    let tmp = tempdir();
    for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGKILL] {
        let dir = tmp.path().join(signal.as_str());
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        let (mut child, night) = start(&dir, &["--delay-ms", "200"]);
        wait_for_both_sleeps(&night);
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        kill(pid, signal).unwrap_or_else(|e| panic!("{e}"));
        let exited = wait_exit(&mut child);
        assert_none_left(&night, exited, signal.as_str());
    }
}

/// A descendant that re-forks forever: in a session of its own (made once, so every generation
/// shares its group), each generation forks the next and exits, so its pid never stays the
/// same for more than a millisecond or so. It writes `WALK_GROUP` once and a byte to `WALK_LOG`
/// in each generation.
const WALKER: &str = "import os, time
os.setsid()
with open('walk.group', 'w') as group:
    group.write(str(os.getpgrp()))
log = os.open('walk.log', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
while True:
    os.write(log, b'.')
    time.sleep(0.001)
    if os.fork() > 0:
        os._exit(0)
";

/// Runs a job that starts `WALKER` under each way out (its end, SIGTERM, SIGINT and SIGKILL of
/// reclaim), with the cgroup `on` or `off`: no generation of it may outlive reclaim.
fn a_fork_loop_dies_on_every_way_out(cgroup: &str) {
    let tmp = tempdir();
    let naive = format!(
        "{py} {}/examples/naive_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    );
    for signal in [
        None,
        Some(Signal::SIGTERM),
        Some(Signal::SIGINT),
        Some(Signal::SIGKILL),
    ] {
        let name = signal.map_or("ends", Signal::as_str);
        let dir = tmp.path().join(name);
        fs::create_dir_all(dir.join("night")).unwrap_or_else(|e| panic!("{e}"));
        super::write(&dir.join("night").join("walk.py"), WALKER);
        let delay = if signal.is_some() { "200" } else { "0" };
        let (mut child, night) = start_job(
            &dir,
            // The job waits (up to about 30 s) for the walker's first byte before its own
            // work, so the walker is alive while reclaim is, however loaded the machine: on a
            // quick night's end, reclaim once killed it before it had started.
            &format!(
                "{} walk.py & i=0; while [ ! -s {WALK_LOG} ] && [ $i -lt 3000 ]; do sleep 0.01; \
                 i=$((i+1)); done; {naive}",
                crate::support::python3()
            ),
            &["--delay-ms", delay, "--items", "20"],
            cgroup,
        );
        let deadline = Instant::now() + LIMIT;
        // Walking once its first generation has written to its log.
        while walked(&night) == 0 {
            if Instant::now() > deadline {
                end_left(&night);
                panic!("{name}: the walker never started");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(signal) = signal {
            let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
            kill(pid, signal).unwrap_or_else(|e| panic!("{e}"));
        }
        let exited = wait_exit(&mut child);
        assert_none_left(&night, exited, &format!("RECLAIM_CGROUP={cgroup}, {name}"));
    }
}

#[test]
fn a_fork_loop_dies_on_every_way_out_in_a_cgroup_where_one_is_offered() {
    a_fork_loop_dies_on_every_way_out("on");
}

#[test]
fn a_fork_loop_dies_on_every_way_out_under_the_subreaper_alone() {
    a_fork_loop_dies_on_every_way_out("off");
}
