//! A PostgreSQL password is never printed, recorded or exported, in any of the forms a URL
//! carries one (`user:PASSWORD@`, `?password=`), and the ways libpq takes one work instead of
//! the command line: `PGPASSWORD`, the password file (passed over, and said, when others may
//! read it) and a service file. Every output and every file a night leaves is searched for it.
//!
//! These tests need PostgreSQL's server programs (`support::pg_bin`; where they are missing the tests are ignored, with the reason).

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use crate::support::KeptServer;
use crate::support::{Run, assert_one_line_error, reclaim_command, run_within};
use crate::support::{folder, pg_bin, psql};

/// The password of the role the nights log in as: a string nothing else would print.
const SECRET: &str = "Qz7-pw-41xv";
const WRONG: &str = "Wr0ng-77qk";

/// `reclaim ARGS` in `dir` (its TMPDIR and working folder), with `env` set.
fn reclaim_with(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = reclaim_command();
    command
        .args(args)
        .env("TMPDIR", dir)
        .env("HOME", dir)
        .current_dir(dir);
    for name in ["PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    run_within(
        command,
        &format!("reclaim {args:?}"),
        Duration::from_secs(120),
    )
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                folders.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// The night, its recording, slides, cast, `replay --check`, `--json`, JUnit and errors, with
/// the password given every way: the password in none of them. Then PGPASSWORD, the password
/// file and a service file, each enough on its own.
#[test]
#[cfg_attr(
    reclaim_no_pg,
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql), not found when the tests were built"
)]
fn a_password_is_never_shown_and_libpqs_ways_of_giving_one_work() {
    let bin = pg_bin();
    let server = KeptServer::start(&bin);
    psql(
        &server.cluster,
        &format!(
            "CREATE ROLE carol LOGIN PASSWORD '{SECRET}'; GRANT CREATE ON DATABASE postgres TO carol"
        ),
    );
    let host = server.host();
    let dir = folder();
    let d = dir.path();
    let night = |url: &str, extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec![
            "run",
            "--strategy",
            "naive",
            "--items",
            "6",
            "--delay-ms",
            "0",
            "--warehouse",
            url,
        ];
        args.extend_from_slice(extra);
        reclaim_with(d, &args, env)
    };
    let in_url = format!("postgresql://carol:{SECRET}@{host}/postgres");
    let in_query = format!("postgresql://carol@{host}/postgres?password={SECRET}");
    let bare = format!("postgresql://carol@{host}/postgres");
    let mut runs = vec![
        night(
            &in_url,
            &["--kill-at-rows", "3", "--record", "a.jsonl"],
            &[],
        ),
        night(&in_query, &["--record", "b.jsonl", "--json"], &[]),
    ];
    for run in &runs {
        assert!(
            matches!(run.code, Some(0 | 1)),
            "{}\n{}",
            run.stdout,
            run.stderr
        );
    }
    assert!(
        runs[0].stdout.contains("postgresql://carol:***@"),
        "the server is named, its password as ***:\n{}",
        runs[0].stdout
    );
    let prove = reclaim_with(
        d,
        &[
            "prove",
            "--strategy",
            "keyed",
            "--items",
            "5",
            "--seed",
            "1",
            "--warehouse",
            &in_url,
            "--junit",
            "j.xml",
            "--json",
        ],
        &[],
    );
    assert!(
        matches!(prove.code, Some(0 | 1)),
        "{}\n{}",
        prove.stdout,
        prove.stderr
    );
    runs.push(prove);
    runs.extend(replays(d));
    let recording = std::fs::read_to_string(d.join("a.jsonl")).unwrap_or_default();
    assert!(
        recording.contains("carol:***@"),
        "the title names the night"
    );
    // Refusals: a wrong password, a URL the driver refuses, no password at all.
    let wrong = night(
        &format!("postgresql://carol:{WRONG}@{host}/postgres"),
        &[],
        &[],
    );
    assert_one_line_error(&wrong, "password authentication failed");
    let bad = night(&format!("{in_url}?bogus=1"), &[], &[]);
    assert_one_line_error(&bad, "unknown option");
    let missing = night(&bare, &[], &[]);
    assert_one_line_error(&missing, "PGPASSWORD, ~/.pgpass or a service");
    runs.extend([wrong, bad, missing]);
    let cluster = server.cluster.display().to_string();
    runs.extend(libpqs_ways(&night, d, &cluster, &bare));
    assert_absent(&runs, d);
}

/// A night to carol's server.
type Night<'a> = dyn Fn(&str, &[&str], &[(&str, &str)]) -> Run + 'a;

/// `PGPASSWORD`, the password file (refused while others may read it) and a service file, each
/// giving the password of a URL without one (`bare`) to the server in `cluster`.
fn libpqs_ways(night: &Night<'_>, d: &Path, cluster: &str, bare: &str) -> Vec<Run> {
    // The ways libpq takes a password, none on the command line.
    let by_env = night(bare, &[], &[("PGPASSWORD", SECRET)]);
    assert_eq!(by_env.code, Some(0), "PGPASSWORD: {}", by_env.stderr);
    let pgpass = d.join("pgpass");
    std::fs::write(&pgpass, format!("{cluster}:5432:postgres:carol:{SECRET}\n"))
        .unwrap_or_else(|e| panic!("{e}"));
    let pgpass_env = [("PGPASSFILE", pgpass.to_str().unwrap_or_default())];
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644))
        .unwrap_or_else(|e| panic!("{e}"));
    let readable = night(bare, &[], &pgpass_env);
    assert_one_line_error(&readable, "chmod 0600");
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("{e}"));
    let by_file = night(bare, &[], &pgpass_env);
    assert_eq!(by_file.code, Some(0), "~/.pgpass: {}", by_file.stderr);
    std::fs::remove_file(&pgpass).unwrap_or_else(|e| panic!("{e}"));
    let services = d.join(".pg_service.conf");
    std::fs::write(
        &services,
        format!(
            "[wh]\nhost={cluster}\nport=5432\ndbname=postgres\nuser=carol\npassword={SECRET}\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let by_service = night("postgres://", &[], &[("PGSERVICE", "wh")]);
    assert_eq!(by_service.code, Some(0), "PGSERVICE: {}", by_service.stderr);
    std::fs::remove_file(&services).unwrap_or_else(|e| panic!("{e}"));
    vec![by_env, readable, by_file, by_service]
}

/// The recordings `a.jsonl` and `b.jsonl` in `d` as a slide, casts and `replay --check`.
fn replays(d: &Path) -> Vec<Run> {
    let mut runs = Vec::new();
    for args in [
        &["replay", "a.jsonl", "--export", "a.svg", "--at", "02:00:00"][..],
        &["replay", "a.jsonl", "--export", "a.cast"],
        &["replay", "b.jsonl", "--export", "b.cast"],
        &["replay", "--check", "a.jsonl"],
        &["replay", "--check", "b.jsonl"],
    ] {
        let run = reclaim_with(d, args, &[]);
        assert!(matches!(run.code, Some(0 | 1)), "{args:?}: {}", run.stderr);
        runs.push(run);
    }
    runs
}

/// Neither password in any output of `runs` nor in any file under `d`.
fn assert_absent(runs: &[Run], d: &Path) {
    for run in runs {
        for secret in [SECRET, WRONG] {
            assert!(
                !run.stdout.contains(secret) && !run.stderr.contains(secret),
                "{secret} printed:\n{}\n{}",
                run.stdout,
                run.stderr
            );
        }
    }
    for secret in [SECRET, WRONG] {
        assert_eq!(
            files_holding(d, secret),
            Vec::<String>::new(),
            "{secret} in a file"
        );
    }
}
