//! What reclaim prints: a job's, a recording's or a file's control characters written as text,
//! spreadsheet formulas neutralised, and output that cannot be written (a full disk, a closed
//! pipe) ending in one line and exit 2, or quietly, never in a panic or a false exit 0.

use std::fs;
use std::io::Read as _;
use std::process::Stdio;
use std::time::Duration;

use super::tempdir;
use crate::support::{Run, path_arg, read_bytes, reclaim_in_dir, record_short_night};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_jobs_terminal_escapes_are_printed_as_text() {
    let tmp = tempdir();
    let job = format!(
        "printf '\\033]0;pwned\\007\\033[2Jhello\\n'; {py} {}/examples/guarded_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    );
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "run",
            "--exec",
            &job,
            "--items",
            "3",
            "--db",
            path_arg(&tmp.path().join("w.db")),
        ],
        LIMIT,
    );
    assert!(!run.stdout.contains('\u{1b}'), "{:?}", run.stdout);
    assert!(!run.stdout.contains('\u{7}'), "{:?}", run.stdout);
    assert!(
        run.stdout.contains("\\u001b]0;pwned\\u0007\\u001b[2Jhello"),
        "{}",
        run.stdout
    );
}

/// A real recording with its header's scenario and its lane's name replaced.
fn doctored(dir: &std::path::Path, scenario: &str, lane: &str) -> std::path::PathBuf {
    let text = String::from_utf8(record_short_night(dir)).unwrap_or_default();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut header: serde_json::Value =
        serde_json::from_str(&lines[0]).unwrap_or_else(|e| panic!("{e}"));
    header["scenario"] = scenario.into();
    header["lanes"][0]["name"] = lane.into();
    lines[0] = header.to_string();
    let path = dir.join("doctored.jsonl");
    fs::write(&path, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    path
}

#[test]
fn a_recordings_escapes_are_printed_as_text_and_its_formulas_are_not_evaluated() {
    let tmp = tempdir();
    let file = doctored(
        tmp.path(),
        "\u{1b}]0;pwned\u{7}\u{1b}[2J",
        "=HYPERLINK(\"http://x\")",
    );
    let check = reclaim_in_dir(tmp.path(), &["replay", "--check", path_arg(&file)], LIMIT);
    assert!(!check.stdout.contains('\u{1b}'), "{:?}", check.stdout);
    let csv = tmp.path().join("night.csv");
    let export = reclaim_in_dir(
        tmp.path(),
        &["replay", path_arg(&file), "--export", path_arg(&csv)],
        LIMIT,
    );
    assert_eq!(export.code, Some(0), "{}", export.stderr);
    let text = fs::read_to_string(&csv).unwrap_or_default();
    let cells: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap_or(""))
        .collect();
    assert!(!cells.is_empty());
    for cell in cells {
        assert!(cell.starts_with("\"'=HYPERLINK"), "{cell}");
    }
}

/// `reclaim ARGS > /dev/full`.
fn to_dev_full(args: &[&str], dir: &std::path::Path) -> Run {
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap_or_else(|e| panic!("{e}"));
    let output = crate::support::reclaim_command()
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    Run::from_output(&format!("{args:?} > /dev/full"), &output)
}

#[test]
fn every_command_that_prints_exits_2_with_one_line_when_stdout_is_full() {
    if !std::path::Path::new("/dev/full").exists() {
        return;
    }
    let tmp = tempdir();
    let record = tmp.path().join("night.jsonl");
    fs::write(&record, record_short_night(tmp.path())).unwrap_or_else(|e| panic!("{e}"));
    let wrong = tmp.path().join("wrong.jsonl");
    let naive = reclaim_in_dir(
        tmp.path(),
        &[
            "run",
            "--strategy",
            "naive",
            "--items",
            "20",
            "--delay-ms",
            "0",
            "--crash-at",
            "task-005:after-row-commit",
            "--record",
            path_arg(&wrong),
            "--db",
            path_arg(&tmp.path().join("n.db")),
        ],
        LIMIT,
    );
    assert_eq!(naive.code, Some(1), "{}", naive.stderr);
    let beat = tmp.path().join("beat");
    fs::write(&beat, "task-001 1.0 pid=1\n").unwrap_or_else(|e| panic!("{e}"));
    let db = tmp.path().join("night.db");
    let cases: Vec<Vec<&str>> = vec![
        vec!["scenarios"],
        vec!["completions", "bash"],
        vec!["man"],
        vec![
            "heartbeat-check",
            "--file",
            path_arg(&beat),
            "--max-age",
            "999999999",
        ],
        vec!["inspect", "--db", path_arg(&db), "--json"],
        vec!["replay", "--check", path_arg(&record)],
        vec![
            "run",
            "--strategy",
            "guarded",
            "--items",
            "3",
            "--delay-ms",
            "0",
        ],
        vec![
            "map",
            "--strategy",
            "guarded",
            "--items",
            "3",
            "--points",
            "after-commit",
            "--json",
        ],
        vec!["shrink", path_arg(&wrong)],
    ];
    for args in cases {
        let run = to_dev_full(&args, tmp.path());
        assert_eq!(run.code, Some(2), "{args:?}: {}", run.stderr);
        // One line says it (shrink's own summary goes to stderr before it).
        let lines = run.stderr_lines();
        let said: Vec<&&str> = lines
            .iter()
            .filter(|l| l.contains("No space left"))
            .collect();
        assert_eq!(said.len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            lines.len() == 1 || args[0] == "shrink",
            "{args:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_reader_that_goes_away_is_a_quiet_exit() {
    for args in [vec!["completions", "fish"], vec!["man"], vec!["scenarios"]] {
        let mut child = crate::support::reclaim_command()
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // `| head -c 10`: ten bytes read, then the pipe closed.
        let mut first = [0u8; 10];
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_exact(&mut first);
        }
        let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        let run = Run::from_output(&format!("{args:?} | head -c 10"), &output);
        assert!(
            run.signal.is_none() && run.code != Some(101),
            "{args:?}: {run:?}"
        );
        assert!(run.stderr.trim().is_empty(), "{args:?}: {}", run.stderr);
    }
    let _ = read_bytes;
}
