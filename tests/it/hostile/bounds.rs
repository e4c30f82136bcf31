//! Bounded everything: what a job prints, what a recording asks of `shrink`, what `map --keep`
//! keeps and what `run --json` prints cannot grow without a limit.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::tempdir;

use crate::common::BIN;

/// Runs reclaim with `args` in `dir` (stdout and stderr to files there), polling its peak
/// resident memory (`VmHWM`, KiB) until it exits: its exit code, stdout and that peak.
fn run_measured(dir: &Path, args: &[&str], limit: Duration) -> (Option<i32>, String, u64) {
    let stdout = fs::File::create(dir.join("stdout.txt")).unwrap_or_else(|e| panic!("{e}"));
    let stderr = fs::File::create(dir.join("stderr.txt")).unwrap_or_else(|e| panic!("{e}"));
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let status_file = format!("/proc/{}/status", child.id());
    let deadline = Instant::now() + limit;
    let mut peak = 0;
    let status = loop {
        if let Some(hwm) = fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("reclaim {args:?} still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = fs::read_to_string(dir.join("stdout.txt")).unwrap_or_default();
    (status.code(), out, peak)
}

#[test]
fn a_300_mb_line_of_job_output_is_cut_not_held_and_the_recording_gets_the_cut_line() {
    let tmp = tempdir();
    let job = format!(
        "python3 -c \"import sys; sys.stdout.write('x' * 300_000_000 + '\\n')\"; \
         exec python3 {}/examples/guarded_job.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, stdout, peak) = run_measured(
        tmp.path(),
        &[
            "run", "--exec", &job, "--items", "3", "--db", "w.db", "--record", "r.jsonl",
        ],
        Duration::from_secs(180),
    );
    assert_eq!(code, Some(0), "{}", &stdout[..stdout.len().min(2000)]);
    // It was 593 MB: the line held whole.
    assert!(peak < 128 * 1024, "reclaim's peak memory was {peak} KiB");
    let cut = format!("{}…", "x".repeat(4096));
    assert!(stdout.contains(&cut), "the cut line is not in run's output");
    assert!(
        stdout.lines().all(|l| l.len() < 8192),
        "a line of run's output is longer than the cap"
    );
    let recording = fs::read_to_string(tmp.path().join("r.jsonl")).unwrap_or_default();
    let logged: Vec<&str> = recording.lines().filter(|l| l.contains("xxxx")).collect();
    assert!(!logged.is_empty(), "the line is not in the recording");
    assert!(
        logged.iter().all(|l| l.len() < 8192),
        "the recording holds a line of {} bytes",
        logged.iter().map(|l| l.len()).max().unwrap_or(0)
    );
    assert!(recording.contains(&cut));
}
