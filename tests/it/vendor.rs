//! Side effects that leave the database: the vendor (`reclaim vendor`), a worker's email before
//! its commit, the outbox strategy and its relay. Every count is checked against the vendor's
//! own database with a read-only connection of the test's, not only against what reclaim says.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::support::tempdir;
use crate::support::{
    BIN, assert_one_line_error, cmdline, count, json_of, number, open_ro, path_arg, process_gone,
    reclaim, reclaim_within, rows,
};

/// A hang guard, not a timing assertion.
const LIMIT: Duration = Duration::from_secs(120);

/// `run --json` with `args`, on `db` in a fresh folder, at full speed unless `args` set a pace.
fn night(db: &Path, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut all = vec!["run", "--json", "--db", path_arg(db)];
    if !args.contains(&"--delay-ms") {
        all.extend(["--delay-ms", "0"]);
    }
    all.extend_from_slice(args);
    let run = reclaim_within(&all, &[], LIMIT);
    (run.code, json_of(&run))
}

/// The vendor's database beside a warehouse, as reclaim names it.
fn vendor_db(db: &Path) -> std::path::PathBuf {
    let stem = db
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("warehouse");
    db.with_file_name(format!("{stem}.vendor.sqlite"))
}

/// Messages the vendor really sent (a replayed or refused request sends none).
fn sent(vendor: &Path, task: Option<&str>) -> u64 {
    let conn = open_ro(vendor);
    match task {
        Some(task) => count(
            &conn,
            &format!(
                "SELECT count(*) FROM deliveries WHERE outcome = 'sent' AND task_id = '{task}'"
            ),
        ),
        None => count(
            &conn,
            "SELECT count(*) FROM deliveries WHERE outcome = 'sent'",
        ),
    }
}

fn sent_distinct(vendor: &Path) -> u64 {
    count(
        &open_ro(vendor),
        "SELECT count(DISTINCT task_id) FROM deliveries WHERE outcome = 'sent'",
    )
}

fn outcomes(vendor: &Path, outcome: &str) -> u64 {
    count(
        &open_ro(vendor),
        &format!("SELECT count(*) FROM deliveries WHERE outcome = '{outcome}'"),
    )
}

#[test]
fn guarded_with_email_killed_after_send_keeps_200_rows_and_sends_one_message_twice() {
    let tmp = tempdir();
    let db = tmp.path().join("g.db");
    let (code, json) = night(
        &db,
        &[
            "--strategy",
            "guarded",
            "--side-effect",
            "email",
            "--crash-at",
            "task-050:after-send",
        ],
    );
    assert_eq!(code, Some(1), "rows right, messages wrong: exit 1\n{json}");
    assert_eq!(rows(&open_ro(&db)), 200);
    assert_eq!(number(&json, "duplicated_task_ids"), 0);
    assert_eq!(number(&json, "messages_duplicated"), 1, "{json}");
    assert_eq!(number(&json, "messages_missing"), 0);
    let vendor = vendor_db(&db);
    assert_eq!(
        sent(&vendor, Some("task-050")),
        2,
        "the customer of task-050 got it twice"
    );
    assert_eq!(sent(&vendor, None), 201);
    assert_eq!(number(&json, "messages_received"), 201);
    assert!(
        json["messages_verdict"]
            .as_str()
            .is_some_and(|v| v.contains("more than once")),
        "{json}"
    );
}

#[test]
fn outbox_killed_after_send_or_after_relay_send_delivers_each_message_once() {
    for point in ["after-send", "after-relay-send"] {
        let tmp = tempdir();
        let db = tmp.path().join("o.db");
        let crash = format!("task-050:{point}");
        let (code, json) = night(&db, &["--strategy", "outbox", "--crash-at", &crash]);
        assert_eq!(code, Some(0), "{point}: {json}");
        assert_eq!(
            number(&json, "restarts"),
            1,
            "{point}: the crash fired: {json}"
        );
        assert_eq!(rows(&open_ro(&db)), 200, "{point}");
        let vendor = vendor_db(&db);
        assert_eq!(sent(&vendor, None), 200, "{point}");
        assert_eq!(sent_distinct(&vendor), 200, "{point}");
        assert_eq!(number(&json, "messages_duplicated"), 0, "{point}");
        assert_eq!(number(&json, "messages_missing"), 0, "{point}");
        if point == "after-relay-send" {
            // The restarted relay did deliver task-050 again: the vendor's key store answered.
            assert_eq!(outcomes(&vendor, "replayed"), 1, "{json}");
        }
    }
}

#[test]
fn outbox_against_a_vendor_that_ignores_keys_duplicates_after_relay_send() {
    let tmp = tempdir();
    let db = tmp.path().join("i.db");
    let (code, json) = night(
        &db,
        &[
            "--strategy",
            "outbox",
            "--vendor-keys",
            "ignore",
            "--crash-at",
            "task-050:after-relay-send",
        ],
    );
    assert_eq!(code, Some(1), "{json}");
    assert_eq!(rows(&open_ro(&db)), 200);
    assert_eq!(number(&json, "messages_duplicated"), 1);
    assert_eq!(sent(&vendor_db(&db), Some("task-050")), 2);
}

#[test]
fn keys_that_expire_before_the_relays_restart_duplicate_too() {
    let tmp = tempdir();
    let db = tmp.path().join("e.db");
    // The key is kept 0.1 s; the relay comes back 300 sim seconds after its crash: 0.5 s of
    // real time at the default scale of 600.
    let (code, json) = night(
        &db,
        &[
            "--strategy",
            "outbox",
            "--vendor-keys",
            "expire=0.1",
            "--restart-delay",
            "300",
            "--crash-at",
            "task-050:after-relay-send",
        ],
    );
    assert_eq!(code, Some(1), "{json}");
    assert_eq!(sent(&vendor_db(&db), Some("task-050")), 2);
    assert_eq!(number(&json, "messages_duplicated"), 1);
}

#[test]
fn a_storm_of_kills_across_worker_and_relay_loses_and_doubles_no_message() {
    let tmp = tempdir();
    let db = tmp.path().join("s.db");
    let (code, json) = night(
        &db,
        &[
            "--strategy",
            "outbox",
            "--delay-ms",
            "10",
            "--kills",
            "25",
            "--kill-window",
            "0.05..0.3",
            "--vendor-drop-responses",
            "0.1",
            "--seed",
            "17",
        ],
    );
    assert_eq!(code, Some(0), "{json}");
    assert!(number(&json, "kills") >= 5, "the storm landed: {json}");
    let vendor = vendor_db(&db);
    assert_eq!(sent(&vendor, None), 200);
    assert_eq!(sent_distinct(&vendor), 200);
    assert_eq!(number(&json, "messages_duplicated"), 0);
    assert_eq!(number(&json, "messages_missing"), 0);
    // Lost responses were retried, and the key store answered the retries.
    assert!(outcomes(&vendor, "replayed") > 0, "{json}");
}

#[test]
fn lost_responses_make_a_worker_that_sends_without_a_key_send_twice() {
    let tmp = tempdir();
    let db = tmp.path().join("d.db");
    let (code, json) = night(
        &db,
        &[
            "--strategy",
            "guarded",
            "--side-effect",
            "email",
            "--vendor-drop-responses",
            "0.2",
            "--seed",
            "3",
        ],
    );
    assert_eq!(code, Some(1), "{json}");
    assert_eq!(number(&json, "kills"), 0, "no kill at all");
    assert_eq!(rows(&open_ro(&db)), 200);
    let duplicated = number(&json, "messages_duplicated");
    assert!(duplicated > 0, "{json}");
    let vendor = vendor_db(&db);
    assert_eq!(sent(&vendor, None), 200 + duplicated);
    assert_eq!(
        count(
            &open_ro(&vendor),
            "SELECT count(*) FROM deliveries WHERE response_dropped = 1"
        ),
        duplicated,
        "each lost response is one message sent again"
    );
}

#[test]
fn bad_side_effect_input_is_refused_in_one_line_before_anything_starts() {
    let tmp = tempdir();
    let db = tmp.path().join("x.db");
    let d = path_arg(&db);
    for (args, needle) in [
        (
            vec![
                "run",
                "--strategy",
                "guarded",
                "--side-effect",
                "email",
                "--vendor-keys",
                "forever",
                "--db",
                d,
            ],
            "not a key policy",
        ),
        (
            vec![
                "run",
                "--strategy",
                "guarded",
                "--vendor-keys",
                "ignore",
                "--db",
                d,
            ],
            "--side-effect email or use --strategy outbox",
        ),
        (
            vec![
                "run",
                "--strategy",
                "guarded",
                "--crash-at",
                "task-001:after-relay-send",
                "--db",
                d,
            ],
            "only the outbox strategy has a relay",
        ),
        (
            vec![
                "run",
                "--strategy",
                "guarded",
                "--crash-at",
                "task-001:after-send",
                "--db",
                d,
            ],
            "nothing is sent",
        ),
        (
            vec!["run", "--exec", "true", "--side-effect", "email", "--db", d],
            "--side-effect makes reclaim's own worker send",
        ),
        (
            vec![
                "run",
                "--strategy",
                "outbox",
                "--vendor-drop-responses",
                "1.5",
                "--db",
                d,
            ],
            "not a probability",
        ),
    ] {
        let run = reclaim(&args);
        assert_one_line_error(&run, needle);
        assert!(!db.exists(), "{args:?} created the warehouse");
        assert!(
            !vendor_db(&db).exists(),
            "{args:?} created the vendor's database"
        );
    }
    // A file that is not a vendor's database is left as it was.
    let other = tmp.path().join("notes.sqlite");
    std::fs::write(&other, b"").unwrap_or_else(|e| panic!("{e}"));
    let conn = rusqlite::Connection::open(&other).unwrap_or_else(|e| panic!("{e}"));
    conn.execute_batch("CREATE TABLE notes(x)")
        .unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    let before = std::fs::read(&other).unwrap_or_default();
    let run = reclaim_within(&["vendor", "--db", path_arg(&other)], &[], LIMIT);
    assert_one_line_error(&run, "is not a vendor's database");
    assert_eq!(std::fs::read(&other).unwrap_or_default(), before);
}

#[test]
fn a_relay_with_nothing_to_deliver_stops_by_itself() {
    let tmp = tempdir();
    let db = tmp.path().join("none.db");
    let run = reclaim_within(
        &[
            "relay",
            "--db",
            path_arg(&db),
            "--vendor",
            "127.0.0.1:9",
            "--idle-secs",
            "1",
        ],
        &[],
        LIMIT,
    );
    assert_one_line_error(&run, "the relay stops rather than wait forever");
    assert!(!db.exists(), "the relay created the warehouse");
}

#[test]
fn the_worker_and_the_relay_refuse_crash_points_they_never_pass() {
    let tmp = tempdir();
    let db = tmp.path().join("x.db");
    let d = path_arg(&db);
    for (args, needle) in [
        (
            vec![
                "worker",
                "--strategy",
                "guarded",
                "--crash-at",
                "task-001:after-send",
                "--db",
                d,
            ],
            "nothing is sent",
        ),
        (
            vec![
                "worker",
                "--strategy",
                "outbox",
                "--crash-at",
                "task-001:after-relay-send",
                "--db",
                d,
            ],
            "give it to `reclaim relay`",
        ),
        (
            vec![
                "relay",
                "--vendor",
                "127.0.0.1:9",
                "--crash-at",
                "task-001:after-commit",
                "--db",
                d,
            ],
            "only crash point is after-relay-send",
        ),
        (
            vec!["relay", "--vendor", "10.1.2.3:80", "--db", d],
            "not on loopback",
        ),
    ] {
        let run = reclaim(&args);
        assert_one_line_error(&run, needle);
        assert!(!db.exists(), "{args:?} created the warehouse");
    }
}

// ---------------------------------------------------------------------------------------------
// The vendor on its own, spoken to over HTTP.

/// `reclaim vendor` running; killed when dropped.
struct Vendor {
    child: Child,
    addr: SocketAddr,
}

impl Vendor {
    fn start(db: &Path, args: &[&str]) -> Self {
        let mut child = crate::support::reclaim_command()
            .arg("vendor")
            .arg("--db")
            .arg(db)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the vendor: {e}"));
        let mut first = String::new();
        if let Some(out) = child.stdout.take() {
            BufReader::new(out)
                .read_line(&mut first)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let addr: SocketAddr = first
            .trim()
            .strip_prefix("listening ")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("first line: {first:?}"));
        Self { child, addr }
    }

    /// POST /messages; the status and the response's headers and body, or `None` when the
    /// connection closed without an answer.
    fn post(&self, key: Option<&str>, body: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(self.addr).unwrap_or_else(|e| panic!("{e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap_or_else(|e| panic!("{e}"));
        let key = key
            .map(|k| format!("Idempotency-Key: {k}\r\n"))
            .unwrap_or_default();
        let request = format!(
            "POST /messages HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n{key}Connection: close\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        let status = response.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, response))
    }
}

impl Drop for Vendor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_vendor_listens_on_loopback_and_honours_an_idempotency_key_as_payment_apis_do() {
    let tmp = tempdir();
    let db = tmp.path().join("v.sqlite");
    let vendor = Vendor::start(&db, &[]);
    assert!(vendor.addr.ip().is_loopback(), "{}", vendor.addr);
    let body = r#"{"task":"task-007","text":"hello"}"#;
    let (first, _) = vendor
        .post(Some("k-7"), body)
        .unwrap_or_else(|| panic!("no answer"));
    assert_eq!(first, 201);
    let (again, replay) = vendor
        .post(Some("k-7"), body)
        .unwrap_or_else(|| panic!("no answer"));
    assert_eq!(again, 200);
    assert!(replay.contains("Idempotent-Replayed: true"), "{replay}");
    let other = r#"{"task":"task-007","text":"something else"}"#;
    let (refused, _) = vendor
        .post(Some("k-7"), other)
        .unwrap_or_else(|| panic!("no answer"));
    assert_eq!(refused, 422, "same key, another body");
    let (without, _) = vendor
        .post(None, body)
        .unwrap_or_else(|| panic!("no answer"));
    assert_eq!(without, 201, "no key: sent again");
    assert_eq!(sent(&db, Some("task-007")), 2);
    assert_eq!(outcomes(&db, "replayed"), 1);
    assert_eq!(outcomes(&db, "refused"), 1);
}

#[test]
fn a_vendor_that_ignores_keys_sends_every_retry_and_one_that_drops_responses_acts_in_silence() {
    let tmp = tempdir();
    let ignoring = Vendor::start(&tmp.path().join("i.sqlite"), &["--keys", "ignore"]);
    let body = r#"{"task":"task-001","text":"hi"}"#;
    for _ in 0..3 {
        assert_eq!(ignoring.post(Some("k"), body).map(|r| r.0), Some(201));
    }
    assert_eq!(sent(&tmp.path().join("i.sqlite"), Some("task-001")), 3);
    let silent = Vendor::start(&tmp.path().join("d.sqlite"), &["--drop-responses", "1"]);
    assert_eq!(silent.post(Some("k"), body), None, "no answer");
    assert_eq!(
        sent(&tmp.path().join("d.sqlite"), Some("task-001")),
        1,
        "but sent"
    );
}

// ---------------------------------------------------------------------------------------------
// No vendor or relay outlives reclaim.

/// Live `reclaim vendor` and `reclaim relay` processes whose command line names `dir`.
fn helpers_under(dir: &Path) -> Vec<i32> {
    let needle = dir.display().to_string();
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|&pid| {
                    let args = cmdline(pid);
                    !process_gone(pid)
                        && args.get(1).is_some_and(|a| a == "vendor" || a == "relay")
                        && args.iter().any(|a| a.contains(&needle))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Polls until `dir` has no vendor or relay left, failing after a second.
fn assert_none_left(dir: &Path, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let left = helpers_under(dir);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {left:?} outlived reclaim"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn no_vendor_or_relay_outlives_reclaim_on_any_exit_path() {
    // A night that ends by itself, and one that fails its messages (exit 1).
    let tmp = tempdir();
    let (code, _) = night(
        &tmp.path().join("a.db"),
        &["--strategy", "outbox", "--items", "20"],
    );
    assert_eq!(code, Some(0));
    assert_none_left(tmp.path(), "a finished night");
    // Interrupted: SIGTERM (caught, exit 2) and SIGKILL (nothing runs in reclaim any more).
    for signal in [Signal::SIGTERM, Signal::SIGKILL] {
        let tmp = tempdir();
        let db = tmp.path().join("b.db");
        let mut child = crate::support::reclaim_command()
            .args([
                "run",
                "--strategy",
                "outbox",
                "--delay-ms",
                "50",
                "--db",
                path_arg(&db),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while helpers_under(tmp.path()).len() < 2 {
            assert!(
                Instant::now() < deadline,
                "the vendor and the relay never both ran"
            );
            thread::sleep(Duration::from_millis(10));
        }
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        kill(pid, signal).unwrap_or_else(|e| panic!("{e}"));
        let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
        if signal == Signal::SIGTERM {
            assert_eq!(status.code(), Some(2), "{status}");
        }
        assert_none_left(tmp.path(), &format!("{signal}"));
    }
    // A panic in the driving loop (exit 101): the panic hook kills every registered group,
    // the vendor's among them.
    let tmp = tempdir();
    let db = tmp.path().join("p.db");
    let output = crate::support::reclaim_command()
        .args([
            "run",
            "--strategy",
            "outbox",
            "--delay-ms",
            "20",
            "--db",
            path_arg(&db),
        ])
        .env("RECLAIM_TEST_PANIC", "loop")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(output.status.code(), Some(101), "{output:?}");
    assert!(vendor_db(&db).exists(), "the vendor had started");
    assert_none_left(tmp.path(), "a panic in the loop");
}

// ---------------------------------------------------------------------------------------------
// Work that outlives the instance.

/// A storm in which no instance lives longer than 0.6 s, over a queue whose task-050 takes 1 s.
fn long_night(db: &Path, split: &str) -> (Option<i32>, serde_json::Value) {
    night(
        db,
        &[
            "--strategy",
            "guarded",
            "--delay-ms",
            "2",
            "--long-item",
            "task-050:1",
            "--split",
            split,
            "--kills",
            "1000",
            "--kill-window",
            "0.3..0.6",
            "--max-restarts",
            "12",
            "--seed",
            "5",
        ],
    )
}

#[test]
fn the_long_item_never_completes_in_one_piece_and_completes_in_steps_losing_and_doubling_nothing() {
    let tmp = tempdir();
    let whole = tmp.path().join("whole.db");
    let (code, json) = long_night(&whole, "1");
    assert_eq!(code, Some(1), "{json}");
    assert_eq!(json["completed"], false, "{json}");
    assert!(
        json["never_completed"]
            .as_str()
            .is_some_and(|t| t.contains("never completed")),
        "{json}"
    );
    let conn = open_ro(&whole);
    // Every task before the long one, once; nothing after it; nothing doubled.
    assert_eq!(rows(&conn), 50, "{json}");
    assert_eq!(
        count(&conn, "SELECT count(DISTINCT task_id) FROM records"),
        50
    );
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM records WHERE task_id >= 'task-050'"
        ),
        0
    );

    let split = tmp.path().join("split.db");
    let (code, json) = long_night(&split, "10");
    assert_eq!(code, Some(0), "{json}");
    assert!(number(&json, "kills") >= 2, "the same storm: {json}");
    let conn = open_ro(&split);
    assert_eq!(rows(&conn), 200);
    assert_eq!(
        count(&conn, "SELECT count(DISTINCT task_id) FROM records"),
        200
    );
    // Nine steps committed on their own; the tenth is the row's transaction.
    assert_eq!(
        count(
            &conn,
            "SELECT count(*) FROM steps WHERE task_id = 'task-050'"
        ),
        9
    );
}

#[test]
fn split_needs_a_strategy_whose_checkpoint_commits_with_the_row() {
    let tmp = tempdir();
    let db = tmp.path().join("x.db");
    let run = reclaim(&[
        "run",
        "--strategy",
        "two-commit",
        "--split",
        "4",
        "--db",
        path_arg(&db),
    ]);
    assert_one_line_error(&run, "guarded or outbox");
    let run = reclaim(&[
        "run",
        "--strategy",
        "guarded",
        "--long-item",
        "task-900:1",
        "--db",
        path_arg(&db),
    ]);
    assert_one_line_error(&run, "--long-item");
    assert!(!db.exists());
}

#[test]
fn a_scenario_lane_that_cannot_leave_the_database_as_it_says_is_refused_in_one_line() {
    for (lane, needle) in [
        (
            "strategy = \"guarded\"\nvendor_keys = \"ignore\"",
            "vendor_keys and vendor_drop_responses need",
        ),
        (
            "strategy = \"outbox\"\nvendor_keys = \"sometimes\"",
            "not a key policy",
        ),
        (
            "strategy = \"outbox\"\nvendor_drop_responses = 2.0",
            "vendor_drop_responses",
        ),
        (
            "strategy = \"guarded\"\ncrash_at = \"task-001:after-relay-send\"",
            "never passes that point",
        ),
        ("strategy = \"two-commit\"\nsplit = 4", "guarded or outbox"),
        (
            "strategy = \"guarded\"\nlong_item = \"task-999:1\"",
            "long_item",
        ),
        (
            "strategy = \"guarded\"\nside_effect = \"fax\"",
            "expected `email`",
        ),
    ] {
        let text = format!("title = \"t\"\n[[lane]]\n{lane}\n");
        crate::support::assert_scenario_refused("lane.toml", text.as_bytes(), needle);
    }
}

#[test]
fn every_shipped_scenario_that_sends_reaches_a_vendor_and_the_others_do_not() {
    for name in ["side-effects", "vendor-forgets"] {
        let scenario = reclaim::scenario::Scenario::load(name).unwrap_or_else(|e| panic!("{e}"));
        let config = scenario.engine_config(Path::new("/nowhere"), 1, BIN.into());
        assert!(
            config
                .lanes
                .iter()
                .all(reclaim::engine::LaneConfig::needs_vendor),
            "{name}"
        );
    }
    let long = reclaim::scenario::Scenario::load("long-item").unwrap_or_else(|e| panic!("{e}"));
    let config = long.engine_config(Path::new("/nowhere"), 1, BIN.into());
    assert_eq!(
        config.lanes.iter().map(|l| l.split).collect::<Vec<_>>(),
        [1, 10],
        "one lane in one piece, one in steps"
    );
    assert!(config.lanes.iter().all(|l| l.long_item.is_some()));
}

/// vendor-forgets headless: each relay's planned crash and its death are one moment, the
/// crash's (its row's commit). The clock used to let go of that moment at the relay's `crash`
/// line, before the dead relay was reaped: on a loaded machine the death was then stamped
/// wherever the clock had run to (3 nights of 8 beside four busy loops).
#[test]
fn a_relays_planned_crash_and_its_death_fall_on_one_second() {
    let tmp = tempdir();
    // At 16x: the clock runs sixteen times as far past the crash while the relay is reaped.
    let run = crate::support::reclaim_in_dir(
        tmp.path(),
        &["run", "--scenario", "vendor-forgets", "--speed", "16"],
        LIMIT,
    );
    // 1: the lane whose vendor ignores keys sends a message twice, as the scenario teaches.
    assert_eq!(run.code, Some(1), "{run:?}");
    for lane in ["vendor honours keys", "vendor ignores keys"] {
        let second_of = |what: &str| -> Vec<&str> {
            (run.stdout.lines())
                .filter(|l| l.contains(lane) && l.contains(what))
                .filter_map(|l| l.split_whitespace().next())
                .collect()
        };
        let crash = second_of("at=task-050:after-relay-send");
        let death = second_of("instance reclaimed by host");
        assert_eq!(crash.len(), 1, "{lane}: {}", run.stdout);
        assert_eq!(crash, death, "{lane}: {}", run.stdout);
    }
}

#[test]
fn a_recorded_night_is_judged_at_the_receiver_by_replay_check_too() {
    let tmp = tempdir();
    let db = tmp.path().join("g.db");
    let rec = tmp.path().join("g.rec");
    let run = reclaim_within(
        &[
            "run",
            "--strategy",
            "guarded",
            "--side-effect",
            "email",
            "--crash-at",
            "task-050:after-send",
            "--delay-ms",
            "0",
            "--db",
            path_arg(&db),
            "--record",
            path_arg(&rec),
        ],
        &[],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let check = reclaim(&["replay", path_arg(&rec), "--check", "--json"]);
    assert_eq!(
        check.code,
        Some(1),
        "rows right, messages wrong: {}",
        check.stdout
    );
    let json = json_of(&check);
    assert_eq!(json["lanes"][0]["derived_status"], "ok", "{json}");
    assert_eq!(json["lanes"][0]["messages"]["duplicated"], 1, "{json}");
}

#[test]
fn prove_outbox_passes_every_test_and_its_sweep_covers_the_relays_crash_point() {
    // 100 items, not the default 200: a second of work still outlasts one kill window
    // (0.2..0.9 s), the sweep's first, middle and last task are there at any size, and each of
    // the sweep's 18 nights is half as long (at 200, a loaded machine ran past the deadline).
    let run = reclaim_within(
        &[
            "prove",
            "--strategy",
            "outbox",
            "--items",
            "100",
            // One kill a run: a second and third would often find the second of work done,
            // and a planned kill that never fired leaves the test untested.
            "--kills",
            "1",
            "--seed",
            "7",
            "--json",
        ],
        &[],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let json = json_of(&run);
    assert_eq!(number(&json, "passed"), 4, "{json}");
    let sweep = &json["tests"][3];
    let detail = sweep["detail"].as_str().unwrap_or_default();
    // Six points (after-send and after-relay-send among them) at three tasks, each fired.
    assert!(detail.starts_with("18 crashes"), "{detail}");
    assert_eq!(sweep["tested"], true, "{sweep}");
}

#[test]
fn the_side_effects_scenario_shows_the_email_sent_twice_beside_right_rows_and_quits_clean() {
    let tmp = tempdir();
    let mut dashboard = crate::support::Dashboard::start(
        &["tui", "--scenario", "side-effects"],
        tmp.path(),
        crate::support::COLS,
        crate::support::ROWS,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // Faster, and past each caption's hold, so the night ends sooner; what is shown does not
    // depend on the pace.
    dashboard.send(b"+++").unwrap_or_else(|e| panic!("{e}"));
    dashboard
        .wait_past_captions(
            "guarded's duplicate email and the outbox's clean count",
            Instant::now() + LIMIT,
            |screen| {
                let text = screen.contents();
                let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
                words.contains("messages WRONG: 1 sent twice")
                    && words.contains("messages 201 distinct 200 dup 1")
                    && words.contains("messages 200 distinct 200 dup 0")
                    && words.matches("rows 200 distinct 200 dup 0").count() == 2
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success(), "{status:?}");
    assert_none_left(tmp.path(), "q in the dashboard");
}
