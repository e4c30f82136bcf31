//! What reclaim keeps of its nights: one home per user under TMPDIR, a folder per night, the
//! `--keep always|failed|never` policy, the bound on what the default keeps, and `reclaim
//! kept`, which lists them and removes only its own.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::Dashboard;
use crate::support::{COLS, PROMPTLY, ROWS, past_the_first_caption};
use crate::support::{Run, assert_one_line_error, json_of, path_arg, reclaim_within};

const LIMIT: Duration = Duration::from_secs(120);
/// `base::kept::BOUND`: how many nights `--keep failed` keeps.
const BOUND: usize = reclaim::base::kept::BOUND;

fn home(tmp: &Path) -> PathBuf {
    tmp.join(format!("reclaim-{}", nix::unistd::geteuid()))
}

fn reclaim_in(tmp: &Path, args: &[&str]) -> Run {
    reclaim_within(args, &[("TMPDIR", tmp)], LIMIT)
}

/// A night whose data goes wrong (naive, killed once), in a fraction of a second.
const FAILING: [&str; 9] = [
    "run",
    "--strategy",
    "naive",
    "--items",
    "6",
    "--kill-at-task",
    "2",
    "--delay-ms",
    "1",
];
/// A night that holds.
const HOLDING: [&str; 7] = [
    "run",
    "--strategy",
    "guarded",
    "--items",
    "6",
    "--delay-ms",
    "1",
];

fn with<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

/// `reclaim kept --json`'s nights.
fn listed(tmp: &Path) -> Vec<serde_json::Value> {
    let run = reclaim_in(tmp, &["kept", "--json"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    json_of(&run)["nights"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entries(dir: &Path) -> usize {
    fs::read_dir(dir).map_or(0, Iterator::count)
}

/// A CI loop under the default policy: every failing night kept until the bound, then the
/// oldest go; a night that holds is removed. `reclaim kept` lists exactly what is there, with
/// its size and verdict.
#[test]
fn under_the_default_what_is_kept_is_bounded_and_listed() {
    let tmp = crate::support::tempdir();
    let mut first_kept = None;
    for n in 0..BOUND + 3 {
        let run = reclaim_in(tmp.path(), &FAILING);
        assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
        let line = run
            .stdout
            .lines()
            .find(|l| l.starts_with("database "))
            .unwrap_or_else(|| panic!("no database line:\n{}", run.stdout));
        assert!(
            line.contains(" kept (--keep failed: the night failed"),
            "{line}"
        );
        if n == 0 {
            first_kept = line.split_whitespace().nth(1).map(PathBuf::from);
        }
        if n == BOUND {
            assert!(line.contains("1 older night removed"), "{line}");
        }
    }
    let holds = reclaim_in(tmp.path(), &HOLDING);
    assert_eq!(holds.code, Some(0), "{}", holds.stdout);
    assert!(
        holds
            .stdout
            .lines()
            .any(|l| l
                == "database     removed (--keep failed: nothing failed; --keep always keeps it)"),
        "{}",
        holds.stdout
    );
    let nights = listed(tmp.path());
    assert_eq!(nights.len(), BOUND, "{nights:#?}");
    assert_eq!(entries(&home(tmp.path())), BOUND);
    for night in &nights {
        assert_eq!(night["policy"], "failed", "{night}");
        assert_eq!(night["failed"], true, "{night}");
        assert!(night["bytes"].as_u64().is_some_and(|b| b > 0), "{night}");
        let verdict = night["verdict"].as_str().unwrap_or_default();
        assert!(verdict.contains("DATA WRONG"), "{night}");
        assert!(
            night["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("run-naive-")),
            "{night}"
        );
    }
    // The oldest went first.
    let first = first_kept.unwrap_or_default();
    assert!(!first.exists(), "{} outlived the bound", first.display());
    // The human list: a header, a line per night, sizes and ages.
    let list = reclaim_in(tmp.path(), &["kept"]);
    assert_eq!(list.code, Some(0), "{}", list.stderr);
    assert!(
        list.stdout.starts_with(&format!(
            "reclaim kept  {}  {BOUND} nights, ",
            path_arg(&home(tmp.path()))
        )),
        "{}",
        list.stdout
    );
    assert_eq!(
        list.stdout
            .lines()
            .filter(|l| l.starts_with("run-naive-"))
            .count(),
        BOUND,
        "{}",
        list.stdout
    );
    // --clean removes them all, and the home with them.
    let clean = reclaim_in(tmp.path(), &["kept", "--clean"]);
    assert_eq!(clean.code, Some(0), "{}", clean.stderr);
    assert!(
        clean
            .stdout
            .contains(&format!("reclaim kept --clean: {BOUND} nights removed")),
        "{}",
        clean.stdout
    );
    assert_eq!(entries(tmp.path()), 0, "{}", clean.stdout);
}

/// `--keep never` on every command that makes a night folder: nothing is left, whatever the
/// verdict; `--keep always` keeps a night that held.
#[test]
fn keep_never_leaves_nothing_and_always_keeps_a_night_that_held() {
    let tmp = crate::support::tempdir();
    for args in [
        with(&FAILING, &["--keep", "never"]),
        with(&HOLDING, &["--keep", "never", "--json"]),
        vec![
            "prove",
            "--strategy",
            "naive",
            "--items",
            "3",
            "--delay-ms",
            "1",
            "--keep",
            "never",
        ],
        vec![
            "run",
            "--scenario",
            "incident",
            "--speed",
            "16",
            "--keep",
            "never",
        ],
    ] {
        let run = reclaim_in(tmp.path(), &args);
        assert!(matches!(run.code, Some(0 | 1)), "{args:?}: {}", run.stderr);
        assert!(
            run.stdout.contains("removed (--keep never)"),
            "{args:?}:\n{}",
            run.stdout
        );
        assert_eq!(entries(tmp.path()), 0, "{args:?} left something");
    }
    // `--keep` alone is `always`, as the flag was before it took a policy.
    let run = reclaim_in(tmp.path(), &with(&HOLDING, &["--keep"]));
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains(" kept (--keep always;"),
        "{}",
        run.stdout
    );
    let nights = listed(tmp.path());
    assert_eq!(nights.len(), 1);
    assert_eq!(nights[0]["policy"], "always");
    assert_eq!(nights[0]["verdict"], "PASS");
}

/// `reclaim kept --remove` removes only a folder reclaim made (its marker inside), never a
/// link, a folder of someone else's, or a path outside the home; `--clean` leaves them too.
#[test]
fn only_reclaims_own_nights_are_removed() {
    let tmp = crate::support::tempdir();
    let run = reclaim_in(tmp.path(), &FAILING);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let home = home(tmp.path());
    let theirs = home.join("photos");
    fs::create_dir(&theirs).unwrap_or_else(|e| panic!("{e}"));
    fs::write(theirs.join("cat.jpg"), "meow").unwrap_or_else(|e| panic!("{e}"));
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap_or_else(|e| panic!("{e}"));
    fs::write(elsewhere.join(".reclaim-night"), "{}").unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&elsewhere, home.join("link")).unwrap_or_else(|e| panic!("{e}"));
    for name in ["photos", "link", "../elsewhere", path_arg(&elsewhere)] {
        let run = reclaim_in(tmp.path(), &["kept", "--remove", name]);
        assert_one_line_error(&run, "is not a night reclaim kept");
    }
    let clean = reclaim_in(tmp.path(), &["kept", "--clean"]);
    assert_eq!(clean.code, Some(0), "{}", clean.stderr);
    assert!(clean.stdout.contains("1 night removed"), "{}", clean.stdout);
    assert!(theirs.join("cat.jpg").is_file() && elsewhere.is_dir());
    assert!(home.join("link").is_symlink());
}

/// A home planted by someone else (a link to a folder of theirs) is refused in one line
/// before the night starts, and nothing is written through it.
#[test]
fn a_planted_home_is_refused() {
    let tmp = crate::support::tempdir();
    let victim = tmp.path().join("victim");
    fs::create_dir(&victim).unwrap_or_else(|e| panic!("{e}"));
    std::os::unix::fs::symlink(&victim, home(tmp.path())).unwrap_or_else(|e| panic!("{e}"));
    let run = reclaim_in(tmp.path(), &FAILING);
    assert_one_line_error(&run, "is not reclaim's folder of yours (a symbolic link)");
    assert_eq!(run.stdout, "");
    assert_eq!(entries(&victim), 0);
}

/// `--keep` beside `--db` would say something untrue (a `--db` is the user's, never
/// removed): refused before anything is made.
#[test]
fn keep_beside_db_is_refused() {
    let tmp = crate::support::tempdir();
    let db = tmp.path().join("w.db");
    let run = reclaim_in(
        tmp.path(),
        &with(&FAILING, &["--db", path_arg(&db), "--keep", "never"]),
    );
    assert_one_line_error(&run, "with --db the warehouse is yours");
    assert_eq!(entries(tmp.path()), 0);
}

/// The dashboard's folder follows the policy too: quit before any lane's data went wrong,
/// the default removes it and says so.
#[test]
fn the_dashboard_left_early_keeps_nothing_under_the_default() {
    let tmp = crate::support::tempdir();
    let mut dashboard =
        Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap_or_else(|e| panic!("{e}"));
    past_the_first_caption(&mut dashboard);
    dashboard
        .wait_for(
            "the night's folder",
            Instant::now() + Duration::from_secs(10),
            |_| entries(&home(tmp.path())) == 1,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{status:?}:\n{}", dashboard.text());
    let text = dashboard.text();
    assert!(
        text.contains("removed (--keep failed: nothing failed"),
        "{text}"
    );
    assert_eq!(entries(tmp.path()), 0, "{text}");
}

/// Quit while a lane's panel shows its data wrong, before any verdict was read: the night
/// failed, so the default keeps its folder (it used to wait for a verdict and remove it).
#[test]
fn the_dashboard_left_once_the_data_went_wrong_keeps_the_night() {
    let tmp = crate::support::tempdir();
    let mut dashboard =
        Dashboard::start(&[], tmp.path(), COLS, ROWS).unwrap_or_else(|e| panic!("{e}"));
    past_the_first_caption(&mut dashboard);
    // The host's kill at 02:11:47; naive's restart writes task-000 again at 02:12:07, long
    // before either lane ends at 02:15:21 and 02:19:31 and its verdict is read.
    dashboard
        .wait_past_captions(
            "naive's data wrong on its panel",
            Instant::now() + Duration::from_secs(60),
            |screen| screen.contents().contains("DATA WRONG"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{status:?}:\n{}", dashboard.text());
    let text = dashboard.text();
    assert!(
        text.contains("kept (--keep failed: the night failed"),
        "{text}"
    );
    assert_eq!(entries(&home(tmp.path())), 1, "{text}");
}
