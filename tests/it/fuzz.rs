//! Property tests (proptest) of the parsers for the files a user hands reclaim: scenarios and
//! session recordings. Arbitrary text and bytes, TOML made of the scenario's own keys, and
//! mutations of every shipped scenario and of a real recording must never panic, whatever reads
//! the result next (the engine's configuration, `replay --check`, the replay dashboard), and every
//! refusal must be one line.
//!
//! 256 cases per property by default, a few seconds in all; for a longer campaign:
//! `PROPTEST_CASES=100000 cargo test --test it fuzz`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::test_runner::Config;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use reclaim::cli::ReplayArgs;
use reclaim::record::Recording;
use reclaim::scenario::{SHIPPED, Scenario};
use reclaim::tui::Screen as _;
use reclaim::tui::keymap::KeyAction;
use reclaim::tui::replay::ReplayApp;
use reclaim::tui::theme::Theme;
use reclaim::tui::ui;

use crate::support::record_short_night;

/// 256 cases, or `PROPTEST_CASES` when set (a longer campaign). No regression files are written
/// into the source tree: a failure prints its minimal input, to be kept as a plain test.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// For the properties that run the real binary once per case: a quarter of `config`'s cases.
fn binary_config() -> Config {
    let base = config();
    Config {
        cases: (base.cases / 4).max(1),
        ..base
    }
}

fn temp_file(bytes: &[u8]) -> Result<tempfile::NamedTempFile, TestCaseError> {
    let mut file = tempfile::NamedTempFile::new_in(crate::support::scratch())
        .map_err(|e| TestCaseError::fail(format!("no temporary file: {e}")))?;
    file.write_all(bytes)
        .map_err(|e| TestCaseError::fail(format!("cannot write {}: {e}", file.path().display())))?;
    Ok(file)
}

/// `reclaim ARGS FILE`: its exit code is one of `codes`, it never panics, and an exit 2 is
/// exactly one line on stderr in reclaim's own words.
fn check_binary(args: &[&str], file: &Path, codes: &[i32]) -> Result<(), TestCaseError> {
    let mut all: Vec<&str> = args.to_vec();
    all.push(crate::support::path_arg(file));
    let run = crate::support::reclaim(&all);
    prop_assert!(
        run.code.is_some_and(|c| codes.contains(&c)),
        "exit {:?}: {}",
        run.code,
        run.stderr
    );
    if run.code == Some(2) {
        let lines = run.stderr_lines();
        prop_assert_eq!(lines.len(), 1, "{}", run.stderr);
        prop_assert!(lines[0].starts_with("reclaim: error: "), "{}", run.stderr);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

/// A refusal is one line, whatever the input spelled (newlines in values are escaped).
fn one_line(shown: &str) -> Result<(), TestCaseError> {
    prop_assert!(!shown.contains('\n'), "more than one line: {:?}", shown);
    prop_assert!(!shown.trim().is_empty(), "an empty message");
    Ok(())
}

/// Parses `text`; a refusal names the file in one line, and a scenario that parses
/// must turn into an engine configuration (durations from its numbers) without a panic.
fn check_scenario(text: &str) -> Result<(), TestCaseError> {
    match Scenario::parse("fuzz.toml", text) {
        Ok(scenario) => {
            let config = scenario.engine_config(Path::new("/nonexistent"), 1, PathBuf::from("x"));
            prop_assert_eq!(config.lanes.len(), scenario.lanes.len());
        }
        Err(error) => {
            let shown = error.to_string();
            prop_assert!(shown.starts_with("scenario fuzz.toml: "), "{}", shown);
            one_line(&shown)?;
        }
    }
    Ok(())
}

/// A float as TOML writes one, around the ranges scenarios accept, with the edge cases.
fn toml_float() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (-10.0..200_000.0_f64).prop_map(|x| format!("{x:?}")),
        1 => select(vec![
            "0.0", "0.01", "-1.0", "1.0", "86400.0", "86401.0", "100000.0", "1e300", "nan",
            "inf", "-inf", "5",
        ])
        .prop_map(ToString::to_string),
    ]
}

/// An integer, mostly small, with the edges of every range a scenario checks (and, rarely,
/// something that is not an unsigned integer at all).
fn toml_int() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (0_u64..300).prop_map(|n| n.to_string()),
        4 => select(vec![
            "0",
            "1",
            "6",
            "7",
            "8",
            "9",
            "100000",
            "100001",
            "100000000",
            "100000001",
            "18446744073709551615",
        ])
        .prop_map(ToString::to_string),
        1 => select(vec!["-1", "1.5", "\"3\"", "99999999999999999999"]).prop_map(ToString::to_string),
    ]
}

/// A TOML string chosen from `values`, now and then any printable one, and rarely a value that
/// is not a string at all.
fn toml_string(values: Vec<&'static str>) -> impl Strategy<Value = String> {
    prop_oneof![
        20 => select(values).prop_map(|v| format!("\"{v}\"")),
        // Printable, and neither a quote nor a backslash: still a TOML string.
        3 => "[ !#-\\[\\]-~\u{e9}\u{591c}]{0,30}".prop_map(|v| format!("\"{v}\"")),
        // With escapes: a value that spells a newline or a tab.
        1 => "([a-z]|\\\\n|\\\\t|\\\\u0000){1,6}".prop_map(|v| format!("\"{v}\"")),
        1 => select(vec!["3", "true", "[]", "{}", "[\"a\", 1]"]).prop_map(ToString::to_string),
    ]
}

fn tasks() -> Vec<&'static str> {
    vec![
        "task-000", "task-111", "task-199", "task-200", "111", "task-", "task-1x", "-1",
    ]
}

/// `key = value` lines for the top level of a scenario, each value mostly of the key's type.
fn top_line() -> impl Strategy<Value = String> {
    prop_oneof![
        toml_string(vec!["t", "The incident", "", " "]).prop_map(|v| format!("title = {v}")),
        toml_string(vec!["about it"]).prop_map(|v| format!("about = {v}")),
        (
            select(vec!["scale", "delay_ms", "restart_delay", "dead_man"]),
            toml_float()
        )
            .prop_map(|(k, v)| format!("{k} = {v}")),
        (select(vec!["items", "max_restarts", "seed"]), toml_int())
            .prop_map(|(k, v)| format!("{k} = {v}")),
    ]
}

fn host_line() -> impl Strategy<Value = String> {
    prop_oneof![
        (
            select(vec!["kill_at_task", "hang_at_task", "wipe_at_task"]),
            toml_string(tasks()),
        )
            .prop_map(|(k, v)| format!("{k} = {v}")),
        toml_int().prop_map(|v| format!("random_kills = {v}")),
        toml_string(vec![
            "0.2..0.9",
            "0.9..0.2",
            "0..0",
            "0..3601",
            "..",
            "1",
            "0.01..0.02"
        ])
        .prop_map(|v| format!("kill_window = {v}")),
        toml_float().prop_map(|v| format!("hang_for = {v}")),
    ]
}

fn lane_line() -> impl Strategy<Value = String> {
    prop_oneof![
        // Rarely: after strategy_first, a second one is a duplicate key.
        toml_string(vec!["guarded"]).prop_map(|v| format!("strategy = {v}")),
        toml_string(vec![
            "a",
            "b",
            "naive",
            "a/b",
            "",
            "abcdefghijklmnopqrstuvwxyz"
        ])
        .prop_map(|v| format!("name = {v}")),
        (select(vec!["workers", "batch"]), toml_int()).prop_map(|(k, v)| format!("{k} = {v}")),
        toml_string(vec![
            "task-050:after-row-commit",
            "task-000:before-write",
            "task-199:after-heartbeat",
            "task-200:after-commit",
            "task-050:sideways",
            "task-050",
        ])
        .prop_map(|v| format!("crash_at = {v}")),
    ]
}

fn caption_line() -> impl Strategy<Value = String> {
    prop_oneof![
        toml_string(vec![
            "02:00:00",
            "02:11:47",
            "23:59:59",
            "24:00:00",
            "2:3",
            "02:11:47:1"
        ])
        .prop_map(|v| format!("at = {v}")),
        toml_string(vec![
            "start", "kill", "restart", "resume", "done", "alert", "symptom", "lunch"
        ])
        .prop_map(|v| format!("on = {v}")),
        toml_string(vec!["naive", "guarded", "a", "nobody"]).prop_map(|v| format!("lane = {v}")),
        toml_string(vec!["The host reclaims the instance.", "", " "])
            .prop_map(|v| format!("text = {v}")),
    ]
}

/// `lines` joined, each key kept once: a repeated key is only TOML's "duplicate key", again
/// and again.
fn table(lines: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    lines
        .into_iter()
        .filter(|line| {
            let key = line.split(" = ").next().unwrap_or_default().to_string();
            let fresh = !seen.contains(&key);
            seen.push(key);
            fresh
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Up to `most` lines of `line`, mostly after `first` (a key the table requires).
fn table_of(
    first: impl Strategy<Value = String>,
    line: impl Strategy<Value = String>,
    most: usize,
) -> impl Strategy<Value = String> {
    (
        prop::option::weighted(0.95, first),
        prop::collection::vec(line, 0..most),
    )
        .prop_map(|(first, rest)| table(first.into_iter().chain(rest).collect()))
}

/// A scenario's shape (top-level keys, `[host]`, `[[lane]]`s, `[[caption]]`s) filled with keys
/// of each table and values mostly of their types, so most cases get past the TOML into the
/// validation, and some all the way to a night.
fn toml_like() -> impl Strategy<Value = String> {
    let strategy = select(crate::support::strategies()).prop_map(|s| format!("strategy = \"{s}\""));
    (
        table_of(Just("title = \"t\"".to_string()), top_line(), 6),
        prop::option::of(table_of(host_line(), host_line(), 4)),
        prop::collection::vec(table_of(strategy, lane_line(), 4), 0..7),
        prop::collection::vec(
            table_of(Just("text = \"t\"".to_string()), caption_line(), 4),
            0..3,
        ),
    )
        .prop_map(|(top, host, lanes, captions)| {
            let mut parts = vec![top];
            parts.extend(host.map(|host| format!("[host]\n{host}")));
            parts.extend(lanes.into_iter().map(|lane| format!("[[lane]]\n{lane}")));
            parts.extend(captions.into_iter().map(|c| format!("[[caption]]\n{c}")));
            parts.join("\n")
        })
}

/// A character to insert or replace with: mostly TOML's punctuation and digits, which change a
/// value or the structure, and now and then anything at all.
fn edit_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => select(vec![
            '0', '1', '5', '9', '-', '.', '"', '\'', '=', '[', ']', '{', '}', ',', '#', '\n', ' ',
            ':', '\\', 'e',
        ]),
        1 => any::<char>(),
    ]
}

/// Deletes (0), inserts (1) or replaces (2) the character at `at` of `chars`.
fn apply_edit(chars: &mut Vec<char>, op: u8, at: Index, with: char) {
    match op {
        0 if !chars.is_empty() => {
            chars.remove(at.index(chars.len()));
        }
        1 => chars.insert(at.index(chars.len() + 1), with),
        _ if !chars.is_empty() => {
            let i = at.index(chars.len());
            chars[i] = with;
        }
        _ => chars.push(with),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_scenario_parse_of_any_text_never_panics(text in any::<String>()) {
        check_scenario(&text)?;
    }

    #[test]
    fn fuzz_scenario_parse_of_toml_made_of_its_own_keys_never_panics(text in toml_like()) {
        check_scenario(&text)?;
    }

    #[test]
    fn fuzz_scenario_parse_of_a_mutated_shipped_scenario_never_panics(
        which in 0..SHIPPED.len(),
        edits in prop::collection::vec((0_u8..3, any::<Index>(), edit_char()), 1..8),
    ) {
        let mut chars: Vec<char> = SHIPPED[which].1.chars().collect();
        for (op, at, with) in edits {
            apply_edit(&mut chars, op, at, with);
        }
        check_scenario(&chars.into_iter().collect::<String>())?;
    }

}

proptest! {
    #![proptest_config(binary_config())]

    /// Stricter than the library's check: the real binary, given the file, says one line on
    /// stderr (`reclaim: error: ...`, exit 2) and nothing else, or accepts it.
    #[test]
    fn fuzz_scenario_refusals_are_one_line_strictly(text in toml_like()) {
        let file = temp_file(text.as_bytes())?;
        // Without a terminal, a scenario that parses is refused for the missing terminal: one
        // line too. Either way nothing starts.
        check_binary(&["tui", "--scenario"], file.path(), &[2])?;
    }
}

// ---------------------------------------------------------------------------------------------
// Recordings.

/// A real recording, made once for the whole module by the real binary.
fn real_recording() -> &'static [u8] {
    static RECORDING: OnceLock<Vec<u8>> = OnceLock::new();
    RECORDING.get_or_init(|| {
        let tmp = crate::support::tempdir();
        record_short_night(tmp.path())
    })
}

/// Loads `bytes` as a recording file. A refusal must be one line (`lines`); a recording that loads must
/// survive everything that reads one: its kill schedule, `replay --check` (text and JSON), and
/// the replay dashboard driven through every key it binds, drawn at a usual and a tiny size.
fn check_recording(bytes: &[u8]) -> Result<(), TestCaseError> {
    let mut file = tempfile::NamedTempFile::new_in(crate::support::scratch())
        .map_err(|e| TestCaseError::fail(format!("no temporary file: {e}")))?;
    file.write_all(bytes)
        .map_err(|e| TestCaseError::fail(format!("cannot write the recording: {e}")))?;
    let path = file.path().to_path_buf();
    let recording = match Recording::load(&path) {
        Ok(recording) => recording,
        Err(error) => return one_line(&error.to_string()),
    };
    let _ = recording.kill_times();
    let _ = recording.last_sim();
    for json in [false, true] {
        let args = ReplayArgs {
            file: path.clone(),
            check: true,
            json,
            export: None,
            at: None,
            size: (120, 40),
            theme: reclaim::tui::theme::ThemeChoice::Default,
            presenting: reclaim::cli::PresentingArgs::default(),
        };
        let mut out = Vec::new();
        if let Err(error) = reclaim::commands::replay_check::run(&args, &mut out) {
            one_line(&error.to_string())?;
        }
    }
    let mut app = ReplayApp::new(recording);
    let start = Instant::now();
    let draw = |app: &ReplayApp| {
        let view = app.view();
        for (width, height) in [(100, 30), (20, 6)] {
            let area = Rect::new(0, 0, width, height);
            let mut buffer = Buffer::empty(area);
            ui::render_to(area, &mut buffer, &view, Theme::from_env());
        }
    };
    draw(&app);
    let actions = [
        KeyAction::TogglePause,
        KeyAction::SpeedUp,
        KeyAction::NextEvent,
        KeyAction::ScrubForward,
        KeyAction::NextCaption,
        KeyAction::NextLane,
        KeyAction::ScrollUp,
        KeyAction::JumpEnd,
        KeyAction::PrevEvent,
        KeyAction::ScrubBack,
        KeyAction::PrevLane,
        KeyAction::SpeedDown,
        KeyAction::ScrollDown,
        KeyAction::ToggleHelp,
        KeyAction::JumpStart,
        KeyAction::ScrollEnd,
    ];
    for (i, action) in actions.into_iter().enumerate() {
        let now = start + Duration::from_secs(u64::try_from(i).unwrap_or(0));
        let ticked = app.tick(now).and_then(|()| app.update(action, now));
        if let Err(error) = ticked {
            one_line(&error.to_string())?;
        }
        draw(&app);
    }
    Ok(())
}

/// One change to a recording's bytes: delete, insert or replace a byte; change a digit (which
/// keeps the JSON valid and moves a number: a lane, a count, a time); drop, repeat or swap whole
/// lines; or cut the file short.
#[derive(Debug, Clone)]
enum Mutation {
    Delete(Index),
    Insert(Index, u8),
    Replace(Index, u8),
    Digit(Index, u8),
    DropLine(Index),
    RepeatLine(Index),
    SwapLines(Index, Index),
    Cut(Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        3 => select(b"0123456789-.e\"{}[],:\n \\".to_vec()),
        1 => any::<u8>(),
    ];
    prop_oneof![
        1 => any::<Index>().prop_map(Mutation::Delete),
        1 => (any::<Index>(), byte.clone()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => (any::<Index>(), byte).prop_map(|(i, b)| Mutation::Replace(i, b)),
        3 => (any::<Index>(), b'0'..=b'9').prop_map(|(i, b)| Mutation::Digit(i, b)),
        1 => any::<Index>().prop_map(Mutation::DropLine),
        1 => any::<Index>().prop_map(Mutation::RepeatLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        1 => any::<Index>().prop_map(Mutation::Cut),
    ]
}

fn mutate(bytes: &mut Vec<u8>, mutation: &Mutation) {
    let line_spans = |bytes: &[u8]| -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                spans.push((start, i + 1));
                start = i + 1;
            }
        }
        if start < bytes.len() {
            spans.push((start, bytes.len()));
        }
        spans
    };
    if bytes.is_empty() {
        if let Mutation::Insert(_, b) | Mutation::Replace(_, b) | Mutation::Digit(_, b) = mutation {
            bytes.push(*b);
        }
        return;
    }
    match mutation {
        Mutation::Delete(at) => {
            bytes.remove(at.index(bytes.len()));
        }
        Mutation::Insert(at, b) => bytes.insert(at.index(bytes.len() + 1), *b),
        Mutation::Replace(at, b) => {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        Mutation::Digit(at, b) => {
            let digits: Vec<usize> = (0..bytes.len())
                .filter(|&i| bytes[i].is_ascii_digit())
                .collect();
            if !digits.is_empty() {
                bytes[digits[at.index(digits.len())]] = *b;
            }
        }
        Mutation::DropLine(at) => {
            let spans = line_spans(bytes);
            let (start, end) = spans[at.index(spans.len())];
            bytes.drain(start..end);
        }
        Mutation::RepeatLine(at) => {
            let spans = line_spans(bytes);
            let (start, end) = spans[at.index(spans.len())];
            let line = bytes[start..end].to_vec();
            bytes.splice(end..end, line);
        }
        Mutation::SwapLines(a, b) => {
            let spans = line_spans(bytes);
            let (a, b) = (spans[a.index(spans.len())], spans[b.index(spans.len())]);
            let lines: Vec<Vec<u8>> = spans
                .iter()
                .map(|&span| {
                    let pick = if span == a {
                        b
                    } else if span == b {
                        a
                    } else {
                        span
                    };
                    bytes[pick.0..pick.1].to_vec()
                })
                .collect();
            *bytes = lines.concat();
        }
        Mutation::Cut(at) => bytes.truncate(at.index(bytes.len() + 1)),
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn fuzz_recording_load_of_any_bytes_never_panics(
        bytes in prop::collection::vec(any::<u8>(), 0..2048),
    ) {
        check_recording(&bytes)?;
    }

    #[test]
    fn fuzz_recording_load_of_lines_after_a_real_header_never_panics(
        lines in prop::collection::vec(
            prop_oneof![
                Just("{\"type\":\"end\",\"real_ms\":1,\"sim\":7300.0,\"lanes\":[]}".to_string()),
                Just("{\"type\":\"sample\",\"real_ms\":1,\"sim\":1e300,\"lanes\":[]}".to_string()),
                "\\{\"type\":\"(header|event|sample|end)\"[^\n]{0,40}\\}",
                "[^\n]{0,40}",
            ],
            0..12,
        ),
    ) {
        // The header of a real night, so the lines after it are read, not refused at line 1.
        let real = real_recording();
        let header = real.split(|&b| b == b'\n').next().unwrap_or_default();
        let mut bytes = header.to_vec();
        for line in &lines {
            bytes.push(b'\n');
            bytes.extend_from_slice(line.as_bytes());
        }
        check_recording(&bytes)?;
    }

    #[test]
    fn fuzz_recording_load_of_a_mutated_real_recording_never_panics(
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = real_recording().to_vec();
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        check_recording(&bytes)?;
    }

}

proptest! {
    #![proptest_config(binary_config())]

    /// Stricter than the library's check: `reclaim replay --check` on the mutated file, the real
    /// binary, exits 0 or 1 with a verdict, or 2 with exactly one line on stderr.
    #[test]
    fn fuzz_recording_refusals_are_one_line_strictly(
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let mut bytes = real_recording().to_vec();
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        let file = temp_file(&bytes)?;
        check_binary(&["replay", "--check"], file.path(), &[0, 1, 2])?;
    }
}

#[test]
fn the_real_recording_the_fuzzer_mutates_replays_whole() {
    let bytes = real_recording();
    let lines = bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert!(lines >= 3, "a header, samples and the end: {lines} lines");
    let mut file = tempfile::NamedTempFile::new_in(crate::support::scratch()).unwrap();
    file.write_all(bytes).unwrap();
    let recording = Recording::load(file.path()).unwrap();
    assert!(recording.end.is_some(), "the real night ended");
    assert!(!recording.truncated);
    check_recording(bytes).unwrap();
}
