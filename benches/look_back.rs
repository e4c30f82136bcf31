//! Benchmark: looking back at a live night (`b`), from the key to the first frame's view model,
//! at the tape's bound: 4,096 samples of two lanes (what `Night`'s `Tape` keeps at most) and
//! 1,000 timeline lines. Timed: cloning the samples and events (as `Night::past` does), building
//! the `ReplayApp`, moving to now and 15 sim-seconds back, and `view()`; then one frame drawn at
//! 120x40. The night's pause (SIGSTOP) and the terminal's write are not included.
//!
//! Run: `cargo bench --bench look_back`

use std::error::Error;
use std::hint::black_box;
use std::time::{Duration, Instant};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use reclaim::base::clock::NIGHT_START;
use reclaim::engine::{Kind, LaneSnapshot, Mark, Source};
use reclaim::record::{Event, Header, LaneInfo, Recording, Sample};
use reclaim::tui::Screen as _;
use reclaim::tui::keymap::KeyAction;
use reclaim::tui::replay::ReplayApp;
use reclaim::tui::theme::Theme;
use reclaim::tui::ui::render_to;

type BenchResult<T> = Result<T, Box<dyn Error>>;

const SAMPLES: usize = 4096;
const EVENTS: usize = 1000;
const WARMUP: usize = 5;
const RUNS: usize = 50;

fn snapshot(rows: u64) -> BenchResult<LaneSnapshot> {
    let json = format!(
        r#"{{"rows":{rows},"distinct":{rows},"duplicated":0,"checkpoints":{rows},
        "heartbeat_age":2.0,"alive":true,"progress":true,"stale":false,
        "state":"running pid 4242","state_kind":"running","task":"task-{:03}","restarts":0,
        "kills":0,"workers":1,"claimed":null,"restarted_at_zero":false}}"#,
        rows.saturating_sub(1)
    );
    Ok(serde_json::from_str(&json)?)
}

fn night() -> BenchResult<Recording> {
    let lane = |name: &str| LaneInfo {
        name: name.into(),
        strategy: name.to_string().into(),
        items: 200_000,
        db: format!("/tmp/{name}.db").into(),
        vendor: false,
    };
    let header = Header {
        format: "reclaim-session".into(),
        version: 1,
        reclaim: "bench".into(),
        started_unix: 0.0,
        title: "look back".into(),
        scenario: "bench".into(),
        seed: 1,
        scale: 100.0,
        dead_man: 300.0,
        lanes: vec![lane("naive"), lane("guarded")],
        captions: Vec::new(),
        warehouse: None,
    };
    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let rows = i as u64 * 40;
        samples.push(Sample {
            real_ms: i as u64 * 100,
            sim: NIGHT_START + i as f64 * 10.0,
            lanes: vec![snapshot(rows)?, snapshot(rows)?],
        });
    }
    let events = (0..EVENTS)
        .map(|i| Event {
            real_ms: i as u64 * 400,
            sim: NIGHT_START + i as f64 * 40.0,
            lane: Some(i % 2),
            source: Source::Runner,
            kind: Kind::Notice,
            text: "instance reclaimed by host  (SIGKILL, pid 4242)".into(),
            mark: (i % 10 == 0).then_some(Mark::Kill),
            fact: None,
        })
        .collect();
    Ok(Recording {
        header,
        events,
        samples,
        end: None,
        truncated: false,
    })
}

fn main() -> BenchResult<()> {
    let tape = night()?;
    let mut times = Vec::with_capacity(RUNS);
    let area = Rect::new(0, 0, 120, 40);
    let mut buf = Buffer::empty(area);
    for run in 0..WARMUP + RUNS {
        let started = Instant::now();
        let past = Recording {
            header: tape.header.clone(),
            events: tape.events.clone(),
            samples: tape.samples.clone(),
            end: None,
            truncated: false,
        };
        let mut replay = ReplayApp::new(past);
        replay.seek(f64::INFINITY);
        replay.update(KeyAction::ScrubBack, started)?;
        let view = black_box(replay.view());
        let built = started.elapsed();
        render_to(area, &mut buf, &view, Theme::colored());
        let drawn = started.elapsed();
        if run >= WARMUP {
            times.push((built, drawn));
        }
        buf.reset();
    }
    times.sort();
    let pick = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("look back: {SAMPLES} samples x 2 lanes, {EVENTS} timeline lines, {RUNS} runs");
    for (name, q) in [("min", 0.0), ("median", 0.5), ("p95", 0.95), ("max", 1.0)] {
        let (built, drawn) = pick(q);
        println!(
            "{name:>7}: view model {:.2} ms, with the first frame drawn {:.2} ms",
            ms(built),
            ms(drawn)
        );
    }
    Ok(())
}
