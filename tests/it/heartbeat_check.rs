//! Heartbeat files: `reclaim heartbeat-check` against files a cron job should never trust (a
//! FIFO, a directory, a device, a heartbeat from the future, a huge file, terminal escapes), and
//! the temporary beats a storm of kills must not leave behind.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::support::{
    Run, assert_one_line_error, path_arg, poll_until, reclaim_within, run_counting_reads,
};

/// Far more than any check needs: a check that blocks fails with a message instead of hanging.
const LIMIT: Duration = Duration::from_secs(20);

fn heartbeat_check(extra: &[&str]) -> Run {
    let mut args = vec!["heartbeat-check"];
    args.extend_from_slice(extra);
    reclaim_within(&args, &[], LIMIT)
}

/// A heartbeat as a worker writes it, its modification time set to `modified`.
fn beat_at(path: &Path, text: &str, modified: SystemTime) {
    let written = fs::write(path, text)
        .and_then(|()| fs::File::options().write(true).open(path))
        .and_then(|file| file.set_modified(modified));
    written.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// An `--exec` that writes `$RECLAIM_ALERT` to `out`.
fn exec_to(out: &Path) -> String {
    assert!(!path_arg(out).contains('\''));
    format!("echo \"$RECLAIM_ALERT\" > '{}'", path_arg(out))
}

#[test]
fn heartbeat_check_refuses_what_is_not_a_regular_file_without_opening_it() {
    let dir = crate::support::tempdir();
    let fifo = dir.path().join("w.db.heartbeat");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let folder = dir.path().join("a-folder");
    fs::create_dir(&folder).unwrap();
    let alert = dir.path().join("alert.txt");
    let exec = exec_to(&alert);
    for (path, kind) in [
        (fifo.as_path(), "FIFO"),
        (folder.as_path(), "directory"),
        (Path::new("/dev/null"), "device"),
    ] {
        // A FIFO opened for reading would wait for a writer forever (LIMIT fails the test).
        let run = heartbeat_check(&["--file", path_arg(path), "--exec", &exec]);
        assert_one_line_error(&run, kind);
        assert!(run.stderr.starts_with("reclaim: error: "), "{}", run.stderr);
        assert!(run.stderr.contains(path_arg(path)), "{}", run.stderr);
        assert!(run.stdout.is_empty(), "{kind}: {}", run.stdout);
        assert!(!alert.exists(), "--exec ran for a {kind}");
    }
}

#[test]
fn a_heartbeat_from_the_future_alerts_instead_of_counting_as_fresh() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("w.db.heartbeat");
    let day = Duration::from_secs(86_400);
    beat_at(&beat, "task-042 1.0 pid=1\n", SystemTime::now() + day);
    let alert = dir.path().join("alert.txt");

    let run = heartbeat_check(&["--file", path_arg(&beat), "--exec", &exec_to(&alert)]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let line = run.stdout.trim_end();
    assert!(
        line.starts_with("runner heartbeat from the future: 8639")
            && line.ends_with("s ahead of this clock (clock skew?)"),
        "{line}"
    );
    assert_eq!(fs::read_to_string(&alert).unwrap().trim_end(), line);

    // Within the tolerance (a file system's rounding, a share's clock a little ahead): fresh.
    beat_at(
        &beat,
        "task-042 1.0 pid=1\n",
        SystemTime::now() + Duration::from_secs(1),
    );
    let run = heartbeat_check(&["--file", path_arg(&beat)]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.trim_end(),
        "runner heartbeat fresh: 0s (task-042)"
    );
}

#[test]
fn a_huge_heartbeat_is_judged_from_its_first_line_at_once() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("w.db.heartbeat");
    fs::write(&beat, "task-042 1.0 pid=1\n").unwrap();
    // A GiB, sparse: reading it whole took 15 s and 3 GB of memory.
    fs::File::options()
        .write(true)
        .open(&beat)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let mut command = crate::support::reclaim_command();
    command.args(["heartbeat-check", "--file", path_arg(&beat)]);
    let (run, read) = run_counting_reads(command, "heartbeat-check", LIMIT);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.trim_end(),
        "runner heartbeat fresh: 0s (task-042)"
    );
    // Its first line only: the whole program reads a few MB (its own files), never the GiB.
    assert!(read < 64 << 20, "heartbeat-check read {read} bytes");
}

#[test]
fn terminal_escapes_in_a_heartbeat_are_printed_escaped() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("w.db.heartbeat");
    fs::write(&beat, "task-1\x1b[2J\x1b]0;pwned\x07 1.0 pid=1\n").unwrap();
    let run = heartbeat_check(&["--file", path_arg(&beat)]);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        !run.stdout.chars().any(|c| c.is_control() && c != '\n'),
        "a control character reached the terminal: {:?}",
        run.stdout
    );
    assert_eq!(run.stdout.lines().count(), 1, "{:?}", run.stdout);
    assert!(run.stdout.contains("task-1\\u{1b}[2J"), "{:?}", run.stdout);
}

#[test]
fn a_storm_of_kills_leaves_no_temporary_heartbeat_behind() {
    // Each kill that lands between a worker's creating DB.heartbeat.PID.tmp and renaming it left
    // the file behind: before the supervisor cleaned up, these eight nights left about a dozen.
    let mut left = Vec::new();
    for seed in 1..=8 {
        let dir = crate::support::tempdir();
        let db = dir.path().join("w.db");
        let seed = seed.to_string();
        let run = reclaim_within(
            &[
                "run",
                "--strategy",
                "guarded",
                "--items",
                "3000",
                "--delay-ms",
                "0",
                "--kills",
                "80",
                "--kill-window",
                "0.001..0.003",
                "--restart-delay",
                "0",
                "--seed",
                &seed,
                "--db",
                path_arg(&db),
            ],
            &[],
            Duration::from_secs(60),
        );
        assert_eq!(
            run.code,
            Some(0),
            "seed {seed}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(
            run.stdout.contains("completed=yes"),
            "seed {seed}: {}",
            run.stdout
        );
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"w.db.heartbeat".to_string()), "{names:?}");
        left.extend(names.into_iter().filter(|n| {
            Path::new(n)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("tmp"))
        }));
    }
    assert!(left.is_empty(), "temporary beats left behind: {left:?}");
}

/// Live processes whose working folder is `dir` (the alert commands below `cd` there first).
fn living_in(dir: &Path) -> Vec<i32> {
    let dir = fs::canonicalize(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    fs::read_dir("/proc")
        .unwrap_or_else(|e| panic!("/proc: {e}"))
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == dir)
                && !crate::support::process_gone(pid)
        })
        .collect()
}

/// An alert that leaves work running (a `&`, a `setsid`, a double fork) leaves none of it
/// behind: the switch is run by cron every minute, and its alerts must not pile up.
#[test]
fn an_alert_leaves_nothing_running_when_it_ends_or_the_switch_is_stopped() {
    let dir = crate::support::tempdir();
    let beat = dir.path().join("w.db.heartbeat");
    beat_at(
        &beat,
        "task-1 1.0 pid=1\n",
        SystemTime::now() - Duration::from_secs(3600),
    );
    let away = dir.path().join("away");
    fs::create_dir(&away).unwrap();
    assert!(!path_arg(&away).contains('\''));
    let leaves = format!(
        "cd '{}' && (setsid sleep 300 &) && (sh -c 'sleep 301 &') && sleep 302 & echo alerted",
        path_arg(&away)
    );
    let run = heartbeat_check(&[
        "--file",
        path_arg(&beat),
        "--max-age",
        "5",
        "--exec",
        &leaves,
    ]);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        living_in(&away),
        Vec::<i32>::new(),
        "left running after the alert ended"
    );

    // Stopped while it waits for an alert that hangs: SIGTERM, then nothing of it is left.
    // An alert left to run would end by writing `ended`: its absence says reclaim did not wait.
    let hangs = format!(
        "cd '{}' && (setsid sleep 303 &) && sleep 304 && touch ended",
        path_arg(&away)
    );
    let switch = crate::support::reclaim_command()
        .args([
            "heartbeat-check",
            "--file",
            path_arg(&beat),
            "--max-age",
            "5",
        ])
        .args(["--exec", &hangs])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        poll_until(LIMIT, || living_in(&away).len() >= 2),
        "the alert never started"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(switch.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let mut switch = switch;
    assert!(
        poll_until(LIMIT, || switch.try_wait().ok().flatten().is_some()),
        "still running after SIGTERM: it waited for the alert"
    );
    let output = switch.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("stopped by SIGTERM"), "{stderr}");
    assert!(!away.join("ended").exists(), "it waited for the alert");
    assert_eq!(
        living_in(&away),
        Vec::<i32>::new(),
        "left running after SIGTERM"
    );
}

/// A file of /proc is no heartbeat (its time is always now): refused, never `fresh`.
#[test]
fn a_file_of_proc_is_not_a_heartbeat() {
    let run = heartbeat_check(&["--file", "/proc/self/status"]);
    assert_one_line_error(
        &run,
        "a file of /proc, whose time is always now: not a heartbeat",
    );
    assert_eq!(run.stdout, "");
}

/// The live dead-man's switch judges by `heartbeat-check`'s rule: a job whose heartbeat is
/// from the future is alerted on, in the same words, not silenced.
#[test]
fn the_live_switch_alerts_on_a_heartbeat_from_the_future_as_the_check_does() {
    let dir = crate::support::tempdir();
    let job = dir.path().join("future.py");
    fs::write(
        &job,
        "import os, sqlite3, time\n\
         beat = os.environ['HEARTBEAT_FILE']\n\
         open(beat, 'w').write('task-000 1.0\\n')\n\
         ahead = time.time() + 86400\n\
         os.utime(beat, (ahead, ahead))\n\
         time.sleep(1.5)\n\
         db = sqlite3.connect(os.environ['RECLAIM_DB'])\n\
         db.execute('CREATE TABLE records(task_id TEXT)')\n\
         db.executemany('INSERT INTO records VALUES (?)', [(f'task-{i:03d}',) for i in range(20)])\n\
         db.commit()\n",
    )
    .unwrap();
    let command = format!("{} {}", crate::support::python3(), path_arg(&job));
    let run = reclaim_within(
        &[
            "run", "--exec", &command, "--items", "20", "--keep", "always",
        ],
        &[("TMPDIR", dir.path())],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let alert = run
        .stdout
        .lines()
        .find(|l| l.contains("runner  alert"))
        .unwrap_or_else(|| panic!("no alert:\n{}", run.stdout));
    // A day ahead, less the moments between the job's write and reclaim's read, in whole
    // seconds: 86400 when it is read within half a second.
    assert!(
        (alert.contains("runner heartbeat from the future: 8639")
            || alert.contains("runner heartbeat from the future: 86400s"))
            && alert.ends_with("s ahead of this clock (clock skew?)"),
        "{alert}"
    );
    // The check says the same of the same file.
    let beat = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("database     "))
        .and_then(|l| l.split_whitespace().next())
        .map_or_else(
            || panic!("no database line:\n{}", run.stdout),
            |db| format!("{db}.heartbeat"),
        );
    let check = heartbeat_check(&["--file", &beat]);
    assert_eq!(check.code, Some(1), "{}", check.stderr);
    assert!(
        check
            .stdout
            .starts_with("runner heartbeat from the future: 8639"),
        "{}",
        check.stdout
    );
}

/// A lane that starts late on the clock (`start_at = "02:30:00"`) is silent until then by
/// design: no stale-heartbeat alert before its first start.
#[test]
fn no_stale_alert_before_a_lanes_first_start() {
    let dir = crate::support::tempdir();
    let scenario = dir.path().join("late.toml");
    fs::write(
        &scenario,
        "title = \"A lane that starts late\"\nscale = 600.0\nitems = 20\n\
         start_at = \"02:30:00\"\ndelay_ms = 20.0\ndead_man = 300.0\n\n\
         [[lane]]\nstrategy = \"guarded\"\n",
    )
    .unwrap();
    let run = reclaim_within(
        &["run", "--scenario", path_arg(&scenario), "--keep", "never"],
        &[("TMPDIR", dir.path())],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("02:30:00  guarded  worker  start"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("heartbeat stale"), "{}", run.stdout);
}
