//! Snapshots and checks of the dashboard drawn at fixed states, at every size down to 0x0.

use super::*;
use crate::base::clock::{NIGHT_START, SimTime};
use crate::tui::keymap;
use crate::tui::view::Tone;
use crate::tui::view::{LaneView, Marker, MarkerKind, Series, StateKind};
use crate::verdict::Symptom;

/// A lane that wrote `rows` rows, `distinct` of them distinct, by `at` sim seconds.
fn lane(name: &str, rows: u64, distinct: u64, at: f64) -> LaneView {
    let steps = 40;
    let curve = |to: f64| -> Vec<(f64, f64)> {
        (0..=steps)
            .map(|i| {
                let f = f64::from(i) / f64::from(steps);
                (at * f, to * f)
            })
            .collect()
    };
    LaneView {
        name: name.into(),
        strategy: name.into(),
        state: "running pid 4242".into(),
        state_kind: StateKind::Running,
        alive: true,
        progress: true,
        task: Some(crate::task::task_id(rows.saturating_sub(1) % 200)),
        restarts: 0,
        kills: 0,
        workers: 1,
        items: 200,
        rows,
        distinct,
        duplicated: rows - distinct,
        checkpoints: (name == "guarded").then_some(distinct),
        messages: None,
        series: Series {
            rows: curve(rows as f64),
            distinct: curve(distinct as f64),
            duplicated: curve((rows - distinct) as f64),
            checkpoints: if name == "guarded" {
                curve(distinct as f64)
            } else {
                Vec::new()
            },
            heartbeat_age: curve(6.0),
        },
        markers: Vec::new(),
        heartbeat_age: Some(6.0),
        no_heartbeat: false,
        dead_man: 300.0,
        alert: None,
        claimed: None,
        derived: format!("in progress: {distinct} of 200 tasks"),
        derived_ok: None,
        disagreement: None,
        tables: None,
    }
}

fn dashboard(clock: f64, lanes: Vec<LaneView>, timeline: &[&str]) -> Dashboard {
    Dashboard {
        title: "The incident: one SIGKILL at 02:11:47, naive vs guarded".into(),
        scenario: "incident".into(),
        clock: SimTime(NIGHT_START + clock),
        speed: 1.0,
        paused: false,
        seed: 214,
        random_kills: false,
        lanes,
        selected: 0,
        zoom: false,
        timeline: timeline
            .iter()
            .map(|line| (line.to_string(), Tone::Plain))
            .collect(),
        timeline_scroll: 0,
        symptoms: Symptom::ALL.iter().map(|&s| (s, false)).collect(),
        help: false,
        notice: None,
        x_max: 1200.0,
        db_dir: "/tmp/reclaim-tui-example".into(),
        mode: Mode::Live,
        caption: None,
        recording: None,
        replay: None,
        ids: None,
        lecture: None,
        warehouse: None,
    }
}

fn kill_at_0211(mut lane: LaneView) -> LaneView {
    lane.markers = vec![
        Marker {
            at: 707.0,
            kind: MarkerKind::Kill,
        },
        Marker {
            at: 725.0,
            kind: MarkerKind::Restart,
        },
    ];
    lane
}

const KILL_TIMELINE: [&str; 4] = [
    "02:00:01  naive    worker  start   run_id=(none)  items=200  strategy=naive  pid=4242",
    "02:00:01  guarded  worker  start   run_id=run-4243-1  items=200  strategy=guarded  pid=4243",
    "02:11:47  naive    worker  item    task-111",
    "02:11:47  naive    runner  notice  instance reclaimed by host  (SIGKILL, pid 4242)",
];

fn at_the_kill() -> Dashboard {
    let mut naive = kill_at_0211(lane("naive", 112, 112, 707.0));
    let mut guarded = kill_at_0211(lane("guarded", 112, 112, 707.0));
    for l in [&mut naive, &mut guarded] {
        l.state = "killed by SIGKILL, restarting".into();
        l.state_kind = StateKind::Restarting;
        l.alive = false;
    }
    dashboard(707.0, vec![naive, guarded], &KILL_TIMELINE)
}

fn end_of_night() -> Dashboard {
    let mut naive = kill_at_0211(lane("naive", 312, 200, 1986.0));
    naive.state = "done".into();
    naive.state_kind = StateKind::Done;
    naive.alive = false;
    naive.restarts = 1;
    naive.claimed = Some("rows_written=312 status=ok".into());
    naive.derived = "DATA WRONG (112 duplicated task ids)".into();
    naive.derived_ok = Some(false);
    naive.disagreement = Some("the worker says ok; 112 task ids were written twice".into());
    let mut guarded = kill_at_0211(lane("guarded", 200, 200, 1280.0));
    guarded.state = "done".into();
    guarded.state_kind = StateKind::Done;
    guarded.alive = false;
    guarded.restarts = 1;
    guarded.claimed = Some("rows_written=200 status=ok".into());
    guarded.derived = "ok".into();
    guarded.derived_ok = Some(true);
    let mut view = dashboard(1986.0, vec![naive, guarded], &KILL_TIMELINE);
    view.timeline.push((
        "02:19:31  naive    worker  done    rows_written=312  status=ok  inserted=200".into(),
        Tone::Plain,
    ));
    view.symptoms = Symptom::ALL.iter().map(|&s| (s, true)).collect();
    view.x_max = 2046.0;
    view.notice = Some("the night is over: n runs it again, R resets, q quits".into());
    view
}

fn text(view: &Dashboard, width: u16, height: u16) -> String {
    render_text(view, width, height)
}

#[test]
fn the_ids_overlay_lists_each_duplicated_id_and_says_when_some_do_not_fit() {
    let mut view = end_of_night();
    view.ids = Some(crate::tui::view::IdsView {
        lane: "naive".into(),
        db: "/tmp/reclaim-tui-1/naive.db".into(),
        lines: (0..112)
            .map(|i| format!("task-{i:03}  x2  pid-10, pid-20"))
            .collect(),
        total: 112,
    });
    let screen = text(&view, 120, 40);
    assert!(
        screen.contains("naive: 112 task ids written more than once"),
        "{screen}"
    );
    assert!(screen.contains("task-000  x2  pid-10, pid-20"), "{screen}");
    assert!(
        screen.contains("reclaim inspect --ids --db /tmp/reclaim-tui-1/naive.db lists all 112"),
        "{screen}"
    );
}

#[test]
fn the_incident_at_02_11_47() {
    let screen = text(&at_the_kill(), 120, 40);
    assert!(screen.contains("02:11:47"));
    assert!(screen.contains("instance reclaimed by host"));
    insta::assert_snapshot!(screen);
}

#[test]
fn the_end_of_the_night() {
    let screen = text(&end_of_night(), 120, 40);
    assert!(screen.contains("claimed rows_written=312 status=ok"));
    assert!(screen.contains("derived DATA WRONG (112 duplicated task ids)"));
    assert!(screen.contains("● status ok, data wrong"));
    insta::assert_snapshot!(screen);
}

#[test]
fn every_lane_shares_one_rows_scale_and_names_its_curves() {
    for (w, h) in [(120, 40), (100, 30)] {
        let screen = text(&end_of_night(), w, h);
        // Both lanes' axes top at 343 (a tenth above naive's 312), not 343 beside 220.
        let tops: Vec<&str> = screen
            .lines()
            .filter_map(|l| l.split('│').next())
            .filter(|l| l.contains("343") || l.contains("220"))
            .collect();
        assert_eq!(screen.matches("343 │").count(), 2, "{w}x{h}:\n{screen}");
        assert!(!screen.contains("220 │"), "{w}x{h}: {tops:?}");
        // A legend names each curve by its glyph, and the markers.
        for word in ["⣀rows", "•distinct", "▚dup", "┃kill", "┆restart"] {
            assert!(screen.contains(word), "{w}x{h}: no {word}:\n{screen}");
        }
        // ckpt only where the lane has checkpoints (guarded, not naive).
        assert_eq!(screen.matches("▄ckpt").count(), 1, "{w}x{h}:\n{screen}");
    }
}

#[test]
fn one_figure_is_drawn_at_one_height_whatever_its_curves_glyph() {
    // Naive's distinct count (dots) and guarded's rows (braille) both end at 200 on one scale:
    // they top out on the same row of the screen, in either lane, at every size.
    let naive = lane("naive", 312, 200, 1986.0);
    let guarded = lane("guarded", 200, 200, 1986.0);
    let mut view = dashboard(1986.0, vec![naive, guarded], &[]);
    view.x_max = 2046.0;
    let braille = |c: char| ('\u{2801}'..='\u{28ff}').contains(&c);
    // ratatui rounds each glyph on its own grid: unsnapped, they parted at 7 and 19 plot rows.
    let sizes = || {
        (24..=44)
            .map(|h| (120, h))
            .chain((24..=30).map(|h| (80, h)))
    };
    for (w, h) in sizes() {
        let screen = text(&view, w, h);
        let split = screen
            .lines()
            .find_map(|l| l.chars().position(|c| c == '╭'))
            .unwrap_or_else(|| panic!("{w}x{h}: no second lane:\n{screen}"));
        let top = |lane: usize, glyph: &dyn Fn(char) -> bool| {
            screen
                .lines()
                .position(|l| {
                    let panel: String = if lane == 0 {
                        l.chars().take(split).collect()
                    } else {
                        l.chars().skip(split).collect()
                    };
                    // Not the legend (`•distinct`, or `•dist` in a narrow lane).
                    !panel.contains("kill") && panel.chars().any(glyph)
                })
                .unwrap_or_else(|| panic!("{w}x{h}: lane {lane} draws no such curve:\n{screen}"))
        };
        assert_eq!(
            top(0, &|c| c == '•'),
            top(1, &braille),
            "{w}x{h}: 200 drawn at two heights:\n{screen}"
        );
    }
}

#[test]
fn a_snapped_curve_stays_on_the_plot_from_zero_to_the_top() {
    // y_max is a tenth above a count (221.10000000000002 for 201): the bottom step once
    // came out at -2.8e-14, below the axis, where ratatui draws nothing.
    for tallest in 1..400_u32 {
        let y_max = f64::from(tallest) * 1.1;
        let data = [(0.0, 0.0), (1.0, 1.0), (2.0, y_max / 2.0), (3.0, y_max)];
        for rows in 2..60 {
            for glyph in [
                ratatui::symbols::Marker::Dot,
                ratatui::symbols::Marker::Bar,
                ratatui::symbols::Marker::Quadrant,
            ] {
                for (_, y) in snap::on_braille_rows(&data, glyph, y_max, rows) {
                    assert!(
                        (0.0..=y_max).contains(&y),
                        "{glyph:?} at {rows} rows of {y_max}: {y}"
                    );
                }
            }
        }
    }
}

#[test]
fn a_kill_and_a_restart_in_the_same_column_both_show() {
    // At 120 columns the restart 18 sim-seconds after the kill falls in the kill's column:
    // the kill is drawn in the chart's top half and the restart in its bottom half.
    let screen = text(&end_of_night(), 120, 40);
    let naive: Vec<Vec<char>> = screen
        .lines()
        .map(|l| l.chars().take(58).collect())
        .collect();
    let kill_column = naive
        .iter()
        .find_map(|l| l.iter().position(|&c| c == '⡇'))
        .unwrap_or_else(|| panic!("no kill marker:\n{screen}"));
    let first_kill_row = naive
        .iter()
        .position(|l| l.get(kill_column) == Some(&'⡇'))
        .unwrap_or_default();
    let restart_below = naive
        .iter()
        .skip(first_kill_row)
        .any(|l| l.get(kill_column) == Some(&'┆'));
    assert!(restart_below, "no restart marker under the kill:\n{screen}");
}

#[test]
fn the_stale_heartbeat_alert() {
    let mut naive = lane("naive", 80, 80, 500.0);
    naive.state = "hung (SIGSTOP) pid 4242".into();
    naive.state_kind = StateKind::Hung;
    naive.progress = false;
    naive.heartbeat_age = Some(312.0);
    naive.series.heartbeat_age = (0..=50)
        .map(|i| (f64::from(i) * 10.0, (f64::from(i) * 10.0 - 188.0).max(3.0)))
        .collect();
    naive.alert = Some("runner heartbeat stale: 312s".into());
    let view = dashboard(
        812.0,
        vec![naive],
        &[
            "02:08:20  runner  notice  worker hung (SIGSTOP, pid 4242): alive, no progress",
            "02:13:32  runner  alert   runner heartbeat stale: 312s",
        ],
    );
    let screen = text(&view, 120, 40);
    assert!(screen.contains("runner heartbeat stale: 312s"));
    assert!(screen.contains("hung (SIGSTOP)"));
    insta::assert_snapshot!(screen);
}

#[test]
fn an_exec_lane_without_a_heartbeat_says_so_rather_than_stale() {
    let mut job = lane("my-job", 80, 80, 500.0);
    job.strategy = "exec".into();
    job.progress = false;
    job.heartbeat_age = None;
    job.no_heartbeat = true;
    job.claimed = Some("\"done rows_written=312 status=ok\"".into());
    let view = dashboard(812.0, vec![job], &[]);
    let screen = text(&view, 120, 40);
    assert!(screen.contains("progress: no heartbeat"), "{screen}");
    assert!(!screen.contains("stale"), "{screen}");
    assert!(
        screen.contains("\"done rows_written=312 status=ok\""),
        "{screen}"
    );
}

#[test]
fn the_help_overlay() {
    let mut view = at_the_kill();
    view.help = true;
    let screen = text(&view, 120, 40);
    for (key, help) in keymap::help_lines(Mode::Live) {
        assert!(screen.contains(help), "{key}: {help}");
    }
    insta::assert_snapshot!(screen);
}

/// The help names every key at the smallest screen too (80x24): each key's line whole, `q`
/// the last; what does not fit is the panels' legend under them.
#[test]
fn the_help_at_80x24_names_every_key() {
    let mut view = at_the_kill();
    view.help = true;
    let screen = text(&view, 80, 24);
    for (key, help) in keymap::help_lines(Mode::Live) {
        let line = format!(" {key:<8}{help}");
        assert!(screen.contains(line.trim_end()), "{key}: {help}\n{screen}");
    }
}

#[test]
fn eighty_by_twenty_four() {
    let screen = text(&end_of_night(), 80, 24);
    let footer = screen.lines().last().unwrap_or_default();
    assert!(
        footer.contains("? more") && footer.ends_with("q quit"),
        "{screen}"
    );
    assert!(screen.contains("DATA WRONG (112 duplicated"), "{screen}");
    // Every lane keeps its rows chart (an axis of at least four rows) and its heartbeat's
    // age over the night (a sparkline).
    assert_eq!(screen.matches("343 │").count(), 2, "{screen}");
    assert_eq!(screen.matches("hb  │▁").count(), 2, "{screen}");
    let axis_rows = screen
        .lines()
        .filter(|l| {
            l.chars().nth(1) == Some('3') || l.starts_with("┃    │") || l.starts_with("┃0   │")
        })
        .count();
    assert!(
        axis_rows >= 4,
        "the naive chart has {axis_rows} rows:\n{screen}"
    );
    insta::assert_snapshot!(screen);
}

#[test]
fn four_lanes_share_the_screen() {
    let lanes = ["naive", "two-commit", "keyed", "guarded"]
        .map(|n| lane(n, 150, 150, 900.0))
        .to_vec();
    let screen = text(&dashboard(900.0, lanes, &[]), 120, 40);
    for name in ["naive", "two-commit", "keyed", "guarded"] {
        assert!(screen.contains(&format!(" {name} ")), "{name}");
    }
}

#[test]
fn a_tiny_terminal_gets_a_message_at_any_size() {
    for (w, h) in [(59, 30), (100, 17), (20, 5), (1, 1), (0, 0)] {
        let screen = text(&end_of_night(), w, h);
        if w >= 40 && h >= 3 {
            assert!(screen.contains("too small"), "{w}x{h}: {screen}");
        }
    }
    insta::assert_snapshot!(text(&end_of_night(), 50, 12));
}

#[test]
fn every_size_from_tiny_to_large_renders() {
    let view = end_of_night();
    for w in (0..=220).step_by(17) {
        for h in (0..=70).step_by(7) {
            let _ = text(&view, w, h);
        }
    }
}

#[test]
fn a_lane_whose_items_leave_the_database_shows_its_messages_beside_its_rows() {
    let counts = crate::fake_vendor::Counts {
        received: 201,
        distinct: 200,
        duplicated: 1,
        missing: 0,
        ..crate::fake_vendor::Counts::default()
    };
    let mut running = lane("guarded", 120, 120, 800.0);
    running.messages = Some(counts);
    let screen = text(&dashboard(800.0, vec![running.clone()], &[]), 80, 24);
    // The gaps between figures widen with the panel: compare words.
    let words = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("messages 201 distinct 200 dup 1"),
        "{screen}"
    );
    // Judged only once the lane is over: a running lane's count may still change.
    assert!(!screen.contains("messages WRONG"), "{screen}");
    running.state = "done".into();
    running.state_kind = StateKind::Done;
    let screen = text(&dashboard(1900.0, vec![running], &[]), 80, 24);
    assert!(screen.contains("messages WRONG: 1 sent twice"), "{screen}");
    // A lane without a vendor has no such line.
    let screen = text(&end_of_night(), 120, 40);
    assert!(!screen.contains("messages"), "{screen}");
}

/// The incident's night as the live dashboard writes it: long lines, as they come.
const LONG_TIMELINE: [&str; 4] = [
    "02:00:03  guarded  worker  start   run_id=run-17657-1796033767173  items=200  strategy=guarded  pid=17657",
    "02:11:47  naive    worker  item    task-111",
    "02:11:47  naive    runner  notice  instance reclaimed by host  (SIGKILL, pid 17656)",
    "02:12:05  naive    runner  notice  supervisor restarts the worker (attempt 2 of 6, after 18s)",
];

fn long_lines() -> Dashboard {
    let mut view = at_the_kill();
    view.timeline = LONG_TIMELINE
        .iter()
        .map(|line| (line.to_string(), Tone::Plain))
        .collect();
    view
}

/// The timeline panel's rows, inside its borders.
fn timeline_panel(screen: &str) -> Vec<String> {
    let lines: Vec<&str> = screen.lines().collect();
    let Some(top) = lines.iter().position(|l| l.starts_with("╭ timeline")) else {
        panic!("no timeline panel:\n{screen}");
    };
    lines[top + 1..]
        .iter()
        .take_while(|l| !l.starts_with('╰'))
        .map(|l| l.split('│').nth(1).unwrap_or_default().to_string())
        .collect()
}

/// The panel's events, each with its continuation rows joined (a row starting with a blank is
/// the one above it, wrapped).
fn timeline_events(screen: &str) -> Vec<String> {
    let mut events: Vec<String> = Vec::new();
    for row in timeline_panel(screen) {
        if row.trim().is_empty() {
            continue;
        }
        match events.last_mut() {
            Some(event) if row.starts_with(' ') => {
                event.push(' ');
                event.push_str(row.trim());
            }
            _ => events.push(row.trim_end().to_string()),
        }
    }
    events
}

fn words(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the issue asks of each size: the legend, one rows scale for every lane, the heartbeat's
/// age, and no timeline row cut at the panel's edge.
fn assert_fits(screen: &str, size: &str) {
    for word in ["⣀rows", "┃kill", "┆restart"] {
        assert!(screen.contains(word), "{size}: no {word}:\n{screen}");
    }
    assert_eq!(screen.matches("220 │").count(), 2, "{size}:\n{screen}");
    assert_eq!(
        screen.matches("heartbeat 6s/300s").count(),
        2,
        "{size}:\n{screen}"
    );
    let shown = timeline_events(screen);
    assert!(!shown.is_empty(), "{size}: an empty timeline:\n{screen}");
    for (i, event) in shown.iter().enumerate() {
        // The oldest one shown may be the beginning of an event, saying so with `…`, in whole
        // words; every other one is whole.
        let whole = LONG_TIMELINE.iter().any(|line| words(line) == words(event));
        let begun = i == 0
            && event.strip_suffix('…').is_some_and(|start| {
                LONG_TIMELINE.iter().any(|line| {
                    format!("{} ", words(line)).starts_with(&format!("{} ", words(start)))
                })
            });
        assert!(
            whole || begun,
            "{size}: {event:?} is neither a whole event nor the beginning of one:\n{screen}"
        );
    }
}

#[test]
fn long_timeline_lines_at_80x24() {
    let screen = text(&long_lines(), 80, 24);
    assert_fits(&screen, "80x24");
    insta::assert_snapshot!(screen);
}

#[test]
fn long_timeline_lines_at_120x40() {
    let screen = text(&long_lines(), 120, 40);
    assert_fits(&screen, "120x40");
    // Every event, whole, joined across its wrapped rows.
    let shown: Vec<String> = timeline_events(&screen).iter().map(|e| words(e)).collect();
    let all: Vec<String> = LONG_TIMELINE.iter().map(|l| words(l)).collect();
    assert_eq!(shown, all, "{screen}");
    // Continuation rows hang under the message, past `02:00:03  guarded  worker  start   `.
    let panel = timeline_panel(&screen);
    let wrapped = panel
        .iter()
        .find(|row| row.trim_start().starts_with("items=200  strategy=guarded"))
        .unwrap_or_else(|| panic!("{screen}"));
    assert_eq!(wrapped.len() - wrapped.trim_start().len(), 35, "{screen}");
    insta::assert_snapshot!(screen);
}

/// The frame's cells at `width` x `height` in `theme`.
fn cells(view: &Dashboard, width: u16, height: u16, theme: Theme) -> Buffer {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render_to(area, &mut buf, view, theme);
    buf
}

#[test]
fn nothing_is_carried_by_colour_alone() {
    use ratatui::style::Color;
    let mut hung = end_of_night();
    hung.lanes[1].state_kind = StateKind::Hung;
    hung.lanes[1].progress = false;
    hung.lanes[1].alert = Some("runner heartbeat stale: 312s".into());
    for view in [long_lines(), end_of_night(), hung] {
        for (w, h) in [(80, 24), (120, 40)] {
            let mono = cells(&view, w, h, Theme::monochrome());
            // NO_COLOR: not one cell is coloured.
            for cell in mono.content() {
                assert_eq!(cell.fg, Color::Reset, "{w}x{h}: {cell:?}");
                assert_eq!(cell.bg, Color::Reset, "{w}x{h}: {cell:?}");
            }
            // The coloured themes write the very same characters: colour only adds.
            for theme in [Theme::colored(), Theme::high_contrast()] {
                let colored = cells(&view, w, h, theme);
                let symbols = |buf: &Buffer| -> Vec<String> {
                    buf.content()
                        .iter()
                        .map(|c| c.symbol().to_string())
                        .collect()
                };
                assert_eq!(symbols(&mono), symbols(&colored), "{w}x{h}");
                assert!(
                    colored.content().iter().any(|c| c.fg != Color::Reset),
                    "{w}x{h}: the coloured theme drew no colour"
                );
            }
        }
    }
}

/// The footer's rows of a frame, as text.
fn footer_text(view: &Dashboard, width: u16, height: u16) -> String {
    let screen = text(view, width, height);
    let a = areas(
        Rect::new(0, 0, width, height),
        view.lanes.len(),
        view.caption.as_deref(),
        view.lecture.as_ref(),
        view.mode,
        None,
    );
    screen
        .lines()
        .skip(usize::from(a.footer.y))
        .take(usize::from(a.footer.height))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_footer_shows_every_key_or_says_more_and_never_cuts_an_entry() {
    for mode in [Mode::Live, Mode::Replay, Mode::Review] {
        let mut view = end_of_night();
        view.mode = mode;
        let entries: Vec<String> = keymap::footer(mode)
            .iter()
            .map(|(key, f)| format!("{key} {}", f.name))
            .collect();
        for (w, h) in [
            (80, 24),
            (100, 30),
            (120, 40),
            (200, 55),
            (120, 20),
            (60, 18),
        ] {
            let footer = footer_text(&view, w, h);
            // Entries stand two blanks apart: each piece is a whole entry, or `? more`.
            let pieces: Vec<&str> = footer
                .lines()
                .flat_map(|l| l.split("  "))
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect();
            for piece in &pieces {
                assert!(
                    entries.iter().any(|e| e == piece) || *piece == "? more",
                    "{mode:?} {w}x{h}: a cut entry {piece:?}:\n{footer}"
                );
            }
            let more = pieces.contains(&"? more");
            for entry in &entries {
                assert!(
                    more || pieces.contains(&entry.as_str()),
                    "{mode:?} {w}x{h}: no {entry:?} and no `? more`:\n{footer}"
                );
            }
            // The help's key and quit are always there, at the end of the last row: `? help`,
            // or `? more` (the same key) just before quit when some keys are left to it.
            let last = footer.lines().last().unwrap_or_default();
            assert!(
                last.ends_with("? help  q quit") || (more && last.ends_with("q quit")),
                "{mode:?} {w}x{h}:\n{footer}"
            );
            assert_eq!(
                footer.matches("? ").count(),
                1,
                "{mode:?} {w}x{h}:\n{footer}"
            );
            // The most useful keys first when not all fit.
            if mode == Mode::Live {
                assert!(pieces.contains(&"k kill"), "{w}x{h}:\n{footer}");
                assert!(pieces.contains(&"space pause"), "{w}x{h}:\n{footer}");
            }
        }
    }
    // Where two rows hold every key, every key shows; the widest window needs one row.
    let view = end_of_night();
    assert!(!footer_text(&view, 100, 30).contains("? more"));
    assert!(!footer_text(&view, 120, 40).contains("? more"));
    assert_eq!(footer_text(&view, 200, 55).lines().count(), 1);
    assert!(footer_text(&view, 80, 24).contains("? more"));
}

#[test]
fn clicks_and_drawing_agree_on_the_footer() {
    for (w, h) in [(80, 24), (100, 30), (120, 20), (120, 40), (200, 55)] {
        for mode in [Mode::Live, Mode::Replay, Mode::Review] {
            let a = areas(Rect::new(0, 0, w, h), 2, None, None, mode, None);
            let layout = footer_layout(mode, w, h);
            assert_eq!(usize::from(a.footer.height), layout.rows.len(), "{w}x{h}");
            assert_eq!(a.footer.bottom(), h);
            assert!(a.lanes.iter().all(|l| l.bottom() <= a.timeline.y));
        }
    }
}

#[test]
fn a_tall_window_gives_the_timeline_more_rows() {
    let rows = |w, h| {
        areas(Rect::new(0, 0, w, h), 2, None, None, Mode::Live, None)
            .timeline
            .height
    };
    assert!(
        rows(200, 55) > rows(120, 40),
        "{} vs {}",
        rows(200, 55),
        rows(120, 40)
    );
    assert!(rows(120, 40) >= rows(80, 24));
    // And it shows more of the night.
    let mut view = long_lines();
    view.timeline = (0..60)
        .map(|i| {
            (
                format!("02:{i:02}:00  naive    worker  item    task-{i:03}"),
                Tone::Plain,
            )
        })
        .collect();
    let events = |w, h| timeline_events(&text(&view, w, h)).len();
    assert!(
        events(200, 55) > events(120, 40),
        "{}",
        text(&view, 200, 55)
    );
}

const LONG_PATH: &str =
    "/tmp/a-folder-name-long-enough-to-need-cutting-at-any-width/reclaim-tui-1234/night2.jsonl";

#[test]
fn a_long_path_keeps_its_file_name() {
    let mut view = at_the_kill();
    view.recording = Some(LONG_PATH.into());
    for (w, h) in [(100, 30), (120, 40)] {
        let screen = text(&view, w, h);
        let header = screen.lines().next().unwrap_or_default();
        assert!(header.contains("● REC …/"), "{w}x{h}: {header}");
        assert!(
            header.contains("night2.jsonl  02:11:47"),
            "{w}x{h}: {header}"
        );
    }
    // At 80 columns the header keeps the title rather than a path: `● REC` still says it.
    let screen = text(&view, 80, 24);
    assert!(
        screen.lines().next().unwrap_or_default().contains("● REC"),
        "{screen}"
    );
    // A notice quoting a path: the seed and settings make way; the path gives up its left.
    view.notice = Some(format!("recording saved to {LONG_PATH}"));
    for (w, h) in [(80, 24), (120, 40)] {
        let screen = text(&view, w, h);
        let header = screen.lines().next().unwrap_or_default();
        assert!(
            header.contains("recording saved to …/"),
            "{w}x{h}: {header}"
        );
        assert!(header.contains("night2.jsonl"), "{w}x{h}: {header}");
        assert!(header.contains("02:11:47"), "{w}x{h}: {header}");
    }
    // The seed makes way for a notice a few seconds long: a path as the dashboard names them
    // shows whole at 120 columns.
    let real = "/tmp/reclaim-tui-1796034268663-31723/night2.jsonl";
    view.notice = Some(format!("recording from 02:00 into {real}"));
    let screen = text(&view, 120, 40);
    let header = screen.lines().next().unwrap_or_default();
    assert!(header.contains(real), "{header}");
    assert!(header.contains("random off"), "{header}");
    // The help's databases folder.
    let mut view = at_the_kill();
    view.help = true;
    view.db_dir = LONG_PATH.replace("/night2.jsonl", "").repeat(2);
    let screen = text(&view, 120, 40);
    let line = screen
        .lines()
        .find(|l| l.contains(" databases in "))
        .unwrap_or_else(|| panic!("{screen}"));
    assert!(line.contains(" databases in …/"), "{line}");
    assert!(line.contains("/reclaim-tui-1234 "), "{line}");
}

#[test]
fn scrolling_back_moves_by_events_and_never_empties_the_panel() {
    let mut view = long_lines();
    // Three nights' worth of the same lines, each numbered at its end.
    view.timeline = (0..3)
        .flat_map(|night| {
            LONG_TIMELINE
                .iter()
                .map(move |line| (format!("{line} #{night}"), Tone::Plain))
        })
        .collect();
    let newest = |screen: &str| timeline_events(screen).last().cloned().unwrap_or_default();
    let screen = text(&view, 120, 40);
    assert!(newest(&screen).ends_with("after 18s) #2"), "{screen}");
    view.timeline_scroll = 1;
    let screen = text(&view, 120, 40);
    assert!(
        newest(&screen).ends_with("(SIGKILL, pid 17656) #2"),
        "{screen}"
    );
    assert!(screen.contains("scrolled back 1;"), "{screen}");
    // Past the oldest event: the oldest page, never a blank panel.
    for scroll in [10, 12, 100] {
        view.timeline_scroll = scroll;
        for (w, h) in [(80, 24), (120, 40)] {
            let screen = text(&view, w, h);
            let shown = timeline_events(&screen);
            assert!(!shown.is_empty(), "{scroll} {w}x{h}:\n{screen}");
            // (At 80x24 the oldest event, four rows wrapped, waits for a scroll past it.)
            if scroll >= 12 || w == 120 {
                assert!(shown[0].starts_with("02:00:03  guarded"), "{screen}");
            }
        }
    }
}

#[test]
fn a_line_wraps_whole_words_under_its_message() {
    let line = LONG_TIMELINE[0];
    assert_eq!(message_column(line), 35);
    assert_eq!(
        message_column("02:13:32  runner  alert   runner heartbeat stale"),
        26
    );
    // A lane may be named like a source; a kind never is.
    assert_eq!(
        message_column("02:00:01  runner  worker  start   run_id=(none)"),
        34
    );
    assert_eq!(message_column("not a timeline line"), 0);
    let rows = wrap(line, 72, 35);
    assert_eq!(
        rows,
        [
            "02:00:03  guarded  worker  start   run_id=run-17657-1796033767173",
            "                                   items=200  strategy=guarded",
            "                                   pid=17657",
        ]
    );
    for width in 1..120 {
        let rows = wrap(line, width, 35);
        assert_eq!(
            rows.concat().replace(' ', ""),
            line.replace(' ', ""),
            "{width}"
        );
        assert!(
            rows.iter().all(|r| r.chars().count() <= width),
            "{width}: {rows:?}"
        );
    }
    // Characters of many bytes are never split.
    let rows = wrap(
        "02:00:01  runner  notice  données été 夜の記録 überall",
        30,
        26,
    );
    assert_eq!(
        rows.concat().replace(' ', ""),
        "02:00:01runnernoticedonnéesété夜の記録überall"
    );
}

#[test]
fn at_80x24_a_two_row_caption_still_leaves_every_lane_its_chart_and_heartbeat() {
    let mut view = end_of_night();
    view.caption = Some(
        "The host takes the machine back: SIGKILL, no warning. 112 rows are committed; \
         nothing in the naive worker records how far it got."
            .into(),
    );
    let screen = text(&view, 80, 24);
    assert!(screen.contains("how far it got."), "{screen}");
    assert_eq!(screen.matches("343 │").count(), 2, "{screen}");
    assert_eq!(screen.matches("hb  │▁").count(), 2, "{screen}");
}

/// The incident's kill as a lecture stops on it, with its caption.
fn lecture_at_the_kill() -> Dashboard {
    use crate::tui::lecture::{Hold, Why, line};
    let mut view = at_the_kill();
    let mut hold = Hold::new(view.clock);
    hold.add(Why::Kill("naive".into()));
    hold.add(Why::Kill("guarded".into()));
    hold.add(Why::Caption);
    view.lecture = Some(line(Some(&hold), true, false));
    view.paused = true;
    view.caption = Some(
        "The host takes the machine back: SIGKILL, no warning. 112 rows are committed; nothing \
         in the naive worker records how far it got."
            .into(),
    );
    view
}

#[test]
fn a_lecture_says_where_it_stopped_in_full_or_in_brief_and_keeps_the_charts() {
    let wide = text(&lecture_at_the_kill(), 120, 40);
    assert!(
        wide.lines().nth(1).is_some_and(|l| l.contains(
            "■ LECTURE  stopped at 02:11:47: the host kills naive and guarded; a caption. space goes on"
        )),
        "{wide}"
    );
    insta::assert_snapshot!("lecture_120x40", wide);
    let narrow = text(&lecture_at_the_kill(), 80, 24);
    assert!(
        narrow.lines().nth(1).is_some_and(
            |l| l.contains("■ LECTURE  02:11:47 kill: naive, guarded · caption · space: on")
        ),
        "{narrow}"
    );
    // One row for the lecture, two for the caption, and each lane still has its rows chart
    // and its heartbeat sparkline.
    assert!(
        narrow
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with("▌ The host")),
        "{narrow}"
    );
    assert_eq!(narrow.matches("hb  │").count(), 2, "{narrow}");
    assert_eq!(narrow.matches("0   │").count(), 2, "{narrow}");
    insta::assert_snapshot!("lecture_80x24", narrow);
}

/// The widest rows chart's time axis on screen, in columns (its `└───` line).
fn axis_width(screen: &str) -> usize {
    screen
        .lines()
        .filter_map(|l| {
            let from = l.find('└')?;
            Some(l[from..].chars().skip(1).take_while(|&c| c == '─').count())
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn z_gives_the_selected_lane_the_whole_width_at_80x24() {
    let mut view = end_of_night();
    let shared = text(&view, 80, 24);
    view.zoom = true;
    view.selected = 1;
    let screen = text(&view, 80, 24);
    let lines: Vec<&str> = screen.lines().collect();
    // Guarded alone, from the left edge to the right one, and it says how to get back.
    assert!(
        lines[1].starts_with("┏ guarded ") && lines[1].ends_with('┓'),
        "{screen}"
    );
    assert_eq!(lines[1].chars().count(), 80, "{screen}");
    assert!(
        lines[1].contains(" zoom 2/2 · tab next · z all lanes "),
        "{screen}"
    );
    assert!(
        !screen.contains("┏ naive") && !screen.contains("╭ naive"),
        "{screen}"
    );
    // Its chart spans twice the columns it had beside naive, with its legend, its heartbeat,
    // its figures and verdict whole.
    assert!(
        axis_width(&screen) >= 2 * axis_width(&shared),
        "{} then {}:\n{screen}",
        axis_width(&shared),
        axis_width(&screen)
    );
    // And a row more, from the timeline.
    let plot_rows = |screen: &str| {
        (screen.lines())
            .filter(|l| {
                ["┃343 │", "┃    │", "┃0   │"]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .count()
    };
    assert!(
        plot_rows(&screen) > plot_rows(&shared),
        "{} then {}:\n{screen}",
        plot_rows(&shared),
        plot_rows(&screen)
    );
    assert!(screen.contains("⣀rows •distinct"), "{screen}");
    assert_eq!(screen.matches("hb  │▁").count(), 1, "{screen}");
    assert!(screen.contains("┃done  task-199  restarts 1"), "{screen}");
    assert!(
        screen.contains("rows 200  distinct 200  dup 0  ckpt 200"),
        "{screen}"
    );
    assert!(screen.contains("derived ok"), "{screen}");
    // The symptoms and the timeline stay; the footer names the key.
    assert!(screen.contains("● status ok, data wrong"), "{screen}");
    assert!(lines[23].contains("z zoom"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn a_zoomed_lane_is_the_only_one_a_click_finds() {
    let area = Rect::new(0, 0, 80, 24);
    let a = areas(area, 3, None, None, Mode::Live, Some(2));
    assert_eq!(a.lanes.len(), 3);
    assert_eq!(a.lanes[2].width, 80);
    assert!(a.lanes[..2].iter().all(|r| r.area() == 0), "{:?}", a.lanes);
    // The lane takes a row from the timeline and the symptoms; the header and footer stay,
    // and the symptoms keep a row for each of the three.
    let plain = areas(area, 3, None, None, Mode::Live, None);
    assert_eq!((a.header, a.footer), (plain.header, plain.footer));
    assert_eq!(a.lanes[2].height, plain.lanes[2].height + 1);
    assert_eq!(a.symptoms.height, plain.symptoms.height - 1);
    assert_eq!(a.symptoms.height, 5);
    // A lane that is not there is no zoom.
    assert_eq!(
        areas(area, 3, None, None, Mode::Live, Some(5)).lanes,
        plain.lanes
    );
}

#[test]
fn five_lanes_zoomed_at_80x24_keep_every_figure_readable() {
    let lanes = ["naive", "two-commit", "keyed", "guarded", "outbox"]
        .map(|n| lane(n, 150, 150, 900.0))
        .to_vec();
    let mut view = dashboard(900.0, lanes, &[]);
    let shared = text(&view, 80, 24);
    // Five lanes in 80 columns: no panel has room for its figures whole.
    assert!(!shared.contains("rows 150  distinct 150"), "{shared}");
    view.zoom = true;
    view.selected = 3;
    let screen = text(&view, 80, 24);
    assert!(screen.contains("┏ guarded "), "{screen}");
    assert!(
        screen.contains(" zoom 4/5 · tab next · z all lanes "),
        "{screen}"
    );
    assert!(screen.contains("rows 150  distinct 150  dup 0"), "{screen}");
    assert!(screen.contains("in progress: 150 of 200 tasks"), "{screen}");
    for other in ["naive", "two-commit", "keyed", "outbox"] {
        assert!(
            !screen.contains(&format!("┃{other}")) && !screen.contains(&format!("╭ {other} ")),
            "{other}:\n{screen}"
        );
    }
}

#[test]
fn a_lane_zoomed_at_120x40_has_its_state_and_lights_on_one_row_and_a_heartbeat_chart() {
    let mut view = end_of_night();
    view.zoom = true;
    let screen = text(&view, 120, 40);
    assert!(
        screen.contains("┃done  task-111  restarts 1  alive ·  progress ·  heartbeat 6s/300s"),
        "{screen}"
    );
    assert!(
        screen.contains("rows 312  distinct 200  dup 112  ckpt -"),
        "{screen}"
    );
    assert!(
        screen.contains("derived DATA WRONG (112 duplicated task ids)"),
        "{screen}"
    );
    // Tall enough for the heartbeat's own chart, with the dead-man's threshold on its axis.
    assert!(screen.contains("300s"), "{screen}");
    assert!(!screen.contains("hb  │▁"), "{screen}");
    assert!(
        screen.contains(" zoom 1/2 · tab next · z all lanes "),
        "{screen}"
    );
}

/// Zoomed on guarded at the end of the night, at 80x24: naive's caption is named as naive's and
/// the symptoms panel lights only what guarded shows (before: naive's caption and a lit `status
/// ok, data wrong` beside guarded's clean figures). With every lane shown, both are as before.
#[test]
fn zoomed_on_one_lane_the_story_of_a_lane_not_shown_is_named_or_unlit() {
    use crate::tui::chrome::{Chrome, NoticeLife, Scene};
    let end = end_of_night();
    let scene = || Scene {
        title: end.title.clone(),
        scenario: end.scenario.clone(),
        clock: end.clock,
        paused: false,
        seed: end.seed,
        random_kills: false,
        // naive shows every symptom, guarded none.
        symptoms: Symptom::ALL
            .iter()
            .map(|&s| (s, vec![true, false]))
            .collect(),
        lanes: end.lanes.clone(),
        timeline: end.timeline.clone(),
        x_max: end.x_max,
        db_dir: end.db_dir.clone(),
        mode: Mode::Live,
        caption: Some("Naive reports rows_written=312 status=ok.".into()),
        caption_lane: Some(0),
        recording: None,
        replay: None,
        warehouse: None,
    };
    let mut chrome = Chrome::new(NoticeLife::UntilNextKey);
    let all = text(&chrome.dashboard(scene()), 80, 24);
    assert!(all.contains("▌ Naive reports"), "{all}");
    assert!(all.contains("● status ok, data wrong"), "{all}");
    chrome.update(keymap::KeyAction::NextLane, 2, 0);
    chrome.update(keymap::KeyAction::ToggleZoom, 2, 0);
    let zoomed = text(&chrome.dashboard(scene()), 80, 24);
    assert!(
        zoomed.contains("naive (not on screen; z shows every lane) · Naive reports"),
        "{zoomed}"
    );
    assert!(zoomed.contains("symptoms of guarded"), "{zoomed}");
    assert!(zoomed.contains("○ status ok, data wrong"), "{zoomed}");
    assert!(!zoomed.contains("● "), "{zoomed}");
    // Zoomed on the lane the caption is about, it reads as it always did.
    chrome.update(keymap::KeyAction::PrevLane, 2, 0);
    let own = text(&chrome.dashboard(scene()), 80, 24);
    assert!(
        own.contains("▌ Naive reports") && own.contains("● status ok"),
        "{own}"
    );
}

/// Two lanes on one rows scale have charts of one height, whatever their verdicts take: at the
/// end of the night naive's verdict wraps onto more rows than guarded's, and its chart was a row
/// shorter (343 to 0 over 7 rows beside 8), so the same figure sat at two heights.
#[test]
fn lanes_on_one_scale_draw_their_charts_at_one_height() {
    for (w, h) in [(80, 24), (120, 40)] {
        let screen = text(&end_of_night(), w, h);
        let half = usize::from(w / 2);
        // The row of each lane's `0` label and of its axis's top figure.
        let row_of = |label: &str, right: bool| {
            screen.lines().position(|l| {
                let l: Vec<char> = l.chars().collect();
                let side: String = if right {
                    l[half..].iter().collect()
                } else {
                    l[..half].iter().collect()
                };
                side.trim_start_matches(['┃', '│', ' ']).starts_with(label)
            })
        };
        for label in ["343 │", "0   │"] {
            assert_eq!(
                row_of(label, false),
                row_of(label, true),
                "{label} at {w}x{h}:\n{screen}"
            );
            assert!(
                row_of(label, false).is_some(),
                "{label} at {w}x{h}:\n{screen}"
            );
        }
    }
}

/// A heartbeat older than twice the threshold (the incident's naive lane reaches 704 s at the
/// kill) kept the axis at 0 / 300s / 600s, the age drawn at the top and the label `600s+`;
/// rescaled to the peak, it read 387s / 774s and the threshold had no label.
#[test]
fn a_heartbeat_past_the_axis_keeps_the_threshold_on_its_label() {
    let mut view = end_of_night();
    view.zoom = true;
    view.lanes[0].series.heartbeat_age = vec![(0.0, 0.0), (700.0, 704.0), (1500.0, 1500.0)];
    let screen = text(&view, 120, 40);
    assert!(screen.contains("┃300s │••"), "{screen}");
    assert!(screen.contains("┃600s+│"), "{screen}");
    // Rescaled to the peak (1500 s), the axis read 825s / 1650s.
    assert!(
        !screen.contains("825s") && !screen.contains("1650s"),
        "{screen}"
    );
}
