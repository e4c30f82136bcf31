//! Nothing of the private cluster outlives reclaim, however it ends: reclaim's SIGTERM and
//! SIGINT, a SIGKILL of its whole process group (a CI's cancel), a SIGKILL of the cluster's
//! guard mid-night, Ctrl-C while the cluster starts. And the cluster asks for its password:
//! a connection without it is refused (as `nobody` too, when the tests run as root).
//!
//! These tests need PostgreSQL's server programs (`support::pg_bin`; where they are missing the tests are ignored, with the reason).

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

use crate::support::{cluster_folder, folder, poll_until, processes_under};

/// How a test ends reclaim's night.
#[derive(Debug, Clone, Copy)]
enum End {
    /// A signal to reclaim alone.
    Signal(Signal),
    /// SIGKILL to reclaim's whole process group.
    GroupKill,
    /// SIGKILL to the cluster's guard, then SIGTERM to reclaim.
    GuardKill,
}

/// A night of many items on a private cluster, in `dir`, in a process group of its own.
fn long_night(dir: &Path) -> std::process::Child {
    crate::support::reclaim_command()
        .args([
            "run",
            "--strategy",
            "naive",
            "--items",
            "100000",
            "--delay-ms",
            "5",
            "--warehouse",
            "postgres",
        ])
        .env("TMPDIR", dir)
        .current_dir(dir)
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn pid_of(child: &std::process::Child) -> Pid {
    Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX))
}

/// The guard's pid (`reclaim pg-cluster --dir CLUSTER`), if it runs.
fn guard_of(cluster: &Path) -> Option<Pid> {
    processes_under(cluster)
        .into_iter()
        .find(|(_, line)| line.contains(" pg-cluster "))
        .map(|(pid, _)| Pid::from_raw(pid))
}

/// No folder and no process of the cluster left in `dir` (waited for, bounded).
fn assert_nothing_left(dir: &Path, cluster: &Path, what: &str) {
    let gone = poll_until(Duration::from_secs(30), || {
        !cluster.exists() && processes_under(dir).is_empty()
    });
    assert!(
        gone,
        "after {what}: folder there: {}, processes: {:?}",
        cluster.exists(),
        processes_under(dir)
    );
}

fn ends_with_nothing_left(end: End) {
    let dir = folder();
    let mut child = long_night(dir.path());
    // Up once a worker is writing into it: its backend names the cluster's socket folder.
    let up = poll_until(Duration::from_secs(90), || {
        cluster_folder(dir.path()).is_some_and(|c| {
            c.join("data").join("postmaster.pid").exists()
                && processes_under(dir.path())
                    .iter()
                    .any(|(_, line)| line.contains(" worker "))
        })
    });
    if !up {
        let running = processes_under(dir.path());
        let ended = child.try_wait().ok().flatten();
        let _ = killpg(pid_of(&child), Signal::SIGKILL);
        let _ = child.wait();
        let mut said = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut err, &mut said);
        }
        panic!("the cluster did not come up: {running:?}, reclaim ended: {ended:?}\n{said}");
    }
    let cluster = cluster_folder(dir.path()).unwrap_or_default();
    match end {
        End::Signal(signal) => kill(pid_of(&child), signal).unwrap_or_else(|e| panic!("{e}")),
        End::GroupKill => {
            killpg(pid_of(&child), Signal::SIGKILL).unwrap_or_else(|e| panic!("{e}"));
        }
        End::GuardKill => {
            let guard = guard_of(&cluster).unwrap_or_else(|| panic!("no guard"));
            kill(guard, Signal::SIGKILL).unwrap_or_else(|e| panic!("{e}"));
            // The server goes with its guard, while reclaim still runs.
            let server_gone = poll_until(Duration::from_secs(30), || {
                processes_under(&cluster).is_empty()
            });
            assert!(
                server_gone,
                "the server outlived its guard: {:?}",
                processes_under(&cluster)
            );
            kill(pid_of(&child), Signal::SIGTERM).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    let _ = child.wait();
    assert_nothing_left(dir.path(), &cluster, &format!("{end:?}"));
}

/// However reclaim ends (SIGTERM, SIGINT as Ctrl-C sends it to a headless run, SIGKILL of its
/// whole process group, which it cannot catch), and when its cluster's guard is SIGKILLed, the
/// private cluster's processes end and its folder is removed (the dashboard's q and Ctrl-C:
/// `pg_scenario`; the leftovers of a reclaim killed with its guard: `cluster::sweep_leftovers`).
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn the_private_cluster_dies_with_reclaim() {
    // Side by side, each night in a folder of its own: each mostly waits for its cluster.
    std::thread::scope(|scope| {
        let nights = [
            End::GroupKill,
            End::Signal(Signal::SIGTERM),
            End::Signal(Signal::SIGINT),
            End::GuardKill,
        ]
        .map(|end| scope.spawn(move || ends_with_nothing_left(end)));
        let at_start = scope.spawn(ctrl_c_while_it_starts);
        for night in nights.into_iter().chain([at_start]) {
            night
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
        }
    });
}

/// Ctrl-C (SIGINT to the foreground group) while the cluster starts: one line, exit 2,
/// nothing left.
fn ctrl_c_while_it_starts() {
    let dir = folder();
    let mut child = long_night(dir.path());
    let starting = poll_until(Duration::from_secs(60), || {
        cluster_folder(dir.path()).is_some_and(|c| guard_of(&c).is_some())
    });
    let cluster = cluster_folder(dir.path()).unwrap_or_default();
    let ready = cluster.join("data").join("postmaster.pid");
    let _ = killpg(pid_of(&child), Signal::SIGINT);
    let output = {
        let _ = child.wait();
        let mut text = String::new();
        if let Some(mut err) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut err, &mut text);
        }
        text
    };
    assert!(starting, "the cluster never began to start");
    assert_nothing_left(dir.path(), &cluster, "Ctrl-C while it started");
    // Said in one line, if the signal did come while it started (on a fast machine the server
    // may already be up: the night's own end says it then).
    if !ready.exists() && output.contains("while it started") {
        assert_eq!(output.trim_end().lines().count(), 1, "{output}");
        assert!(output.contains("stopped by SIGINT"), "{output}");
    }
}
