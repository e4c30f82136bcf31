//! Files reclaim creates where others can write: a planted link is never followed, a planted
//! FIFO never waited on, and a file that is not reclaim's is never replaced.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{tempdir, write};
use crate::support::{Run, assert_one_line_error, path_arg, reclaim_within};

const LIMIT: Duration = Duration::from_secs(30);

fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link)
        .unwrap_or_else(|e| panic!("cannot link {}: {e}", link.display()));
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU)
        .unwrap_or_else(|e| panic!("cannot make a FIFO {}: {e}", path.display()));
}

/// A gated worker (it writes nothing until granted), so its pid is known before its first
/// heartbeat: `plant` puts something at `DB.heartbeat.PID.tmp`, then the worker is granted its
/// three items and must finish within `LIMIT`.
fn worker_with_planted_temp(dir: &Path, plant: impl FnOnce(&Path)) -> Run {
    let db = dir.join("w.db");
    let mut child = crate::support::reclaim_command()
        .args([
            "worker",
            "--strategy",
            "guarded",
            "--db",
            path_arg(&db),
            "--items",
            "3",
            "--delay-ms",
            "0",
            "--supervised",
            "--gated",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    plant(&dir.join(format!("w.db.heartbeat.{}.tmp", child.id())));
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"grant 3\n");
    }
    let deadline = Instant::now() + LIMIT;
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the worker hung on its heartbeat's temporary file");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    Run::from_output("worker", &output)
}

#[test]
fn a_link_planted_at_the_heartbeats_temp_file_is_not_followed() {
    let tmp = tempdir();
    let victim = tmp.path().join("victim3.txt");
    write(&victim, "precious\n");
    let run = worker_with_planted_temp(tmp.path(), |temp| symlink(&victim, temp));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        fs::read_to_string(&victim).unwrap_or_default(),
        "precious\n"
    );
    assert!(
        run.stderr.contains("heartbeat"),
        "said once: {}",
        run.stderr
    );
}

#[test]
fn a_fifo_planted_at_the_heartbeats_temp_file_does_not_hang_the_worker() {
    let tmp = tempdir();
    let run = worker_with_planted_temp(tmp.path(), mkfifo);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

#[test]
fn heartbeat_refuses_a_file_that_is_not_a_heartbeat() {
    let tmp = tempdir();
    let other = tmp.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&other).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(
            "CREATE TABLE records(task_id TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL \
             SELECT i+1 FROM n WHERE i<200) INSERT INTO records SELECT 'task-'||i FROM n;",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let before = fs::read(&other).unwrap_or_default();
    let notes = tmp.path().join("notes.txt");
    write(&notes, "my notes\n");
    for target in [&other, &notes] {
        let run = reclaim_within(
            &[
                "worker",
                "--strategy",
                "guarded",
                "--db",
                path_arg(&tmp.path().join("new.db")),
                "--items",
                "3",
                "--delay-ms",
                "0",
                "--heartbeat",
                path_arg(target),
            ],
            &[],
            LIMIT,
        );
        assert_one_line_error(&run, "is not a heartbeat file");
    }
    assert_eq!(fs::read(&other).unwrap_or_default(), before);
    assert_eq!(fs::read_to_string(&notes).unwrap_or_default(), "my notes\n");
    // A heartbeat a worker wrote before is still replaced.
    let run = reclaim_within(
        &[
            "worker",
            "--strategy",
            "guarded",
            "--db",
            path_arg(&tmp.path().join("again.db")),
            "--items",
            "3",
            "--delay-ms",
            "0",
            "--heartbeat",
            path_arg(&tmp.path().join("new.db.heartbeat")),
        ],
        &[],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
}

/// The next `n` process ids this machine will probably hand out.
fn next_pids(n: i32) -> Vec<i32> {
    let last: i32 = fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    (last + 1..=last + n).collect()
}

#[test]
fn links_planted_in_dev_shm_at_the_maps_probe_are_not_followed() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let tmp = tempdir();
    let victim = tmp.path().join("victim.txt");
    write(&victim, "precious\n");
    // The old probe was `/dev/shm/.reclaim-probe-PID`: links for the pids map will likely get.
    let planted: Vec<PathBuf> = next_pids(400)
        .into_iter()
        .map(|pid| shm.join(format!(".reclaim-probe-{pid}")))
        .filter(|link| std::os::unix::fs::symlink(&victim, link).is_ok())
        .collect();
    let mut command = crate::support::reclaim_command();
    command
        .args([
            "map",
            "--strategy",
            "guarded",
            "--items",
            "3",
            "--points",
            "after-commit",
            "--plain",
        ])
        .env_remove("TMPDIR")
        .stdin(Stdio::null());
    let output = command.output().unwrap_or_else(|e| panic!("{e}"));
    for link in &planted {
        let _ = fs::remove_file(link);
    }
    let run = Run::from_output("map", &output);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(
        fs::read_to_string(&victim).unwrap_or_default(),
        "precious\n"
    );
}
