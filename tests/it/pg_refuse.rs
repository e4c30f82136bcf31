//! Bad input on a PostgreSQL warehouse, refused in one line with exit 2 before anything is
//! made: a server that accepts connections and says nothing (bounded, never a hang), and a
//! private cluster that cannot start (no server programs, an initdb or a postmaster that fails,
//! a temporary folder it cannot use). Wrong credentials, an unreachable address and a schema
//! holding someone's `records` are refused on a real server in `pg_warehouse`; a server older
//! than 13 by the version check's unit test (no such server is installed here).
//!
//! None of these needs PostgreSQL installed: the failures are made here.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use crate::support::{Run, assert_one_line_error, run_within};
use crate::support::{cluster_folder, folder, processes_under};

/// Longer than reclaim's own bound on a connection (4 s) with room for a loaded machine: a
/// hang fails the test here.
const LIMIT: Duration = Duration::from_secs(10);

/// `reclaim run --strategy naive --items 5 --warehouse WAREHOUSE` in `dir` (its TMPDIR), with
/// `env` added.
fn run_on(dir: &Path, warehouse: &str, env: &[(&str, &Path)]) -> Run {
    let mut command = crate::support::reclaim_command();
    command
        .args(["run", "--strategy", "naive", "--items", "5"])
        .args(["--warehouse", warehouse])
        .env("TMPDIR", dir)
        .current_dir(dir);
    for (key, value) in env {
        command.env(key, value);
    }
    run_within(command, &format!("reclaim --warehouse {warehouse}"), LIMIT)
}

/// A script `name` in `dir`, executable by anyone (the cluster runs as `nobody` under root).
fn script(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap_or_else(|e| panic!("{e}"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("{e}"));
}

/// Nothing of a private cluster is left under `dir`: no folder, no process.
fn nothing_left(dir: &Path) {
    assert_eq!(cluster_folder(dir), None, "a cluster folder was left");
    assert!(
        processes_under(dir).is_empty(),
        "processes left: {:?}",
        processes_under(dir)
    );
}

#[test]
fn a_server_that_accepts_and_says_nothing_is_refused_within_the_bound() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener
        .local_addr()
        .unwrap_or_else(|e| panic!("{e}"))
        .port();
    // Accepts every connection and holds it open, answering nothing (as a stuck server or a
    // firewall that completes the handshake would).
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let dir = folder();
    let run = run_on(
        dir.path(),
        &format!("postgres://bob:secret@127.0.0.1:{port}/db"),
        &[],
    );
    assert_one_line_error(&run, "no answer within 4 s");
    assert!(!run.stderr.contains("secret"), "{}", run.stderr);
    // Nothing was made for the night: not a folder, not a file.
    let made: Vec<_> = std::fs::read_dir(dir.path())
        .map(|d| d.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(made.is_empty(), "{made:?}");
}

#[test]
fn a_private_cluster_that_cannot_start_says_why_in_one_line() {
    let dir = folder();
    let empty = folder();
    let run = run_on(dir.path(), "postgres", &[("RECLAIM_PG_BIN", empty.path())]);
    assert_one_line_error(&run, "holds no initdb and postgres");
    nothing_left(dir.path());

    let fake = folder();
    script(
        fake.path(),
        "initdb",
        "echo 'initdb: error: the fake initdb fails' >&2; exit 1",
    );
    script(fake.path(), "postgres", "exit 1");
    let run = run_on(dir.path(), "postgres", &[("RECLAIM_PG_BIN", fake.path())]);
    assert_one_line_error(&run, "initdb failed: initdb: error: the fake initdb fails");
    nothing_left(dir.path());

    // The postmaster that exits at once, as one whose socket or shared memory is taken does.
    script(fake.path(), "initdb", "mkdir \"$2\"");
    script(
        fake.path(),
        "postgres",
        "echo 'FATAL:  could not create lock file: Address already in use' >&2; exit 1",
    );
    let run = run_on(dir.path(), "postgres", &[("RECLAIM_PG_BIN", fake.path())]);
    assert_one_line_error(&run, "postgres exited at start");
    assert!(
        run.stderr.contains("Address already in use"),
        "{}",
        run.stderr
    );
    nothing_left(dir.path());

    let missing = dir.path().join("no-such-folder");
    let run = run_on(dir.path(), "postgres", &[("TMPDIR", &missing)]);
    assert_one_line_error(&run, "set TMPDIR to a folder reclaim can write");
    nothing_left(dir.path());

    if nix::unistd::Uid::effective().is_root() {
        // Run as root, the cluster runs as `nobody`, who cannot pass through a 0700 folder.
        let closed = dir.path().join("closed");
        std::fs::create_dir(&closed).unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700))
            .unwrap_or_else(|e| panic!("{e}"));
        let run = run_on(dir.path(), "postgres", &[("TMPDIR", &closed)]);
        assert_one_line_error(&run, "runs as `nobody`, which cannot enter");
        assert!(run.stderr.contains("set TMPDIR"), "{}", run.stderr);
        nothing_left(&closed);
    }
}
