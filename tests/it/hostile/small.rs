//! The smaller probes of the hostile pass: the vendor's files beside a new warehouse (or named
//! as the recording), a relay given what it cannot relay, an SVG's moment, a path with a line
//! break, a dropped table, a command too long for `sh -c`, an alert command that takes its
//! time, a hang no one will end, and numbers too long for an error line.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::{tempdir, write};
use crate::support::{assert_one_line_error, path_arg, reclaim_in_dir, snapshot};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn the_vendors_database_and_its_log_beside_a_new_warehouse_are_refused_and_left_alone() {
    for leftover in [
        "w.vendor.sqlite",
        "w.vendor.sqlite-wal",
        "w.vendor.sqlite-shm",
    ] {
        let tmp = tempdir();
        write(&tmp.path().join(leftover), "someone else's log");
        let before = snapshot(tmp.path());
        let run = reclaim_in_dir(
            tmp.path(),
            &[
                "run",
                "--strategy",
                "guarded",
                "--side-effect",
                "email",
                "--items",
                "5",
                "--db",
                "w.db",
            ],
            LIMIT,
        );
        assert_one_line_error(&run, leftover);
        assert_eq!(snapshot(tmp.path()), before, "{leftover} was touched");
    }
    // The vendor started by hand on a new database with a log beside it.
    let tmp = tempdir();
    write(&tmp.path().join("v.sqlite-wal"), "someone else's log");
    let before = snapshot(tmp.path());
    let vendor = reclaim_in_dir(tmp.path(), &["vendor", "--db", "v.sqlite"], LIMIT);
    assert_one_line_error(&vendor, "v.sqlite-wal already exists");
    assert_eq!(snapshot(tmp.path()), before);
}

/// A guarded warehouse of 5 rows with nothing beside it (its log folded in and removed).
fn quiet_warehouse(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("w.db");
    let run = reclaim_in_dir(
        dir,
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "5",
            "--db",
            "w.db",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // The log folded in; the last connection to close then removes the -wal and -shm.
    let conn = rusqlite::Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let _ = fs::remove_file(dir.join("w.db.heartbeat"));
    for suffix in ["-wal", "-shm"] {
        assert!(!dir.join(format!("w.db{suffix}")).exists(), "{suffix} left");
    }
    assert_eq!(crate::support::rows(&crate::support::open_ro(&db)), 5);
    db
}

#[test]
fn a_relay_given_a_warehouse_without_an_outbox_or_a_device_refuses_at_once_touching_nothing() {
    let tmp = tempdir();
    quiet_warehouse(tmp.path());
    let before = snapshot(tmp.path());
    // It waited 60 s on each, and left a -wal and -shm beside the warehouse it only read.
    let limit = Duration::from_secs(15);
    let relay = |db: &str| {
        reclaim_in_dir(
            tmp.path(),
            &[
                "relay",
                "--vendor",
                "127.0.0.1:9",
                "--items",
                "5",
                "--db",
                db,
            ],
            limit,
        )
    };
    assert_one_line_error(&relay("w.db"), "no outbox");
    assert_eq!(
        snapshot(tmp.path()),
        before,
        "the relay left files beside it"
    );
    assert_one_line_error(&relay("/dev/null"), "not a regular file");
}

#[test]
fn an_svg_asked_for_a_moment_outside_the_night_names_the_moment_it_draws() {
    let tmp = tempdir();
    crate::support::record_short_night(tmp.path());
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "replay",
            "night.jsonl",
            "--export",
            "early.svg",
            "--at",
            "01:00:00",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains("the dashboard at 02:00:00, where the night begins (--at 01:00:00"),
        "{said}"
    );
    let svg = fs::read_to_string(tmp.path().join("early.svg")).unwrap_or_default();
    assert!(svg.contains("02:00:00") && !svg.contains("01:00:00"));
}

#[test]
fn a_db_path_with_a_line_break_stays_on_the_database_line() {
    let tmp = tempdir();
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "5",
            "--db",
            "a\nb.db",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("database "))
        .unwrap_or_else(|| panic!("no database line:\n{}", run.stdout));
    assert!(line.ends_with("a\\nb.db (yours: --db)"), "{line}");
    assert!(
        !run.stdout.lines().any(|l| l.starts_with("b.db")),
        "{}",
        run.stdout
    );
}

#[test]
fn a_job_that_drops_its_table_is_told_so_not_that_it_never_made_it() {
    let tmp = tempdir();
    let job = format!(
        "{py} {}/examples/guarded_job.py && sqlite3 \"$RECLAIM_DB\" 'DROP TABLE records'",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    );
    let run = reclaim_in_dir(
        tmp.path(),
        &["run", "--exec", &job, "--items", "20", "--db", "w.db"],
        LIMIT,
    );
    assert_one_line_error(&run, "is gone at the end of the night");
    assert!(!run.stderr.contains("never created"), "{}", run.stderr);
}

#[test]
fn a_command_too_long_for_sh_is_refused_before_the_night_in_one_line() {
    let tmp = tempdir();
    let scenario = tmp.path().join("long.toml");
    write(
        &scenario,
        &format!(
            "title = \"long\"\nitems = 3\n[[lane]]\nname = \"long\"\nexec = \"echo {}\"\n",
            "a".repeat(200_000)
        ),
    );
    let before = snapshot(tmp.path());
    let run = reclaim_in_dir(
        tmp.path(),
        &["run", "--scenario", path_arg(&scenario), "--allow-exec"],
        LIMIT,
    );
    assert_one_line_error(&run, "that sh -c can take as one argument");
    assert!(!run.stdout.contains("reclaim run"), "the header came first");
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn heartbeat_check_does_not_wait_out_a_slow_alert() {
    let tmp = tempdir();
    let beat = tmp.path().join("hb");
    write(&beat, "hb 1 task-001\n");
    fs::File::options()
        .write(true)
        .open(&beat)
        .and_then(|f| f.set_modified(SystemTime::now() - Duration::from_secs(3600)))
        .unwrap_or_else(|e| panic!("{e}"));
    let pid_file = tmp.path().join("alert.pid");
    let alert = format!(
        "echo $$ > {}; exec sleep 120 >/dev/null 2>&1",
        path_arg(&pid_file)
    );
    // It waited as long as the alert ran (120 s here): cron piled up.
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "heartbeat-check",
            "--file",
            path_arg(&beat),
            "--max-age",
            "10",
            "--exec",
            &alert,
        ],
        Duration::from_secs(30),
    );
    let pid = fs::read_to_string(&pid_file).unwrap_or_default();
    let alive = pid.trim().parse::<i32>().ok().filter(|&pid| {
        // Stopped with the check: nothing of the alert is left behind.
        let alive = !crate::support::process_gone(pid);
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        alive
    });
    assert_eq!(alive, None, "the alert outlived the check");
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stdout.contains("runner heartbeat stale"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("still running") && run.stderr.contains("was stopped"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_recording_aimed_at_the_vendors_files_is_refused_before_the_night() {
    for name in [
        "w.vendor.sqlite",
        "w.vendor.sqlite-wal",
        "w.vendor.sqlite-journal",
    ] {
        let tmp = tempdir();
        let run = reclaim_in_dir(
            tmp.path(),
            &[
                "run",
                "--strategy",
                "outbox",
                "--items",
                "5",
                "--db",
                "w.db",
                "--record",
                name,
            ],
            LIMIT,
        );
        assert_one_line_error(&run, "vendor's");
        assert!(
            snapshot(tmp.path()).is_empty(),
            "{name}: something was made"
        );
    }
}

#[test]
fn a_hang_no_one_will_end_is_refused_headless() {
    let tmp = tempdir();
    write(
        &tmp.path().join("hang.toml"),
        "title = \"A hang\"\nitems = 20\n\n[host]\nhang_at_task = \"task-005\"\n\n[[lane]]\nstrategy = \"naive\"\n",
    );
    let before = snapshot(tmp.path());
    // Refused in one line before anything starts: the folder is unchanged below.
    let run = reclaim_in_dir(tmp.path(), &["run", "--scenario", "./hang.toml"], LIMIT);
    assert_one_line_error(&run, "host.hang_at_task without host.hang_for");
    assert_eq!(snapshot(tmp.path()), before);
}

#[test]
fn numbers_too_long_for_an_error_line_are_never_printed_whole() {
    let tmp = tempdir();
    let digits = format!("1{}", "0".repeat(300));
    for (flag, value) in [
        ("--restart-delay", "1e300"),
        ("--restart-delay", "-1e300"),
        ("--scale", "1e300"),
        ("--delay-ms", "1e300"),
        ("--kill-window", "1e300..2e300"),
        ("--restart-delay", digits.as_str()),
        ("--items", digits.as_str()),
    ] {
        let run = reclaim_in_dir(
            tmp.path(),
            &["run", "--strategy", "naive", flag, value],
            LIMIT,
        );
        assert_eq!(run.code, Some(2), "{flag} {value}: {}", run.stderr);
        let line = run.stderr.trim_end();
        assert!(
            line.len() < 240 && !line.contains("0000000000000000000000000"),
            "{flag}: {line}"
        );
    }
}
