//! Tests of the map screen: its state machine, its drawing at fixed sizes, its keys.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

use super::*;
use crate::map::expected_duplicates;
use crate::tui::keymap::{self, Mode};
use crate::tui::theme::Theme;
use crate::verdict::Status;
use crate::worker::CrashPoint;
use crate::worker::Strategy;
use ratatui::buffer::Buffer;

/// The map's four strategies (`all`): the outbox and claim are mapped only when named.
fn four() -> Vec<Strategy> {
    Strategy::all()
        .iter()
        .copied()
        .filter(|s| s.in_full_map())
        .collect()
}

fn plan(strategies: Vec<Strategy>, items: u64) -> Plan {
    Plan {
        strategies,
        points: crate::map::Point::rows(),
        tasks: (0, items - 1),
        items,
    }
}

/// A map whose every cell is what the code implies.
fn finished(plan: &Plan) -> MapState {
    let mut state = MapState::new(plan);
    for night in plan.nights() {
        let dup = expected_duplicates(night.strategy, night.kill);
        state.add(Cell {
            strategy: night.strategy,
            kill: night.kill,
            task: night.kill.task(),
            point: night.kill.point().to_string(),
            rows: plan.items + dup,
            distinct: plan.items,
            duplicated_task_ids: dup,
            missing: 0,
            derived_status: if dup > 0 {
                Status::DataWrong
            } else {
                Status::Ok
            },
            completed: true,
            killed: true,
            db: None,
        });
    }
    state.elapsed_s = 41.3;
    state
}

fn screen<C: MapCell>(state: &MapState<C>, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render_to(area, &mut buf, state, Theme::monochrome());
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_whole_map_at_120x40() {
    let plan = plan(four(), 200);
    let mut state = finished(&plan);
    state.update(MapAction::Down);
    for _ in 0..50 {
        state.update(MapAction::Right);
    }
    let text = screen(&state, 120, 40);
    assert!(text.contains("naive      after-row-commit"), "{text}");
    assert!(
        text.contains(
            "task-050: DUPLICATED 51\n251 rows, 200 distinct, 51 duplicated, 0 missing; as the code implies"
        ),
        "{text}"
    );
    assert!(text.contains("guarded    800/800 right"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn the_whole_map_at_80x24() {
    let plan = plan(four(), 200);
    let mut state = finished(&plan);
    for _ in 0..5 {
        state.update(MapAction::Down);
    }
    let text = screen(&state, 80, 24);
    assert!(text.contains("two-commit after-row-commit"), "{text}");
    assert!(text.contains("1 duplicated"), "{text}");
    assert!(text.contains("enter watch"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn a_map_in_progress_shows_what_is_running() {
    let plan = plan(vec![Strategy::TwoCommit], 12);
    let full = finished(&plan);
    let mut state = MapState::new(&plan);
    for cell in full.cells().into_iter().filter(|c| c.task < 5) {
        state.add(cell);
    }
    state.elapsed_s = 0.4;
    let text = screen(&state, 80, 24);
    assert!(text.contains("20/48 nights"), "{text}");
    assert!(text.contains('░'), "{text}");
    state.update(MapAction::End);
    assert_eq!(state.update(MapAction::Open), None);
    insta::assert_snapshot!(text);
}

#[test]
fn a_narrow_column_shows_its_worst_night() {
    // 200 tasks in about 50 columns: the single duplicated row of two-commit must show.
    let plan = plan(vec![Strategy::TwoCommit], 200);
    let state = finished(&plan);
    let text = screen(&state, 80, 24);
    let band = text
        .lines()
        .find(|l| l.contains("after-row-commit"))
        .unwrap_or_default();
    assert!(!band.contains('·'), "{band}");
    assert!(band.contains('1'), "{band}");
}

#[test]
fn enter_asks_for_the_night_under_the_cursor() {
    let plan = plan(vec![Strategy::Naive], 10);
    let mut state = finished(&plan);
    state.update(MapAction::Down);
    state.update(MapAction::PageRight);
    let Some(MapCommand::Open(cell)) = state.update(MapAction::Open) else {
        panic!("enter opened nothing");
    };
    assert_eq!((cell.task, cell.point.as_str()), (1, "after-row-commit"));
    let scenario = scenario_for(&cell, 10);
    let lanes: Vec<&str> = scenario.lanes.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(lanes, ["naive", "guarded"]);
    let crash = crate::worker::CrashAt {
        task: 1,
        point: CrashPoint::AfterRowCommit,
    };
    assert!(scenario.lanes.iter().all(|l| l.crash_at == Some(crash)));
}

#[test]
fn pointing_at_a_glyph_selects_the_night_it_shows() {
    // 200 tasks in 51 columns at 80x24: the first column holds tasks 0..=3 and shows the
    // worst, task-003 before-write with 3 duplicated.
    let plan = plan(four(), 200);
    let mut state = finished(&plan);
    let area = Rect::new(0, 0, 80, 24);
    let text = screen(&state, 80, 24);
    let y = text
        .lines()
        .position(|l| l.starts_with("naive      before-write"))
        .unwrap_or_default() as u16;
    assert_eq!(cell_at(area, &state, LABEL, y), Some((0, 3)));
    let (band, task) = cell_at(area, &state, LABEL, y).unwrap_or_default();
    state.select(band, task);
    assert_eq!(state.selected().map(|c| c.duplicated_task_ids), Some(3));
    // The label, the axis and the gap between strategies are no cell.
    assert_eq!(cell_at(area, &state, 3, y), None);
    assert_eq!(cell_at(area, &state, LABEL, 1), None);
    assert_eq!(cell_at(area, &state, LABEL, y + 4), None);
    // Two-commit's after-row-commit band, one band below the gap.
    assert_eq!(
        cell_at(area, &state, LABEL + 10, y + 6).map(|(b, _)| b),
        Some(5)
    );
}

#[test]
fn tiny_terminals_do_not_panic() {
    let plan = plan(four(), 30);
    let mut state = finished(&plan);
    state.update(MapAction::ToggleHelp);
    for (w, h) in [(0, 0), (1, 1), (10, 3), (29, 5), (40, 10), (300, 80)] {
        let _ = screen(&state, w, h);
    }
}

#[test]
fn no_key_is_bound_twice() {
    assert_eq!(keymap::bound_twice(MAP_KEYS, &[Mode::Map]), []);
}

#[test]
fn the_map_reads_its_keys_from_the_one_binding_type() {
    let right = KeyEvent::new(KeyCode::Right, KeyModifiers::NONE);
    assert_eq!(action_for(right), Some(MapAction::Right));
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(action_for(ctrl_c), Some(MapAction::Quit));
    // The dashboard's keys are not the map's.
    assert_eq!(
        keymap::lookup(keymap::KEYMAP, Mode::Map, KeyCode::Char('s')),
        None
    );
    let help = keymap::help_of(MAP_KEYS, Mode::Map);
    assert!(help.iter().any(|(key, _)| *key == "enter"), "{help:?}");
    let pinned: Vec<&str> = (keymap::footer_of(MAP_KEYS, Mode::Map).iter())
        .filter(|(_, f)| f.pinned())
        .map(|(_, f)| f.name)
        .collect();
    assert_eq!(pinned, ["help", "quit"]);
}

/// A job's map: one group (`exec`), a band a point its job announced, a column a key.
fn exec_map(items: u64) -> MapState<crate::map::exec::ExecCell> {
    use crate::map::{Columns, Layout};
    MapState::with_layout(Layout {
        title: "reclaim map --exec python3 job.py · task-000 .. task-011".into(),
        bands: vec![
            ("exec".into(), "before-write".into()),
            ("exec".into(), "after-row-commit".into()),
            ("exec".into(), "after-commit".into()),
        ],
        columns: (0, items - 1),
        names: Columns::Keys(crate::queue::Queue::tasks(items)),
        items,
        about: "Each cell is a real night of your job.",
    })
}

#[test]
fn a_jobs_map_names_its_one_group_once_wherever_the_cursor_is() {
    let mut state = exec_map(12);
    state.update(MapAction::Down);
    state.update(MapAction::Down);
    let text = screen(&state, 80, 16);
    let labelled = text.lines().filter(|l| l.starts_with("exec  ")).count();
    // The first band's label, and the group's summary line: never the selected band's too.
    assert_eq!(labelled, 2, "{text}");
    assert!(text.contains("\n           after-commit     "), "{text}");
    assert!(text.contains("exec · after-commit · task-000"), "{text}");
    insta::assert_snapshot!(text);
}
