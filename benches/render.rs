//! Benchmark: rendering one dashboard frame into a `Buffer` with `reclaim::tui::ui::render_to`.
//!
//! The view is fixed: the incident's night near its end, every lane carrying full curves (400
//! points each for rows, distinct, duplicated, checkpoints and heartbeat age), kill and restart
//! markers, and a 200-line timeline. Only `render_to` is timed: building the view from the engine
//! (`App::view`, which clones the series) and the terminal's diff and write are not.
//!
//! Run: `cargo bench --bench render`

use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use reclaim::base::clock::{NIGHT_START, SimTime};
use reclaim::tui::theme::Theme;
use reclaim::tui::ui::render_to;
use reclaim::tui::view::{Dashboard, LaneView, Marker, MarkerKind, Series, StateKind, Tone};
use reclaim::verdict::Symptom;

type BenchResult<T> = Result<T, Box<dyn Error>>;

/// Points per curve, as the dashboard's downsampled history holds at most.
const POINTS: usize = 400;
const TIMELINE_LINES: usize = 200;
/// Untimed frames first, so caches and allocations settle.
const WARMUP: usize = 30;
/// Timed frames per case; the median is reported.
const FRAMES: usize = 300;
/// The dashboard draws at most once per 100 ms (`FRAME` in src/tui/mod.rs) when nothing happens.
const FRAMES_PER_SECOND: f64 = 10.0;
/// The end of the x axis, sim seconds since 02:00: the incident's night with its restart.
const X_MAX: f64 = 2_000.0;
/// Sim seconds per item at the incident's pace (63 ms real at scale 100).
const PER_ITEM: f64 = 6.3;

struct Case {
    lanes: usize,
    width: u16,
    height: u16,
}

const CASES: [Case; 4] = [
    Case {
        lanes: 2,
        width: 80,
        height: 24,
    },
    Case {
        lanes: 2,
        width: 120,
        height: 40,
    },
    Case {
        lanes: 2,
        width: 200,
        height: 60,
    },
    Case {
        lanes: 4,
        width: 200,
        height: 60,
    },
];

fn main() -> Result<(), Box<dyn Error>> {
    let theme = Theme::colored();
    println!(
        "render: one dashboard frame via render_to, {POINTS} points per curve, {TIMELINE_LINES}-line timeline; {WARMUP} warm-up frames, then the median of {FRAMES}"
    );
    println!();
    println!(
        "{:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>16}",
        "lanes", "size", "median", "min", "p95", "max", "at 10 fps"
    );
    for case in &CASES {
        let view = dashboard(case.lanes);
        let frames = measure(&view, case, theme)?;
        let med = median(&frames);
        let share = med.as_secs_f64() * FRAMES_PER_SECOND * 100.0;
        println!(
            "{:>6} {:>8} {:>10} {:>10} {:>10} {:>10} {:>16}",
            case.lanes,
            format!("{}x{}", case.width, case.height),
            human(med),
            human(percentile(&frames, 0.0)),
            human(percentile(&frames, 0.95)),
            human(percentile(&frames, 1.0)),
            format!("{share:.2}% of a core"),
        );
    }
    Ok(())
}

fn measure(view: &Dashboard, case: &Case, theme: Theme) -> BenchResult<Vec<Duration>> {
    let area = Rect::new(0, 0, case.width, case.height);
    let mut buf = Buffer::empty(area);
    render_to(area, &mut buf, view, theme);
    check_drawn(&buf, view, case)?;
    let mut frames = Vec::with_capacity(FRAMES);
    for frame in 0..WARMUP + FRAMES {
        // A terminal hands ratatui a cleared buffer for every frame.
        buf.reset();
        let started = Instant::now();
        render_to(area, black_box(&mut buf), black_box(view), theme);
        let took = started.elapsed();
        black_box(&buf);
        if frame >= WARMUP {
            frames.push(took);
        }
    }
    Ok(frames)
}

/// Guards against timing the wrong thing (the "terminal too small" notice, an empty panel).
fn check_drawn(buf: &Buffer, view: &Dashboard, case: &Case) -> BenchResult<()> {
    let screen: String = buf.content().iter().map(Cell::symbol).collect();
    let size = format!("{}x{}", case.width, case.height);
    if screen.contains("too small") {
        return Err(format!("{size}: the dashboard says the terminal is too small").into());
    }
    // Each lane panel ends with its derived verdict.
    let panels = screen.matches("derived ").count();
    if panels != view.lanes.len() {
        return Err(format!(
            "{size}: {panels} lane panels show their verdict, expected {}",
            view.lanes.len()
        )
        .into());
    }
    if !screen.contains("timeline") {
        return Err(format!("{size}: the timeline is not on the screen").into());
    }
    Ok(())
}

/// The incident's night near its end, with `lanes` lanes (2: naive and guarded; 4: all four
/// strategies).
fn dashboard(lanes: usize) -> Dashboard {
    let strategies = ["naive", "guarded", "two-commit", "keyed"];
    let lane_views: Vec<LaneView> = strategies
        .iter()
        .take(lanes)
        .map(|strategy| lane(strategy))
        .collect();
    Dashboard {
        title: "The incident: one SIGKILL at 02:11:47, naive vs guarded".into(),
        scenario: "incident".into(),
        clock: SimTime(NIGHT_START + X_MAX - 10.0),
        speed: 100.0,
        paused: false,
        seed: 214,
        random_kills: false,
        lanes: lane_views,
        selected: 0,
        zoom: false,
        timeline: timeline(),
        timeline_scroll: 0,
        symptoms: Symptom::ALL
            .iter()
            .enumerate()
            .map(|(i, symptom)| (*symptom, i < 2))
            .collect(),
        help: false,
        notice: None,
        mode: reclaim::tui::keymap::Mode::Live,
        caption: None,
        recording: None,
        replay: None,
        ids: None,
        lecture: None,
        warehouse: None,
        x_max: X_MAX,
        db_dir: "/tmp/reclaim-tui-bench".into(),
    }
}

/// One lane killed at 02:11:47 (task-111) and restarted 18 sim seconds later; the naive lane
/// starts again at task-000, the others resume.
fn lane(strategy: &str) -> LaneView {
    let kill = 707.0;
    let restart = 725.0;
    let items = 200.0;
    let naive = strategy == "naive";
    let done_before = (kill / PER_ITEM).floor();
    let xs = (0..POINTS).map(|i| X_MAX * i as f64 / (POINTS - 1) as f64);
    let mut series = Series::default();
    for x in xs {
        let after = ((x - restart).max(0.0) / PER_ITEM).floor();
        let (rows, distinct) = if x < restart {
            let n = (x / PER_ITEM).floor().min(done_before);
            (n, n)
        } else if naive {
            let rows = done_before + after.min(items);
            (rows, done_before.max(after.min(items)))
        } else {
            let n = (done_before + after).min(items);
            (n, n)
        };
        let checkpoints = if naive { 0.0 } else { distinct };
        let heartbeat = if (kill..restart).contains(&x) {
            x - kill
        } else {
            x % PER_ITEM
        };
        series.rows.push((x, rows));
        series.distinct.push((x, distinct));
        series.duplicated.push((x, rows - distinct));
        series.checkpoints.push((x, checkpoints));
        series.heartbeat_age.push((x, heartbeat));
    }
    let markers = vec![
        Marker {
            at: kill,
            kind: MarkerKind::Kill,
        },
        Marker {
            at: restart,
            kind: MarkerKind::Restart,
        },
        Marker {
            at: 1_400.0,
            kind: MarkerKind::Kill,
        },
        Marker {
            at: 1_418.0,
            kind: MarkerKind::Restart,
        },
    ];
    let rows = if naive { 312 } else { 200 };
    let duplicated = rows - 200;
    LaneView {
        name: strategy.to_string(),
        strategy: strategy.to_string(),
        state: "done".into(),
        state_kind: StateKind::Done,
        alive: false,
        progress: false,
        task: Some("task-199".into()),
        restarts: 2,
        kills: 2,
        workers: 1,
        items: 200,
        rows,
        distinct: 200,
        duplicated,
        checkpoints: (!naive).then_some(200),
        messages: None,
        series,
        markers,
        heartbeat_age: Some(4.0),
        no_heartbeat: false,
        dead_man: 300.0,
        alert: None,
        claimed: Some(format!("rows_written={rows} status=ok")),
        derived: if naive {
            format!("DATA WRONG ({duplicated} duplicated task ids)")
        } else {
            "ok: 200 of 200 tasks, each exactly once".into()
        },
        derived_ok: Some(!naive),
        disagreement: naive
            .then(|| format!("the worker says ok; {duplicated} task ids were written twice")),
        tables: None,
    }
}

/// A timeline as the dashboard formats it: sim time, lane, event.
fn timeline() -> Vec<(String, Tone)> {
    (0..TIMELINE_LINES)
        .map(|i| {
            let at = SimTime(NIGHT_START + i as f64 * X_MAX / TIMELINE_LINES as f64);
            let lane = if i % 2 == 0 { "naive  " } else { "guarded" };
            let (event, tone) = match i % 7 {
                0 => (
                    "killed by SIGKILL (host reclaimed the instance)".to_string(),
                    Tone::Bad,
                ),
                1 => (format!("restarted, pid {}", 40_000 + i), Tone::Plain),
                2 => (
                    "symptom: worker restarts at item zero".to_string(),
                    Tone::Warn,
                ),
                3 => (format!("committed task-{:03}", i % 200), Tone::Plain),
                4 => ("runner heartbeat stale: 312s".to_string(), Tone::Bad),
                5 => (
                    format!("resumed after checkpoint task-{:03}", i % 200),
                    Tone::Plain,
                ),
                _ => (
                    format!("done rows_written={} status=ok", 200 + i),
                    Tone::Plain,
                ),
            };
            (format!("{at}  {lane}  {event}"), tone)
        })
        .collect()
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// The sample at rank `q` (0 = min, 1 = max) of the sorted samples (nearest rank).
fn percentile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// A duration in the unit that keeps three significant figures readable.
fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 {
        format!("{secs:.2} s")
    } else if secs >= 1e-3 {
        format!("{:.2} ms", secs * 1e3)
    } else {
        format!("{:.1} µs", secs * 1e6)
    }
}
