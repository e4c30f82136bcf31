//! Bounded everything: what a job prints, what a recording asks of `shrink`, what `map --keep`
//! keeps and what `run --json` prints cannot grow without a limit.

use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::tempdir;

use crate::support::{assert_one_line_error, path_arg, reclaim_in_dir};

/// Runs reclaim with `args` in `dir` (stdout and stderr to files there), polling its peak
/// resident memory (`VmHWM`, KiB) until it exits: its exit code, stdout and that peak.
fn run_measured(dir: &Path, args: &[&str], limit: Duration) -> (Option<i32>, String, u64) {
    let stdout = fs::File::create(dir.join("stdout.txt")).unwrap_or_else(|e| panic!("{e}"));
    let stderr = fs::File::create(dir.join("stderr.txt")).unwrap_or_else(|e| panic!("{e}"));
    let mut child = crate::support::reclaim_command()
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
        "{py} -c \"import sys; sys.stdout.write('x' * 300_000_000 + '\\n')\"; \
         exec {py} {}/examples/guarded_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
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

/// A recorded naive night of 100 items that went wrong under 3 kills, its lines as JSON.
fn a_wrong_night(dir: &Path) -> Vec<serde_json::Value> {
    let record = dir.join("night.jsonl");
    let night = reclaim_in_dir(
        dir,
        &[
            "run",
            "--strategy",
            "naive",
            "--items",
            "100",
            "--delay-ms",
            "3",
            "--kills",
            "3",
            "--kill-window",
            "0.05..0.15",
            "--seed",
            "7",
            "--db",
            path_arg(&dir.join("night.db")),
            "--record",
            path_arg(&record),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(
        night.code,
        Some(1),
        "the night went wrong: {}",
        night.stdout
    );
    fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn write_lines(path: &Path, lines: &[serde_json::Value]) {
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn shrink_writes_a_doctored_derived_string_into_its_toml_as_text_never_as_toml() {
    let tmp = tempdir();
    let mut lines = a_wrong_night(tmp.path());
    // The line break ends the comment the derived string is copied into; what follows would
    // be the scenario's own: 40 random kills in "the smallest failing schedule".
    let injected = "DATA WRONG (26 duplicated task ids)\nhost.random_kills = 40\n#";
    if let Some(end) = lines.last_mut() {
        end["lanes"][0]["derived"] = injected.into();
    }
    let doctored = tmp.path().join("doctored.jsonl");
    write_lines(&doctored, &lines);
    let shrink = reclaim_in_dir(
        tmp.path(),
        &["shrink", path_arg(&doctored)],
        Duration::from_secs(120),
    );
    assert_eq!(shrink.code, Some(0), "{}", shrink.stderr);
    let scenario = reclaim::scenario::Scenario::parse("shrunk.toml", &shrink.stdout)
        .unwrap_or_else(|e| panic!("{e}\n{}", shrink.stdout));
    assert_eq!(scenario.random_kills, 0, "{}", shrink.stdout);
    assert!(scenario.captions.is_empty(), "{}", shrink.stdout);
    assert_eq!(scenario.lanes.len(), 1);
    assert!(
        shrink.stdout.contains("\\nhost.random_kills = 40"),
        "the recorded text, escaped: {}",
        shrink.stdout
    );
}

#[test]
fn shrink_refuses_a_recording_that_would_plan_more_work_than_the_map_may() {
    let tmp = tempdir();
    let mut lines = a_wrong_night(tmp.path());
    // 100,000 items and every kill after the last tasks: 400,000 nights once.
    lines[0]["lanes"][0]["items"] = 100_000.into();
    for line in &mut lines {
        if line["kind"] == "item" {
            line["text"] =
                "task-99990  in flight, not committed (last committed: task-99989)".into();
            // What shrink reads: the committed task as a field (the text is for people).
            line["fact"] = serde_json::json!({"committed": {"task": 99_989}});
        }
    }
    let doctored = tmp.path().join("doctored.jsonl");
    write_lines(&doctored, &lines);
    let before = crate::support::snapshot(tmp.path());
    let shrink = reclaim_in_dir(
        tmp.path(),
        &["shrink", path_arg(&doctored)],
        Duration::from_secs(30),
    );
    assert_one_line_error(&shrink, "nights of 100000 items");
    assert_eq!(
        crate::support::snapshot(tmp.path()),
        before,
        "shrink wrote something"
    );
}

#[test]
fn map_keep_says_the_size_first_and_keeps_no_log_beside_a_night() {
    let tmp = tempdir();
    let map = reclaim_in_dir(
        tmp.path(),
        &[
            "map", "--items", "200", "--tasks", "0..1", "--keep", "--json",
        ],
        Duration::from_secs(300),
    );
    assert_eq!(map.code, Some(1), "{}", map.stderr);
    let first = map.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("reclaim map: --keep keeps ") && first.contains(" MB, in "),
        "{}",
        map.stderr
    );
    let dir = fs::read_dir(tmp.path())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("reclaim-map-"))
        })
        .unwrap_or_else(|| panic!("no kept folder in {}", tmp.path().display()));
    let said_mb: f64 = first
        .split(", about ")
        .nth(1)
        .and_then(|r| r.split(" MB").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size in {first}"));
    let mut total = 0;
    let mut databases = 0;
    for entry in fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(Result::ok)
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let len = entry.metadata().map_or(0, |m| m.len());
        total += len;
        databases += u64::from(entry.path().extension().is_some_and(|e| e == "db"));
        // Each kept night's log folded into its database (each was ~886 KB).
        assert!(!name.ends_with("-wal") || len == 0, "{name} is {len} bytes");
    }
    assert!(databases > 0);
    assert!(
        (total as f64) / 1e6 <= said_mb,
        "{total} bytes kept, {said_mb} MB said"
    );
}

#[test]
fn run_json_carries_a_bounded_timeline_and_says_how_many_lines_it_left_out() {
    let tmp = tempdir();
    // 10,000 lines of the job's own: each a timeline line (100,000 kills printed 352,317).
    let job = format!(
        "seq 1 10000; exec {py} {}/examples/guarded_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    );
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "run", "--exec", &job, "--items", "3", "--db", "w.db", "--json",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}"));
    let timeline: Vec<&str> = json["timeline"]
        .as_array()
        .unwrap_or_else(|| panic!("no timeline"))
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let left_out = json["timeline_left_out"].as_u64().unwrap_or_else(|| {
        panic!(
            "no timeline_left_out beside {} timeline lines",
            json["timeline"].as_array().map_or(0, Vec::len)
        )
    });
    assert!(timeline.len() <= 2_001, "{} lines", timeline.len());
    // The job's lines past the first 1,000 are counted on the timeline, not carried.
    let not_kept: u64 = (timeline.iter())
        .find_map(|l| {
            let (n, _) = l.split_once(" more lines of its output not kept")?;
            n.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or(0);
    // Every line is either carried or counted: the job's 10,000, its start and its done.
    assert!(
        timeline.len() as u64 - 1 + left_out + not_kept >= 10_002,
        "{} carried, {left_out} left out, {not_kept} not kept",
        timeline.len()
    );
    if left_out > 0 {
        let cut = format!("{left_out} lines left out");
        assert_eq!(
            timeline.iter().filter(|l| l.contains(&cut)).count(),
            1,
            "the cut is not said in the timeline"
        );
    }
    assert!(timeline.first().is_some_and(|l| l.contains(" start ")));
    assert!(timeline.iter().rev().take(3).any(|l| l.contains(" done ")));
}

#[test]
fn a_job_printing_many_short_lines_keeps_a_window_and_counts_the_rest() {
    let tmp = tempdir();
    let printed = 5_000;
    let job = format!(
        "{py} -c \"import sys; sys.stdout.write(''.join('ping-%d\\n' % i for i in range({printed})))\"; \
         exec {py} {}/examples/guarded_job.py",
        env!("CARGO_MANIFEST_DIR"),
        py = crate::support::python3()
    );
    let run = reclaim_in_dir(
        tmp.path(),
        &[
            "run", "--exec", &job, "--items", "3", "--db", "w.db", "--record", "r.jsonl",
        ],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    // The command line (in the header) names `ping-%d`; the lines printed, `ping-N`.
    let shown = |text: &str| {
        (text.lines())
            .filter(|l| l.contains("ping-") && !l.contains("ping-%d"))
            .count()
    };
    let kept = shown(&run.stdout);
    assert!(
        kept > 0 && kept < printed,
        "run showed {kept} of {printed} lines"
    );
    // Every line is kept or counted (the job's own last line among them), and the count is
    // said.
    let not_kept: usize = (run.stdout.lines())
        .find_map(|l| {
            let (n, _) = l.split_once(" more lines of its output not kept")?;
            n.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no count of lines not kept in:\n{}", run.stdout));
    assert!(
        kept + not_kept >= printed,
        "{kept} kept, {not_kept} not kept"
    );
    let recording = fs::read_to_string(tmp.path().join("r.jsonl")).unwrap_or_default();
    // The timeline's lines, and the samples that name the job's claim (its last line): bounded
    // by the window, not by what the job printed.
    let recorded = shown(&recording);
    assert!(
        recorded >= kept && recorded < 2 * kept,
        "the recording holds {recorded} of the {printed} lines ({kept} shown)"
    );
    assert!(recording.contains(&format!("{not_kept} more lines of its output not kept")));
}
