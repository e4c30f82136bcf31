//! The map of an engineer's own job on a terminal (`map --exec`): the same screen and drill-down
//! as the built-in map, `--strict`, `--junit` for both maps, and nothing of a night (the job, its
//! children, its vendor) outliving reclaim when it is quit or stopped mid-night.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::Dashboard;
use crate::support::{Run, cmdline, json_of, process_gone};

const LIMIT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(10);
/// How long a process of the night may outlive reclaim's exit (a SIGKILL takes a moment).
const GRACE: Duration = Duration::from_secs(1);

fn example(name: &str) -> String {
    let job = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    format!("{} {}", crate::support::python3(), job.display())
}

fn tmp() -> tempfile::TempDir {
    crate::support::tempdir()
}

/// Every live process of a night under `dir` but reclaim itself: working in a folder under it
/// (the job, its children), or naming a path under it (the vendor, the exec-guard).
fn night_processes(dir: &Path, reclaim: i32) -> BTreeSet<i32> {
    let Ok(real) = std::fs::canonicalize(dir) else {
        return BTreeSet::new();
    };
    let needle = real.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != reclaim && !process_gone(pid))
        .filter(|&pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&real))
                || cmdline(pid).iter().any(|a| a.contains(&needle))
        })
        .collect()
}

/// Waits (against a deadline) until `want` says the night's processes are there.
fn wait_for_processes(dir: &Path, reclaim: i32, what: &str, want: impl Fn(&[String]) -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !night_processes(dir, reclaim)
        .iter()
        .any(|&p| want(&cmdline(p)))
    {
        assert!(Instant::now() < deadline, "{what} never started");
        std::thread::sleep(POLL);
    }
}

fn assert_nothing_left(dir: &Path, reclaim: i32, exited: Instant, what: &str) {
    loop {
        let left = night_processes(dir, reclaim);
        if left.is_empty() {
            return;
        }
        let names: Vec<Vec<String>> = left.iter().map(|&p| cmdline(p)).collect();
        assert!(
            Instant::now() < exited + GRACE,
            "{what}: {names:?} outlived reclaim by {GRACE:?}"
        );
        std::thread::sleep(POLL);
    }
}

fn is_python(args: &[String]) -> bool {
    args.iter().any(|a| a.contains("python"))
}

#[test]
fn the_map_of_an_own_job_on_a_terminal_is_the_map_screen_and_opens_a_night() {
    let dir = tmp();
    let job = format!("ORDERS_MODE=two-commit {}", example("orders_job.py"));
    let mut screen = Dashboard::start(
        &[
            "map",
            "--exec",
            &job,
            "--table",
            "orders",
            "--key",
            "order_id",
            "--key-format",
            "ord-%05d",
            "--items",
            "6",
        ],
        dir.path(),
        120,
        40,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + LIMIT;
    screen
        .wait_for("the finished map", deadline, |s| {
            s.contents().contains("18 nights in")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let text = screen.text();
    // A band a point the job announced, a column a key; after-row-commit duplicates one each.
    assert!(
        text.contains("exec       after-commit     ······"),
        "{text}"
    );
    assert!(text.contains("after-row-commit 111111"), "{text}");
    // Down to after-row-commit, right to the third key: its cell under the cursor.
    screen.send(b"jll").unwrap_or_else(|e| panic!("{e}"));
    screen
        .wait_for("the cell under the cursor", deadline, |s| {
            s.contents()
                .contains("exec · after-row-commit · ord-00002: DUPLICATED 1")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    screen.send(b"\r").unwrap_or_else(|e| panic!("{e}"));
    screen
        .wait_for("the dashboard on that night", deadline, |s| {
            s.contents()
                .contains("The kill the map's cell ran: ord-00002:after-row-commit")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    screen.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    screen
        .wait_for("the map again", deadline, |s| {
            s.contents()
                .contains("back from ord-00002:after-row-commit")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    screen.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = screen
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 1, "{}", screen.text());
    crate::support::assert_terminal_restored(&screen);
    assert!(
        screen.text().contains("reclaim map: 18 nights in"),
        "{}",
        screen.text()
    );
    let reclaim = screen.pid().as_raw();
    assert_nothing_left(dir.path(), reclaim, Instant::now(), "after q");
}

#[test]
fn q_on_an_own_jobs_map_mid_night_leaves_nothing_of_its_nights() {
    let dir = tmp();
    // Paced, so nights are in flight when q comes.
    let mut screen = Dashboard::start(
        &[
            "map",
            "--exec",
            &example("naive_job.py"),
            "--items",
            "40",
            "--delay-ms",
            "100",
        ],
        dir.path(),
        120,
        40,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let reclaim = screen.pid().as_raw();
    let deadline = Instant::now() + LIMIT;
    screen
        .wait_for("the map screen", deadline, |s| {
            s.contents().contains("/40 nights")
        })
        .unwrap_or_else(|e| panic!("{e}"));
    wait_for_processes(dir.path(), reclaim, "a night's job", is_python);
    screen.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = screen
        .wait_exit(Duration::from_secs(20))
        .unwrap_or_else(|e| panic!("{e}"));
    let exited = screen.exited_at().unwrap_or_else(Instant::now);
    // Left before it finished: the map does not hold.
    assert_eq!(status.exit_code(), 1, "{}", screen.text());
    assert!(
        screen.text().contains("nights never ran"),
        "{}",
        screen.text()
    );
    crate::support::assert_terminal_restored(&screen);
    assert_nothing_left(dir.path(), reclaim, exited, "q mid-map");
}

#[test]
fn an_own_jobs_night_stopped_by_a_signal_leaves_no_job_vendor_or_relay() {
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let dir = tmp();
        // The outbox job and its relay loop, reaching a vendor; slow, so the signal lands
        // mid-night.
        let db = dir.path().join("night").join("warehouse.db");
        std::fs::create_dir(dir.path().join("night")).unwrap_or_else(|e| panic!("{e}"));
        let mut child = crate::support::reclaim_command()
            .args([
                "run",
                "--exec",
                &example("outbox_job.py"),
                "--vendor",
                "ignore",
            ])
            .args(["--table", "orders", "--key", "order_id"])
            .args(["--key-format", "ord-%05d", "--delay-ms", "100", "--db"])
            .arg(&db)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start reclaim: {e}"));
        let reclaim = i32::try_from(child.id()).unwrap_or(i32::MAX);
        wait_for_processes(dir.path(), reclaim, "the job", is_python);
        wait_for_processes(dir.path(), reclaim, "the vendor", |args| {
            args.iter().any(|a| a == "vendor")
        });
        kill(Pid::from_raw(reclaim), signal).unwrap_or_else(|e| panic!("{e}"));
        let deadline = Instant::now() + LIMIT;
        let status = loop {
            if let Ok(Some(status)) = child.try_wait() {
                break status;
            }
            assert!(Instant::now() < deadline, "reclaim never exited");
            std::thread::sleep(POLL);
        };
        assert_eq!(status.code(), Some(2), "{signal}: stopped is an error exit");
        assert_nothing_left(dir.path(), reclaim, Instant::now(), signal.as_str());
    }
    // The map, stopped mid-night: every night in flight goes with it.
    let dir = tmp();
    let child = crate::support::reclaim_command()
        .args(["map", "--exec", &example("naive_job.py"), "--items", "40"])
        .args(["--delay-ms", "100", "--json"])
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start reclaim map: {e}"));
    let reclaim = i32::try_from(child.id()).unwrap_or(i32::MAX);
    wait_for_processes(dir.path(), reclaim, "a night's job", is_python);
    kill(Pid::from_raw(reclaim), Signal::SIGTERM).unwrap_or_else(|e| panic!("{e}"));
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("waiting for reclaim map: {e}"));
    let run = Run::from_output("reclaim map --exec", &output);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("SIGTERM"), "{}", run.stderr);
    assert_nothing_left(dir.path(), reclaim, Instant::now(), "map --exec");
}

#[test]
fn a_cell_whose_point_is_never_reached_is_not_tested_and_fails_only_under_strict() {
    // A job that announces its point only when no crash is planned: the undisturbed night hears
    // it, the cell's night (its crash planned there) never reaches it, so its kill never fires.
    let dir = tmp();
    let script = dir.path().join("shy_job.py");
    std::fs::write(
        &script,
        "import os, sqlite3\n\
         db = sqlite3.connect(os.environ['RECLAIM_DB'], isolation_level=None)\n\
         db.execute('CREATE TABLE IF NOT EXISTS records(task_id TEXT PRIMARY KEY)')\n\
         db.execute(\"INSERT OR IGNORE INTO records VALUES ('task-000')\")\n\
         if not os.environ.get('RECLAIM_CRASH_AT'):\n    \
         print('reclaim-point after-commit task-000', flush=True)\n\
         print('done status=ok')\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let job = format!("{} {}", crate::support::python3(), script.display());
    for (strict, code) in [(false, 0), (true, 1)] {
        let mut args = vec!["map", "--exec", job.as_str(), "--items", "1", "--json"];
        if strict {
            args.push("--strict");
        }
        let output = crate::support::reclaim_command()
            .args(&args)
            .env("TMPDIR", dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot run reclaim: {e}"));
        let run = Run::from_output(&args.join(" "), &output);
        let json = json_of(&run);
        assert_eq!(run.code, Some(code), "strict={strict}: {json}");
        // Never right: said untested, whether or not it fails the map.
        assert_eq!(json["all_right"], false, "{json}");
        assert_eq!(json["not_tested"], 1, "{json}");
        assert_eq!(json["cells"][0]["killed"], false, "{json}");
    }
    let args = ["map", "--exec", job.as_str(), "--items", "1", "--plain"];
    let output = crate::support::reclaim_command()
        .args(args)
        .env("TMPDIR", dir.path())
        .output()
        .unwrap_or_else(|e| panic!("cannot run reclaim: {e}"));
    let run = Run::from_output(&args.join(" "), &output);
    assert!(
        run.stdout
            .contains("0 cells wrong; 1 untested (the kill never fired; --strict fails them)"),
        "{}",
        run.stdout
    );
}

/// The cases of a `--junit` file: (class, name, failed).
fn junit_cases(path: &Path) -> Vec<(String, String, bool)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("not XML: {e}"));
    (doc.descendants())
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let failed = n.children().any(|c| c.has_tag_name("failure"));
            let attr = |a: &str| n.attribute(a).unwrap_or_default().to_string();
            (attr("classname"), attr("name"), failed)
        })
        .collect()
}

#[test]
fn both_maps_write_a_junit_case_per_band_failed_by_its_wrong_nights() {
    let dir = tmp();
    let builtin = dir.path().join("map.xml");
    let mut command = crate::support::reclaim_command();
    command
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .args([
            "map",
            "--strategy",
            "naive,guarded",
            "--items",
            "3",
            "--points",
            "after-commit",
            "--plain",
            "--junit",
        ]);
    command.arg(&builtin);
    let run = crate::support::run_within(command, "reclaim map --junit", LIMIT);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert_eq!(
        junit_cases(&builtin),
        vec![
            ("map.naive".into(), "after-commit".into(), true),
            ("map.guarded".into(), "after-commit".into(), false),
        ]
    );
    let own = dir.path().join("own.xml");
    let mut command = crate::support::reclaim_command();
    command
        .current_dir(dir.path())
        .env("TMPDIR", dir.path())
        .env("ORDERS_MODE", "two-commit")
        .args(["map", "--exec", &example("orders_job.py")])
        .args([
            "--table",
            "orders",
            "--key",
            "order_id",
            "--key-format",
            "ord-%05d",
        ])
        .args([
            "--checkpoint-table",
            "settled",
            "--items",
            "3",
            "--plain",
            "--junit",
        ])
        .arg(&own);
    let run = crate::support::run_within(command, "reclaim map --exec --junit", LIMIT);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let cases = junit_cases(&own);
    let failed: Vec<&str> = (cases.iter())
        .filter(|(_, _, failed)| *failed)
        .map(|(_, name, _)| name.as_str())
        .collect();
    assert_eq!(failed, vec!["after-row-commit"], "{cases:?}");
    assert!(cases.iter().all(|(class, _, _)| class == "map.exec"));
    assert_eq!(cases.len(), 3, "{cases:?}");
}
