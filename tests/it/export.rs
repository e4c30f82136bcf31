//! Exports of a recorded night (`replay FILE --export`), and the conventions generated from the
//! command line (`completions`, `man`). The night is the default incident, recorded once by the
//! real dashboard in a pseudo-terminal; each export is read back by an independent reader: a vt100
//! emulator for the cast, an XML parser for the SVG, plain splitting for the CSV.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use reclaim::engine::Mark;
use reclaim::record::Recording;

use crate::support::{assert_one_line_error, path_arg, reclaim};

/// The default incident recorded headless at 16x (`run --scenario incident --record --speed
/// 16`), shared by the tests that run while one holds it (a test holds it for its whole body), and
/// removed with its folder when the last lets go: a `static` is never dropped, and its folder
/// was left in the temporary folder after every run. A recording holds the same figures at
/// every second whichever screen made it and at any speed (`recorded_figures`), so the speed is
/// only the test's time: the dashboard took 42 s at 1x and 35 s at 16x (it holds each caption
/// for its reading time), headless at 16x a few seconds.
struct Incident {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl std::ops::Deref for Incident {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

fn incident() -> Arc<Incident> {
    static SHARED: Mutex<Weak<Incident>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(held) = shared.upgrade() {
        return held;
    }
    let dir = crate::support::tempdir();
    let path = dir.path().join("incident.jsonl");
    let args = [
        "run",
        "--scenario",
        "incident",
        "--record",
        path_arg(&path),
        "--speed",
        "16",
    ];
    let run = crate::support::reclaim_in_dir(dir.path(), &args, Duration::from_secs(120));
    // The incident's naive lane ends DATA WRONG: exit 1.
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let made = Arc::new(Incident { _dir: dir, path });
    *shared = Arc::downgrade(&made);
    made
}

/// `reclaim replay INCIDENT --export OUT EXTRA...` into a fresh folder; returns OUT.
fn export(incident: &Path, name: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = crate::support::tempdir();
    let out = dir.path().join(name);
    let mut args = vec!["replay", path_arg(incident), "--export", path_arg(&out)];
    args.extend_from_slice(extra);
    let run = reclaim(&args);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("wrote"), "{}", run.stdout);
    (dir, out)
}

#[test]
fn the_cast_plays_to_the_end_screen_with_a_marker_at_each_kill_restart_and_caption() {
    let incident = incident();
    let (_dir, cast) = export(&incident, "night.cast", &[]);
    let text = fs::read_to_string(&cast).unwrap_or_else(|e| panic!("{e}"));
    let mut lines = text.lines();
    let header: serde_json::Value =
        serde_json::from_str(lines.next().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(header["version"], 2);
    let (w, h) = (header["width"].as_u64(), header["height"].as_u64());
    assert_eq!((w, h), (Some(120), Some(40)));
    let size = |n: u64| std::num::NonZeroU16::new(u16::try_from(n).unwrap_or(0));
    let (Some(cols), Some(rows)) = (size(w.unwrap_or(0)), size(h.unwrap_or(0))) else {
        panic!("no size in the header: {header}");
    };
    let mut screen = vt100::Parser::new(rows, cols, 0);
    let mut markers = Vec::new();
    let mut last = 0.0;
    for line in lines {
        let event: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let t = event[0]
            .as_f64()
            .unwrap_or_else(|| panic!("no time: {line}"));
        assert!(t >= last, "time goes backwards at {line}");
        last = t;
        let data = event[2].as_str().unwrap_or_default();
        match event[1].as_str() {
            Some("o") => screen.process(data.as_bytes()),
            Some("m") => markers.push(data.to_string()),
            other => panic!("unknown event type {other:?}"),
        }
    }
    let end = screen.screen().contents();
    assert!(end.contains("rows 312"), "{end}");
    // A cast takes no keys: no footer of them.
    assert!(
        !end.contains("? help") && !end.contains("q quit"),
        "the interactive footer in a cast:\n{end}"
    );
    assert!(end.contains("rows 200"), "{end}");
    assert!(
        end.contains("112 task ids were written twice") || end.contains("DATA WRONG"),
        "{end}"
    );
    // One marker per kill and restart on record, and one per caption the night reached.
    let recording = Recording::load(&incident).unwrap_or_else(|e| panic!("{e}"));
    let count = |mark| {
        recording
            .events
            .iter()
            .filter(|e| e.mark == Some(mark))
            .count()
    };
    // Each marker is `02:11:47 WHAT ...`.
    let of = |what: &str| {
        markers
            .iter()
            .filter(|m| m.split(' ').nth(1) == Some(what))
            .count()
    };
    let (kills, restarts, captions) = (of("kill"), of("restart"), of("caption:"));
    assert_eq!(kills, count(Mark::Kill), "{markers:?}");
    assert_eq!(restarts, count(Mark::Restart), "{markers:?}");
    assert_eq!(captions, recording.header.captions.len(), "{markers:?}");
    assert!(kills >= 1 && restarts >= 1, "{markers:?}");
}

#[test]
fn the_svg_frame_parses_as_xml_and_holds_the_frames_text() {
    let incident = incident();
    let (_dir, svg) = export(
        &incident,
        "frame.svg",
        &["--at", "02:11:47", "--size", "100x30"],
    );
    let text = fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{e}"));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("not XML: {e}"));
    let words: String = doc
        .descendants()
        .filter(roxmltree::Node::is_text)
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join(" ");
    for needle in ["reclaim REPLAY", "02:11:47", "naive", "guarded", "timeline"] {
        assert!(words.contains(needle), "{needle} not in the SVG: {words}");
    }
    assert!(doc.root_element().has_tag_name("svg"));
}

#[test]
fn the_csv_has_a_row_per_sample_and_lane_and_its_last_naive_row_says_312() {
    let incident = incident();
    let (_dir, csv) = export(&incident, "night.csv", &[]);
    let text = fs::read_to_string(&csv).unwrap_or_else(|e| panic!("{e}"));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column = |name| {
        header
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| panic!("no {name} column: {header:?}"))
    };
    let (lane, rows, distinct) = (column("lane"), column("rows"), column("distinct"));
    let records: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let recording = Recording::load(&incident).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        records.len(),
        recording.samples.len() * recording.header.lanes.len()
    );
    let last_of = |name: &str| {
        records
            .iter()
            .rev()
            .find(|r| r[lane] == name)
            .unwrap_or_else(|| panic!("no {name} row"))
    };
    assert_eq!(last_of("naive")[rows], "312");
    assert_eq!(last_of("naive")[distinct], "200");
    assert_eq!(last_of("guarded")[rows], "200");
}

#[test]
fn an_export_is_refused_before_anything_is_written() {
    let incident = incident();
    let dir = crate::support::tempdir();
    let existing = dir.path().join("taken.csv");
    fs::write(&existing, "mine").unwrap_or_else(|e| panic!("{e}"));
    let cases: [(&[&str], &str); 5] = [
        (&["--export", path_arg(&existing)], "already exists"),
        // A cast or a plot is the whole night: a moment asked of it is not quietly dropped.
        (
            &["--export", "kill.cast", "--at", "02:11:47"],
            "--at names the moment of one frame",
        ),
        (
            &["--export", "kill.csv", "--at", "02:11:47"],
            "--at names the moment of one frame",
        ),
        (&["--export", "night.gif"], ".cast"),
        (
            &["--export", "small.svg", "--size", "30x10"],
            "smaller than",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["replay", path_arg(&incident)];
        args.extend_from_slice(extra);
        let run = crate::support::reclaim_in_dir(dir.path(), &args, Duration::from_secs(30));
        assert_one_line_error(&run, needle);
    }
    assert_eq!(fs::read_to_string(&existing).unwrap_or_default(), "mine");
    assert_eq!(fs::read_dir(dir.path()).map_or(0, Iterator::count), 1);
}

#[test]
fn bash_completions_pass_bash_n_and_the_manual_is_a_roff_page() {
    let run = reclaim(&["completions", "bash"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("reclaim"), "{}", run.stdout);
    let dir = crate::support::tempdir();
    let script = dir.path().join("reclaim.bash");
    fs::write(&script, &run.stdout).unwrap_or_else(|e| panic!("{e}"));
    let status = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .stdin(Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run bash: {e}"));
    assert!(status.success(), "bash -n refused the completion script");
    for shell in ["zsh", "fish"] {
        let run = reclaim(&["completions", shell]);
        assert_eq!(run.code, Some(0), "{shell}: {}", run.stderr);
        assert!(run.stdout.contains("replay"), "{shell}: {}", run.stdout);
    }
    let man = reclaim(&["man"]);
    assert_eq!(man.code, Some(0), "{}", man.stderr);
    assert!(man.stdout.contains(".TH reclaim"), "{}", man.stdout);
    assert!(man.stdout.contains(".SH NAME"), "{}", man.stdout);
}

/// Every figure a lane panel shows agrees with the moment shown: a verdict only from its done
/// line on (and then the rows' own), a claim only once its `done` is on the timeline, a
/// duplicate count in the verdict that is the one beside it.
fn assert_the_lane_is_of_its_moment(view: &reclaim::tui::view::Dashboard, lane: usize) {
    let l = &view.lanes[lane];
    let clock = view.clock;
    let done_shown = view.timeline.iter().any(|(line, _)| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.get(1..4) == Some(&[l.name.as_str(), "worker", "done"][..])
    });
    let what = format!(
        "{} at {clock}: rows {} distinct {} dup {}, claimed {:?}, derived {}",
        l.name, l.rows, l.distinct, l.duplicated, l.claimed, l.derived
    );
    assert_eq!(
        l.claimed.is_some(),
        done_shown,
        "a claim and its done line: {what}"
    );
    if l.duplicated > 0 {
        let ids = if l.duplicated == 1 { "id" } else { "ids" };
        assert_eq!(
            l.derived,
            format!("DATA WRONG ({} duplicated task {ids})", l.duplicated),
            "{what}"
        );
    } else if l.derived == "ok" {
        assert!(done_shown, "ok before the done line: {what}");
        assert_eq!((l.rows, l.distinct), (l.items, l.items), "{what}");
    } else {
        assert_eq!(
            l.derived,
            format!("in progress: {} of {} tasks", l.distinct, l.items),
            "{what}"
        );
    }
}

#[test]
fn a_replay_stepped_to_each_event_shows_the_figures_and_verdicts_of_that_moment() {
    use reclaim::tui::Screen as _;
    use reclaim::tui::keymap::KeyAction;
    let recording = Recording::load(&incident()).unwrap_or_else(|e| panic!("{e}"));
    let events = recording.events.len();
    let mut app = reclaim::tui::replay::ReplayApp::new(recording);
    let now = std::time::Instant::now();
    app.update(KeyAction::TogglePause, now)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut seen = Vec::new();
    for _ in 0..=events {
        app.update(KeyAction::NextEvent, now)
            .unwrap_or_else(|e| panic!("{e}"));
        let view = app.view();
        for lane in 0..view.lanes.len() {
            assert_the_lane_is_of_its_moment(&view, lane);
        }
        seen.push((view.clock.to_string(), view.lanes[0].derived.clone()));
    }
    // Stepped through the night: naive's duplicates grow from the restart on, and its end is
    // the postmortem's.
    assert!(
        seen.iter()
            .any(|(t, d)| t == "02:19:31" && d == "DATA WRONG (112 duplicated task ids)"),
        "{seen:?}"
    );
    let view = app.view();
    assert_eq!((view.lanes[0].rows, view.lanes[1].rows), (312, 200));
    assert_eq!(view.lanes[1].derived, "ok");
}

/// The text of each row of an exported SVG, and the part of it in each lane's box.
fn svg_rows(svg: &Path) -> Vec<String> {
    let text = fs::read_to_string(svg).unwrap_or_else(|e| panic!("{e}"));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("not XML: {e}"));
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|row| {
            row.descendants()
                .filter(roxmltree::Node::is_text)
                .filter_map(|n| n.text())
                .collect::<Vec<_>>()
                .join(" ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The lines of a lane's box (0: left, 1: right) in an SVG frame's rows holding `word`.
fn in_lane(rows: &[String], lane: usize, word: &str) -> Vec<String> {
    rows.iter()
        .filter_map(|row| {
            let parts: Vec<&str> = row
                .split(['┃', '│'])
                .filter(|p| !p.trim().is_empty())
                .collect();
            parts.get(lane).map(|p| p.trim().to_string())
        })
        .filter(|p| p.contains(word))
        .collect()
}

/// The number after `label` in a lane's figures line (`rows 114  distinct 112  dup 2`).
fn figure(line: &str, label: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == label)
        .unwrap_or_else(|| panic!("no {label} in {line}"));
    words[at + 1]
        .parse()
        .unwrap_or_else(|e| panic!("{label} in {line}: {e}"))
}

#[test]
fn slides_at_02_12_07_and_02_15_21_show_the_figures_and_verdicts_of_that_moment() {
    let incident = incident();
    let (_dir, svg) = export(&incident, "early.svg", &["--at", "02:12:07"]);
    let rows = svg_rows(&svg);
    let naive = in_lane(&rows, 0, "dup ");
    let dup = figure(&naive[0], "dup");
    // Restarted at 02:12:05, the naive worker has rewritten a task or two by 02:12:07.
    assert!(dup <= 2, "{naive:?}");
    let derived = in_lane(&rows, 0, "derived");
    let expected = if dup == 0 {
        "derived in progress".to_string()
    } else {
        format!("derived DATA WRONG ({dup} duplicated task id")
    };
    assert!(
        derived[0].starts_with(&expected),
        "{derived:?} with dup {dup}"
    );
    let guarded = in_lane(&rows, 1, "derived");
    assert!(
        guarded[0].starts_with("derived in progress"),
        "guarded is not over at 02:12:07: {guarded:?}"
    );
    assert!(in_lane(&rows, 1, "claimed")[0].contains("no done line yet"));

    let (_dir, svg) = export(&incident, "done.svg", &["--at", "02:15:21"]);
    let rows = svg_rows(&svg);
    let naive = in_lane(&rows, 0, "dup ");
    let dup = figure(&naive[0], "dup");
    assert!((80..=88).contains(&dup), "naive at 02:15:21: {naive:?}");
    let derived = in_lane(&rows, 0, "derived");
    assert!(
        derived[0].starts_with(&format!("derived DATA WRONG ({dup} duplicated task ids)")),
        "{derived:?}"
    );
    assert!(in_lane(&rows, 0, "claimed")[0].contains("no done line yet"));
    // Guarded's done line is at 02:15:21: its verdict, with the figures that end it.
    assert_eq!(in_lane(&rows, 1, "derived"), ["derived ok"]);
    assert_eq!(figure(&in_lane(&rows, 1, "ckpt ")[0], "rows"), 200);
    assert!(in_lane(&rows, 1, "claimed")[0].contains("rows_written=200"));
}

#[test]
fn a_slide_past_the_nights_end_is_refused() {
    let incident = incident();
    let dir = crate::support::tempdir();
    let out = dir.path().join("late.svg");
    let run = reclaim(&[
        "replay",
        path_arg(&incident),
        "--export",
        path_arg(&out),
        "--at",
        "02:59:00",
    ]);
    assert_eq!(run.code, Some(2), "{}", run.stdout);
    assert!(
        run.stderr.contains("after the recorded night's end"),
        "{}",
        run.stderr
    );
    assert!(!out.exists());
}

#[test]
fn a_slide_draws_its_charts_as_shapes() {
    let incident = incident();
    let (_dir, svg) = export(&incident, "slide.svg", &["--at", "02:15:21"]);
    let text = fs::read_to_string(&svg).unwrap_or_else(|e| panic!("{e}"));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("not XML: {e}"));
    // No braille or block element is left to a font (a box in one renderer, a wider glyph
    // spilling over a border in another): each is drawn as rectangles.
    let glyphs: String = doc
        .descendants()
        .filter(roxmltree::Node::is_text)
        .filter_map(|n| n.text())
        .collect::<Vec<_>>()
        .join(" ");
    let drawn_by_font: Vec<char> = glyphs
        .chars()
        .filter(|c| matches!(u32::from(*c), 0x2800..=0x28FF | 0x2580..=0x259F))
        .collect();
    assert!(drawn_by_font.is_empty(), "{drawn_by_font:?}");
    let dots = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
    assert!(dots > 200, "the charts drew {dots} rectangles");
    // The header names the second asked for.
    assert!(glyphs.contains("02:15:21 /"), "{glyphs}");
}

/// A real renderer draws the slide at its size, and nothing lands where the frame leaves a cell
/// blank (rsvg-convert, from librsvg2-bin; `.ci/run` installs it).
#[test]
#[cfg_attr(
    reclaim_no_rsvg,
    ignore = "needs rsvg-convert (librsvg2-bin), not found when the tests were built"
)]
fn a_slide_renders_with_rsvg_at_its_size() {
    let incident = incident();
    let (dir, svg) = export(&incident, "slide.svg", &["--at", "02:15:21"]);
    let status = Command::new("rsvg-convert")
        .arg(&svg)
        .arg("-o")
        .arg(dir.path().join("slide.png"))
        .stderr(Stdio::piped())
        .status()
        .unwrap_or_else(|e| panic!("rsvg-convert: {e}"));
    assert!(status.success(), "rsvg-convert failed on {}", svg.display());
    let png = fs::read(dir.path().join("slide.png")).unwrap_or_else(|e| panic!("{e}"));
    // IHDR: width and height, big-endian, at bytes 16..24.
    let size = |at: usize| u32::from_be_bytes([png[at], png[at + 1], png[at + 2], png[at + 3]]);
    assert_eq!(&png[1..4], b"PNG");
    assert_eq!(
        (size(16), size(20)),
        (1008, 680),
        "120x40 cells of 8.4x17 px"
    );
    // Its pixels: nothing in a cell the frame leaves blank, no character without a font.
    crate::slide_pixels::check_png(&svg, &dir.path().join("slide.png"))
        .unwrap_or_else(|e| panic!("{}: {e}", svg.display()));
}

/// Ctrl-C (SIGINT) or SIGTERM in the middle of an export: exit 2 in one line, and nothing is
/// left beside the path, neither the file nor its temporary (a `.NAME.XXXXXX.tmp` was left).
#[test]
fn an_export_stopped_by_a_signal_leaves_nothing_behind() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let incident = incident();
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        let dir = crate::support::tempdir();
        let out = dir.path().join("night.cast");
        let child = crate::support::reclaim_command()
            .args(["replay", path_arg(&incident), "--export", path_arg(&out)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        // Its temporary file is there once the export has begun: stop it then.
        let begun = std::time::Instant::now() + Duration::from_secs(60);
        while fs::read_dir(dir.path()).map_or(0, Iterator::count) == 0 {
            assert!(std::time::Instant::now() < begun, "the export never began");
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
        kill(pid, signal).unwrap_or_else(|e| panic!("{e}"));
        let output = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let left: Vec<_> = fs::read_dir(dir.path())
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name())
                    .collect()
            })
            .unwrap_or_default();
        // Stopped well before its 1,300 frames are written (seconds of work).
        assert_eq!(output.status.code(), Some(2), "{signal}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!(
                "reclaim: error: stopped by {signal}; nothing was written (the part written so far was removed)"
            )
        );
        assert!(left.is_empty(), "{signal}: left behind: {left:?}");
    }
}

/// The words of a slide, row by row: each `<text>` row's spans joined by one space.
fn slide_rows(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}"));
    (doc.descendants().filter(|n| n.has_tag_name("text")))
        .map(|row| {
            (row.descendants()
                .filter(roxmltree::Node::is_text)
                .filter_map(|n| n.text()))
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ")
        })
        .collect()
}

/// What of a slide of the incident's end is the same on every run: the header, the caption and
/// the rows of the lanes' panels that are not charts. Not the charts (a headless recording's
/// samples fall a little differently from run to run) nor the timeline box (its lines wrap
/// where a pid has four digits or five).
fn steady_rows(svg: &str) -> Vec<String> {
    let chart = |row: &str| {
        row.chars().any(|c| {
            ('\u{2800}'..='\u{28ff}').contains(&c) || matches!(c, '•' | '▁' | '┆' | '└' | '▄')
        }) || row.contains("02:00")
            || row.contains("s │")
            || row.contains("hb │")
            || row.contains(" │ ┃")
    };
    (slide_rows(svg).into_iter())
        .take_while(|row| !row.contains("timeline"))
        .filter(|row| !chart(row))
        .collect()
}

/// docs/dashboard.svg (the README's picture, drawn to docs/dashboard.png) is what docs/picture.sh
/// makes with this build: the same commands here give the same header, caption and lanes. The
/// picture once showed `‖ paused 1x` where its own command had long drawn `■ the end`.
#[test]
fn the_readme_picture_is_what_its_script_makes_today() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = fs::read_to_string(root.join("docs/picture.sh")).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        script.contains("--scenario incident") && script.contains("--at 02:19:31 --size 120x40"),
        "docs/picture.sh no longer makes the picture this test makes:\n{script}"
    );
    let dir = crate::support::tempdir();
    let night = dir.path().join("night.jsonl");
    let slide = dir.path().join("dashboard.svg");
    let limit = Duration::from_secs(120);
    let args = [
        "run",
        "--scenario",
        "incident",
        "--keep",
        "never",
        "--record",
        path_arg(&night),
    ];
    let run = crate::support::reclaim_in_dir(dir.path(), &args, limit);
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let export = [
        "replay",
        path_arg(&night),
        "--export",
        path_arg(&slide),
        "--at",
        "02:19:31",
        "--size",
        "120x40",
    ];
    let run = crate::support::reclaim_in_dir(dir.path(), &export, limit);
    assert_eq!(run.code, Some(0), "{}\n{}", run.stdout, run.stderr);
    let made = steady_rows(&fs::read_to_string(&slide).unwrap_or_else(|e| panic!("{e}")));
    let shown =
        fs::read_to_string(root.join("docs/dashboard.svg")).unwrap_or_else(|e| panic!("{e}"));
    let shown = steady_rows(&shown);
    assert!(made.len() >= 10, "{made:#?}");
    assert!(made.iter().any(|r| r.contains("■ the end")), "{made:#?}");
    assert_eq!(
        shown, made,
        "docs/dashboard.svg is not what docs/picture.sh makes today: run `sh docs/picture.sh`"
    );
}
