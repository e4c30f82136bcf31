//! Snapshots and checks of the dashboard drawn at fixed states, at every size down to 0x0.

use super::*;
use crate::clock::{NIGHT_START, SimTime};
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
        screen.contains("reclaim inspect --ids lists all 112"),
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
        .any(|l| l.get(kill_column) == Some(&'•'));
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

#[test]
fn eighty_by_twenty_four() {
    let screen = text(&end_of_night(), 80, 24);
    assert!(screen.contains("? help q quit"), "{screen}");
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
    let counts = crate::vendor::Counts {
        received: 201,
        distinct: 200,
        duplicated: 1,
        missing: 0,
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
