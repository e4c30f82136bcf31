//! Resource limits (`ulimit -f`): reclaim never dies of SIGXFSZ with no word; a write past the
//! limit is one line and exit 2, with nothing half-written left; a worker the limit killed is
//! said as that, never as the host reclaiming the instance.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{BIN, Run, path_arg, run_within};

const LIMIT: Duration = Duration::from_secs(120);

/// `reclaim ARGS` under `ulimit -f BLOCKS` (the shell's blocks), in `dir` (also TMPDIR), its
/// stdout into `stdout` when given (else a pipe, which no limit applies to).
fn limited(dir: &Path, blocks: u32, args: &[&str], stdout: Option<&Path>) -> Run {
    let redirect = stdout.map_or(String::new(), |p| format!(" >'{}'", path_arg(p)));
    let script = format!("ulimit -f {blocks}; exec \"$0\" \"$@\"{redirect}");
    let mut command = Command::new("sh");
    command
        .args(["-c", &script, BIN])
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir);
    run_within(command, &format!("reclaim {args:?} under ulimit -f"), LIMIT)
}

/// Exit 2, not a death by signal, and one line on stderr saying `needle`.
fn one_line(run: &Run, needle: &str) {
    assert_eq!(run.signal, None, "killed by a signal:\n{}", run.stderr);
    assert_eq!(run.code, Some(2), "{}\n{}", run.stdout, run.stderr);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains(needle), "{}", run.stderr);
}

#[test]
fn output_past_the_file_size_limit_is_one_line_not_sigxfsz() {
    let tmp = crate::support::tempdir();
    let out = tmp.path().join("man.roff");
    let run = limited(tmp.path(), 1, &["man"], Some(&out));
    one_line(
        &run,
        "cannot write the output: File too large (os error 27) (the file size limit, ulimit -f, was reached)",
    );
}

#[test]
fn an_export_past_the_limit_leaves_nothing_behind() {
    let tmp = crate::support::tempdir();
    let recording = tmp.path().join("night.jsonl");
    fs::write(&recording, crate::support::record_short_night(tmp.path()))
        .unwrap_or_else(|e| panic!("{e}"));
    let before: Vec<_> = fs::read_dir(tmp.path())
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    for name in ["night.cast", "night.svg"] {
        let run = limited(
            tmp.path(),
            4,
            &["replay", path_arg(&recording), "--export", name],
            None,
        );
        let target = tmp.path().join(name);
        one_line(&run, &format!("cannot write {}", path_arg(&target)));
        assert!(run.stderr.contains("ulimit -f"), "{}", run.stderr);
        // Neither the export nor its temporary file.
        let after: Vec<_> = fs::read_dir(tmp.path())
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert_eq!(after, before, "{name}");
    }
}

/// A recording that reaches the limit stops at its last whole line, said once; the night goes
/// on to its verdict.
#[test]
fn a_recording_at_the_limit_ends_on_a_whole_line() {
    let tmp = crate::support::tempdir();
    // A job that says much (each line a timeline entry, recorded) and writes little.
    let job = tmp.path().join("chatty.py");
    fs::write(
        &job,
        "import os, sqlite3\n\
         for i in range(4000):\n    print(f'line {i} ' + 'x' * 60, flush=True)\n\
         db = sqlite3.connect(os.environ['RECLAIM_DB'])\n\
         db.execute('CREATE TABLE records(task_id TEXT)')\n\
         db.executemany('INSERT INTO records VALUES (?)', [(f'task-{i:03d}',) for i in range(200)])\n\
         db.commit()\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let command = format!("{} {}", crate::support::python3(), path_arg(&job));
    let recording = tmp.path().join("night.jsonl");
    let run = limited(
        tmp.path(),
        160,
        &[
            "run",
            "--exec",
            &command,
            "--record",
            path_arg(&recording),
            "--keep",
            "never",
        ],
        None,
    );
    assert_eq!(run.signal, None, "{}", run.stderr);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("result       PASS"), "{}", run.stdout);
    let lines = run.stderr_lines();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains("File too large") && lines[0].contains("the recording stops here"),
        "{}",
        run.stderr
    );
    let bytes = fs::read(&recording).unwrap_or_default();
    assert!(bytes.len() > 10_000, "{}", bytes.len());
    assert_eq!(bytes.last(), Some(&b'\n'), "the recording ends mid-line");
    let check = crate::support::reclaim(&["replay", "--check", path_arg(&recording)]);
    assert!(!check.stderr.contains("cut short"), "{}", check.stderr);
}

/// A job the limit killed (SIGXFSZ) failed on its own: said so, with the limit; not a kill.
#[test]
fn a_worker_killed_by_the_file_size_limit_is_said_as_that() {
    let tmp = crate::support::tempdir();
    let run = limited(
        tmp.path(),
        100_000,
        &[
            "run",
            "--exec",
            "echo starting; kill -s XFSZ $$",
            "--keep",
            "never",
        ],
        None,
    );
    one_line(
        &run,
        "killed by SIGXFSZ: it reached the file size limit (ulimit -f)",
    );
    assert!(!run.stdout.contains("reclaimed by host"), "{}", run.stdout);
}
