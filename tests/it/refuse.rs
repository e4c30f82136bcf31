//! Refuse before touching: a path naming a warehouse's companion, a FIFO, a device, a folder, a
//! link to nothing, a foreign `-wal`, a table reclaim could not write; each is one line, exit 2,
//! and every byte around it as it was (FIFOs are listed by kind, never opened).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::support::strategies;
use crate::support::{
    Run, assert_one_line_error, count, json_of, number, open_ro, path_arg, reclaim_in_dir,
};
use crate::support::{tempdir, warehouse};

/// Long enough for any refusal; a command that hangs (on a FIFO, say) fails the test here.
const LIMIT: Duration = Duration::from_secs(20);

fn reclaim_in(dir: &Path, args: &[&str]) -> Run {
    reclaim_in_dir(dir, args, LIMIT)
}

/// Every entry under `dir`: a regular file by its bytes, anything else by its kind.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut all = BTreeMap::new();
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
        let kind = fs::symlink_metadata(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .file_type();
        if kind.is_dir() {
            all.extend(tree(&path));
            all.insert(path, b"folder".to_vec());
        } else if kind.is_file() {
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            all.insert(path, bytes);
        } else {
            all.insert(path, format!("{kind:?}").into_bytes());
        }
    }
    all
}

/// A naive warehouse whose worker was SIGKILLed mid-night: its `-wal` and `-shm` are left
/// beside it, holding committed rows the main file does not have yet.
fn killed_warehouse(db: &Path) {
    let run = reclaim_in(
        db.parent().unwrap_or(Path::new(".")),
        &[
            "worker",
            "--strategy",
            "naive",
            "--items",
            "3000",
            "--delay-ms",
            "0",
            "--crash-at",
            "task-2500:after-commit",
            "--db",
            path_arg(db),
        ],
    );
    assert_eq!(run.signal, Some(9), "{}\n{}", run.stdout, run.stderr);
    for suffix in ["-wal", "-shm"] {
        let companion = PathBuf::from(format!("{}{suffix}", db.display()));
        assert!(
            companion.exists(),
            "no {} after the kill",
            companion.display()
        );
    }
}

fn companion(db: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", db.display()))
}

/// Rows in the main file alone, ignoring any `-wal` (what an `immutable` read sees).
fn rows_in_main_file(db: &Path) -> u64 {
    let uri = format!("file:{}?immutable=1", db.display());
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(uri, flags).unwrap_or_else(|e| panic!("{e}"));
    count(&conn, "SELECT count(*) FROM records")
}

#[test]
fn a_heartbeat_naming_the_warehouse_or_a_companion_is_refused_and_nothing_changes() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    killed_warehouse(&db);
    let link = tmp.path().join("hard-link-to-db");
    fs::hard_link(&db, &link).unwrap_or_else(|e| panic!("{e}"));
    let before = tree(tmp.path());
    let targets = [
        (db.clone(), "database file"),
        (companion(&db, "-wal"), "write-ahead log"),
        (companion(&db, "-shm"), "shared-memory index"),
        // Not there yet: still never a heartbeat.
        (companion(&db, "-journal"), "rollback journal"),
        (link, "database file"),
    ];
    for strategy in ["naive", "guarded"] {
        for (heartbeat, role) in &targets {
            let run = reclaim_in(
                tmp.path(),
                &[
                    "worker",
                    "--strategy",
                    strategy,
                    "--db",
                    path_arg(&db),
                    "--heartbeat",
                    path_arg(heartbeat),
                ],
            );
            assert_one_line_error(&run, role);
            assert!(run.done_line().is_none(), "{}", run.stdout);
            assert!(
                tree(tmp.path()) == before,
                "worker --heartbeat {} changed the folder",
                heartbeat.display()
            );
        }
    }
}

#[test]
fn a_device_is_never_opened_as_a_warehouse_nor_replaced_by_a_heartbeat() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    let runs = [
        reclaim_in(
            tmp.path(),
            &["worker", "--strategy", "naive", "--db", "/dev/null"],
        ),
        reclaim_in(
            tmp.path(),
            &[
                "worker",
                "--strategy",
                "guarded",
                "--db",
                path_arg(&db),
                "--heartbeat",
                "/dev/null",
            ],
        ),
        reclaim_in(tmp.path(), &["inspect", "--db", "/dev/null"]),
    ];
    for run in &runs {
        assert_one_line_error(run, "is a device");
    }
    let null = fs::metadata("/dev/null").unwrap_or_else(|e| panic!("{e}"));
    assert!(null.file_type().is_char_device(), "/dev/null was replaced");
    assert!(
        !Path::new("/dev/null-journal").exists(),
        "a journal beside /dev/null"
    );
    assert!(tree(tmp.path()).is_empty(), "{:?}", tree(tmp.path()).keys());
}

#[test]
fn a_fifo_is_refused_by_every_command_without_waiting_for_a_writer() {
    let tmp = tempdir();
    let fifo = tmp.path().join("pipe");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    let db = tmp.path().join("w.db");
    let fifo_arg = path_arg(&fifo);
    let cases: [&[&str]; 7] = [
        &["worker", "--strategy", "guarded", "--db", fifo_arg],
        &[
            "worker",
            "--strategy",
            "guarded",
            "--db",
            path_arg(&db),
            "--heartbeat",
            fifo_arg,
        ],
        &["inspect", "--db", fifo_arg],
        &["replay", fifo_arg],
        &["replay", "--check", fifo_arg],
        &[
            "run",
            "--strategy",
            "guarded",
            "--replay-schedule",
            fifo_arg,
        ],
        &["tui", "--scenario", fifo_arg],
    ];
    for args in cases {
        let run = reclaim_in(tmp.path(), args);
        assert_one_line_error(&run, "FIFO");
    }
    // Nothing was created beside the FIFO, and the FIFO is still one.
    assert_eq!(tree(tmp.path()).len(), 1, "{:?}", tree(tmp.path()).keys());
}

#[test]
fn run_refuses_a_new_warehouse_with_a_companion_already_beside_it() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    for suffix in ["-wal", "-shm", "-journal", ".heartbeat"] {
        let leftover = companion(&db, suffix);
        fs::write(&leftover, format!("someone else's {suffix}")).unwrap_or_else(|e| panic!("{e}"));
        let before = tree(tmp.path());
        let run = reclaim_in(
            tmp.path(),
            &[
                "run",
                "--strategy",
                "guarded",
                "--items",
                "5",
                "--db",
                path_arg(&db),
            ],
        );
        assert_one_line_error(&run, &format!("w.db{suffix} already exists"));
        // Refused before the header: nothing printed, nothing created.
        assert!(run.stdout.is_empty(), "{}", run.stdout);
        assert!(
            tree(tmp.path()) == before,
            "run changed the folder ({suffix})"
        );
        fs::remove_file(&leftover).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn run_refuses_a_recording_aimed_at_its_own_warehouse() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    let cases = [
        ("", "database file"),
        ("-wal", "write-ahead log"),
        ("-shm", "shared-memory index"),
        ("-journal", "rollback journal"),
        (".heartbeat", "heartbeat file"),
    ];
    for (suffix, role) in cases {
        let record = companion(&db, suffix);
        let run = reclaim_in(
            tmp.path(),
            &[
                "run",
                "--strategy",
                "guarded",
                "--items",
                "5",
                "--delay-ms",
                "0",
                "--db",
                path_arg(&db),
                "--record",
                path_arg(&record),
            ],
        );
        assert_one_line_error(&run, role);
        assert!(tree(tmp.path()).is_empty(), "{:?}", tree(tmp.path()).keys());
    }
}

#[test]
fn a_link_to_nothing_is_not_a_new_path() {
    let tmp = tempdir();
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap_or_else(|e| panic!("{e}"));
    let link = tmp.path().join("w.db");
    std::os::unix::fs::symlink(elsewhere.join("target.db"), &link)
        .unwrap_or_else(|e| panic!("{e}"));
    let before = tree(tmp.path());
    let link_arg = path_arg(&link);
    let cases: [&[&str]; 4] = [
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "5",
            "--db",
            link_arg,
        ],
        &[
            "run",
            "--strategy",
            "guarded",
            "--items",
            "5",
            "--record",
            link_arg,
        ],
        &[
            "worker",
            "--strategy",
            "guarded",
            "--items",
            "5",
            "--db",
            link_arg,
        ],
        &["inspect", "--db", link_arg],
    ];
    for args in cases {
        let run = reclaim_in(tmp.path(), args);
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr_lines().len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("symbolic link") || run.stderr.contains("does not exist"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            tree(tmp.path()) == before,
            "{args:?} wrote through the link"
        );
    }
}

#[test]
fn a_path_through_a_file_says_the_file_is_not_a_folder() {
    let tmp = tempdir();
    let file = tmp.path().join("afile");
    fs::write(&file, "a file").unwrap_or_else(|e| panic!("{e}"));
    let db = file.join("w.db");
    for args in [
        vec!["run", "--strategy", "guarded", "--db", path_arg(&db)],
        vec!["worker", "--strategy", "guarded", "--db", path_arg(&db)],
    ] {
        let run = reclaim_in(tmp.path(), &args);
        assert_one_line_error(&run, "afile is not a folder");
    }
}

#[test]
fn two_runs_given_one_new_warehouse_start_one_night() {
    let tmp = tempdir();
    for round in 0..3 {
        let db = tmp.path().join(format!("w{round}.db"));
        let start = || {
            crate::support::reclaim_command()
                .args([
                    "run",
                    "--strategy",
                    "guarded",
                    "--items",
                    "40",
                    "--delay-ms",
                    "1",
                ])
                .args(["--seed", "1", "--db", path_arg(&db)])
                .env("TMPDIR", tmp.path())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("{e}"))
        };
        let (a, b) = (start(), start());
        let runs: Vec<Run> = [a, b]
            .into_iter()
            .map(|child| {
                let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
                Run::from_output("run", &output)
            })
            .collect();
        let codes: Vec<Option<i32>> = runs.iter().map(|r| r.code).collect();
        let (ran, refused): (Vec<&Run>, Vec<&Run>) = runs.iter().partition(|r| r.code == Some(0));
        assert_eq!((ran.len(), refused.len()), (1, 1), "exit codes {codes:?}");
        assert_one_line_error(refused[0], "already exists");
        let conn = open_ro(&db);
        assert_eq!(count(&conn, "SELECT count(*) FROM records"), 40);
        assert_eq!(
            count(&conn, "SELECT count(DISTINCT run_id) FROM records"),
            1
        );
    }
}

#[test]
fn a_foreign_wal_beside_a_good_warehouse_is_refused_and_never_checkpointed() {
    let tmp = tempdir();
    let good = tmp.path().join("good.db");
    warehouse(&good, "300");
    let other_dir = tmp.path().join("other");
    fs::create_dir(&other_dir).unwrap_or_else(|e| panic!("{e}"));
    let other = other_dir.join("other.db");
    killed_warehouse(&other);
    // Another database's log beside the good one, as a careless copy leaves it.
    fs::copy(companion(&other, "-wal"), companion(&good, "-wal")).unwrap_or_else(|e| panic!("{e}"));
    fs::remove_dir_all(&other_dir).unwrap_or_else(|e| panic!("{e}"));
    let _ = fs::remove_file(companion(&good, ".heartbeat"));
    let before = tree(tmp.path());
    let main_file = fs::metadata(&good).map_or(0, |m| m.len());
    let mut args: Vec<Vec<&str>> = vec![vec!["inspect", "--db", path_arg(&good), "--items", "300"]];
    for strategy in strategies() {
        args.push(vec![
            "worker",
            "--strategy",
            strategy,
            "--items",
            "300",
            "--db",
            path_arg(&good),
        ]);
    }
    for args in args {
        let run = reclaim_in(tmp.path(), &args);
        assert_eq!(
            run.code,
            Some(2),
            "{args:?}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert_eq!(run.stderr_lines().len(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("good.db"), "{args:?}: {}", run.stderr);
        // Byte for byte: the main file was not grown by a checkpoint, the log not deleted, and
        // no -shm appeared.
        assert!(tree(tmp.path()) == before, "{args:?} changed the folder");
        assert_eq!(fs::metadata(&good).map_or(0, |m| m.len()), main_file);
    }
}

#[test]
fn a_records_table_with_a_column_reclaim_cannot_fill_is_refused_before_any_change() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    {
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(
            "CREATE TABLE records(task_id TEXT NOT NULL, payload TEXT NOT NULL,
                 idem_key TEXT NOT NULL UNIQUE, run_id TEXT NOT NULL, written_at REAL NOT NULL,
                 owner TEXT NOT NULL);
             CREATE TABLE checkpoints(task_id TEXT PRIMARY KEY, completed_at REAL NOT NULL);",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let before = tree(tmp.path());
    for strategy in strategies() {
        let run = reclaim_in(
            tmp.path(),
            &[
                "worker",
                "--strategy",
                strategy,
                "--items",
                "5",
                "--db",
                path_arg(&db),
            ],
        );
        assert_one_line_error(&run, "NOT NULL column owner");
        assert!(tree(tmp.path()) == before, "{strategy} changed the folder");
    }
    // Still in its own journal mode: reclaim never switched it to WAL.
    let conn = open_ro(&db);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(mode, "delete");
}

#[test]
fn inspect_reads_a_copied_warehouse_and_its_wal_and_leaves_no_file_beside_them() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    killed_warehouse(&db);
    let expected = count(&open_ro(&db), "SELECT count(*) FROM records");
    let copy_dir = tmp.path().join("copy");
    fs::create_dir(&copy_dir).unwrap_or_else(|e| panic!("{e}"));
    let copy = copy_dir.join("w.db");
    fs::copy(&db, &copy).unwrap_or_else(|e| panic!("{e}"));
    fs::copy(companion(&db, "-wal"), companion(&copy, "-wal")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        rows_in_main_file(&copy) < expected,
        "the log holds no rows: a weak test"
    );
    let before = tree(&copy_dir);
    let run = reclaim_in(
        &copy_dir,
        &[
            "inspect",
            "--db",
            path_arg(&copy),
            "--items",
            "3000",
            "--json",
        ],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(number(&json_of(&run), "rows"), expected);
    assert!(
        tree(&copy_dir) == before,
        "inspect left a file beside the copy"
    );
}

#[test]
fn inspect_through_a_link_counts_the_rows_in_the_real_files_wal() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    killed_warehouse(&db);
    let expected = count(&open_ro(&db), "SELECT count(*) FROM records");
    assert!(
        rows_in_main_file(&db) < expected,
        "the log holds no rows: a weak test"
    );
    let link = tmp.path().join("link.db");
    std::os::unix::fs::symlink(&db, &link).unwrap_or_else(|e| panic!("{e}"));
    let run = reclaim_in(
        tmp.path(),
        &[
            "inspect",
            "--db",
            path_arg(&link),
            "--items",
            "3000",
            "--json",
        ],
    );
    assert_eq!(number(&json_of(&run), "rows"), expected, "{}", run.stderr);
}

#[test]
fn a_worker_given_a_new_database_beside_someone_elses_log_refuses() {
    let tmp = tempdir();
    let db = tmp.path().join("w.db");
    fs::write(companion(&db, "-wal"), "not ours").unwrap_or_else(|e| panic!("{e}"));
    let before = tree(tmp.path());
    let run = reclaim_in(
        tmp.path(),
        &[
            "worker",
            "--strategy",
            "naive",
            "--items",
            "5",
            "--db",
            path_arg(&db),
        ],
    );
    assert_one_line_error(&run, "w.db-wal is there beside a new, empty database");
    assert!(tree(tmp.path()) == before, "the worker changed the folder");
}
