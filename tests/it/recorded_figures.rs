//! A recording samples the night, not the screen: the same scenario recorded headless (`run
//! --scenario NAME --record`, at its pace or faster with `--speed`) and in the dashboard at 16x
//! (`tui --record`, `+` four times) holds the same figures at every second of the sim clock, and
//! `replay --check` passes both.
//! Before, a 16x recording's slide at 02:19:30 showed 288 rows where the night had 312, and a
//! headless recording differed from a 1x one on 821 of 2,344 lane-seconds. A night exact looks
//! are not made for (a relay, workers in lockstep, a long item, a pause) is looked at as each
//! second ends, and holds the same figures at every second too.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reclaim::record::Recording;

use crate::support::{COLS, Dashboard, PROMPTLY, ROWS, path_arg, reclaim_in_dir};

/// A lane's figures at one second, as a slide or a CSV export shows them, with its heartbeat
/// age at the second's end in milliseconds (the sample's age, grown from its stamp while the
/// lane is watched; tenths rounded an age of 1.35 s either way on the float's noise), and
/// whether it is progressing and stale (`alike` says what is compared).
type Figures = (
    u64,
    u64,
    u64,
    Option<u64>,
    u32,
    u32,
    Option<i64>,
    bool,
    bool,
);

/// A lane's last sample so far: its stamp, its heartbeat age (and whether it is watched, so
/// grows), its figures.
type Sampled = (f64, Option<(f64, bool)>, Figures);

/// Every lane's figures at each second from 02:00:00 to `last`: those of the last sample
/// stamped within or before that second (none before the first sample).
fn by_second(recording: &Recording, last: u64) -> Vec<Vec<Option<Figures>>> {
    let lanes = recording.header.lanes.len();
    let start = reclaim::base::clock::NIGHT_START as u64;
    let mut seconds = vec![vec![None; lanes]; (last - start + 1) as usize];
    let mut samples = recording.samples.iter().peekable();
    let mut now: Vec<Option<Sampled>> = vec![None; lanes];
    for (i, second) in (start..=last).enumerate() {
        while let Some(sample) = samples.next_if(|s| s.sim.floor() as u64 <= second) {
            for (lane, snap) in sample.lanes.iter().enumerate() {
                let figures = (
                    snap.rows,
                    snap.distinct,
                    snap.duplicated,
                    snap.checkpoints,
                    snap.restarts,
                    snap.kills,
                    None,
                    snap.progress,
                    snap.stale,
                );
                // A lane over keeps the age it ended with; a watched one's grows.
                let watched = snap.watched();
                let age = snap.heartbeat_age.map(|age| (age, watched));
                now[lane] = Some((sample.sim, age, figures));
            }
        }
        // The heartbeat's age at the end of the second, carried from the last sample's.
        let end = second as f64 + 1.0;
        for (lane, sampled) in now.iter().enumerate() {
            seconds[i][lane] = sampled.map(|(at, age, mut figures)| {
                figures.6 = age.map(|(age, watched)| {
                    let grown = if watched { end - at } else { 0.0 };
                    ((age + grown) * 1000.0).round() as i64
                });
                figures
            });
        }
    }
    seconds
}

/// Whether two lanes' figures at one second agree: rows, distinct, dup, ckpt, restarts, kills
/// and the heartbeat's age to the millisecond (long-item's moments fall between them: 301,000
/// and 300,999). Progress and stale are printed beside them in a failure, not compared: in
/// the second the dead-man's switch fires, one recording's last look may come before the
/// alert's moment and the other's after it (hung-worker at 02:13:30).
fn alike(p: Option<&Figures>, q: Option<&Figures>) -> bool {
    let figures = |f: &Figures| (f.0, f.1, f.2, f.3, f.4, f.5, f.6.is_some());
    let age = |f: &Figures| f.6.unwrap_or_default();
    p.map(figures) == q.map(figures) && p.zip(q).is_none_or(|(p, q)| age(p).abs_diff(age(q)) <= 1)
}

/// Where `record_headless` records `scenario` at `speed`.
fn headless_path(dir: &Path, scenario: &str, speed: &str) -> PathBuf {
    dir.join(format!("{scenario}-headless-{speed}.jsonl"))
}

/// Where `record_at_16x` records `scenario`.
fn at_16x_path(dir: &Path, scenario: &str) -> PathBuf {
    dir.join(format!("{scenario}-16x.jsonl"))
}

/// `scenario` run headless at `speed` times its pace and recorded; its exit code `code` (0
/// passed, 1 data wrong).
fn record_headless(dir: &Path, scenario: &str, code: i32, speed: &str) -> Recording {
    let path = headless_path(dir, scenario, speed);
    let run = reclaim_in_dir(
        dir,
        &[
            "run",
            "--scenario",
            scenario,
            "--record",
            path_arg(&path),
            "--speed",
            speed,
        ],
        Duration::from_secs(240),
    );
    assert_eq!(run.code, Some(code), "{}\n{}", run.stdout, run.stderr);
    Recording::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// Whether the recording at `path` has its end line, which is the last a recording writes:
/// looked for in the file's last 64 KiB. The whole file, read and searched at every look at the
/// screen (every 20 ms, a few MB by the end), cost the test more CPU than the dashboard it
/// watched (55% of a kill-storm test's samples, in an unoptimized `str::contains`).
fn has_ended(path: &Path) -> bool {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let len = file.metadata().map_or(0, |m| m.len());
    let mut tail = Vec::new();
    file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))
        .and_then(|_| file.read_to_end(&mut tail))
        .is_ok()
        && String::from_utf8_lossy(&tail).contains("\"type\":\"end\"")
}

fn record_at_16x(dir: &Path, scenario: &str) -> Recording {
    let path = at_16x_path(dir, scenario);
    let mut dashboard = Dashboard::start(
        &["tui", "--scenario", scenario, "--record", path_arg(&path)],
        dir,
        COLS,
        ROWS,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"++++").unwrap_or_else(|e| panic!("{e}"));
    let deadline = Instant::now() + Duration::from_secs(240);
    dashboard
        .wait_for("16x and the recording's end", deadline, |screen| {
            screen.contents().contains("16x") && has_ended(&path)
        })
        .unwrap_or_else(|e| panic!("{e}"));
    dashboard.send(b"q").unwrap_or_else(|e| panic!("{e}"));
    let status = dashboard
        .wait_exit(PROMPTLY)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.exit_code(), 0, "{status:?}\n{}", dashboard.text());
    Recording::load(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// `scenario` recorded headless at `speed` times its pace and in the dashboard at 16x: the two
/// agree on every lane's figures at every second of the night (up to the earlier end), and
/// `replay --check` judges each as the night was judged (`code`). The headless recording, and
/// the folder it is in, for more.
fn same_figures_every_second(
    scenario: &str,
    code: i32,
    speed: &str,
) -> (tempfile::TempDir, Recording) {
    let dir = crate::support::tempdir();
    // The two recordings side by side: each waits on its night's pace far more than it works.
    let (headless, fast) = std::thread::scope(|scope| {
        let headless = scope.spawn(|| record_headless(dir.path(), scenario, code, speed));
        let fast = record_at_16x(dir.path(), scenario);
        (joined(headless), fast)
    });
    assert_same_figures(scenario, &headless, &fast);
    let files = [
        headless_path(dir.path(), scenario, speed),
        at_16x_path(dir.path(), scenario),
    ];
    for path in files {
        let check = reclaim_in_dir(
            dir.path(),
            &["replay", "--check", path_arg(&path)],
            Duration::from_secs(60),
        );
        assert_eq!(check.code, Some(code), "{}\n{}", check.stdout, check.stderr);
    }
    (dir, headless)
}

/// What a scoped thread returned; its panic, with its own message, if it panicked.
fn joined<T>(handle: std::thread::ScopedJoinHandle<'_, T>) -> T {
    handle
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

/// `same_figures_every_second` for two scenarios side by side.
fn both_same_figures_every_second(first: (&str, i32), second: (&str, i32), speed: &str) {
    std::thread::scope(|scope| {
        let one = scope.spawn(|| same_figures_every_second(first.0, first.1, speed));
        let _ = same_figures_every_second(second.0, second.1, speed);
        let _ = joined(one);
    });
}

/// Two recordings of `scenario` agree on every lane's figures at every second of the night, up
/// to the earlier end.
fn assert_same_figures(scenario: &str, headless: &Recording, fast: &Recording) {
    let end = |r: &Recording| r.end.as_ref().map_or(0.0, |e| e.sim) as u64;
    let last = end(headless).min(end(fast));
    // The shortest shipped night (the-pause) runs 90 s.
    let start = reclaim::base::clock::NIGHT_START as u64;
    assert!(last > start + 60, "the nights ended at {last}");
    let (a, b) = (by_second(headless, last), by_second(fast, last));
    let names: Vec<&str> = (headless.header.lanes.iter())
        .map(|l| l.name.as_str())
        .collect();
    let differ: Vec<String> = (a.iter().zip(&b).enumerate())
        .flat_map(|(i, (x, y))| {
            (x.iter().zip(y).enumerate())
                .filter(|(_, (p, q))| !alike(p.as_ref(), q.as_ref()))
                .map(move |(lane, (p, q))| {
                    let at =
                        reclaim::base::clock::SimTime(reclaim::base::clock::NIGHT_START + i as f64);
                    format!("{at} lane {lane}: headless {p:?}, 16x {q:?}")
                })
        })
        .collect();
    assert!(
        differ.is_empty(),
        "{scenario} ({names:?}): {} lane-seconds differ of {}, first:\n{}",
        differ.len(),
        a.len() * names.len(),
        differ
            .iter()
            .take(8)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The incident at its own pace headless, headless at 16x (`--speed 16`) and in the dashboard
/// at 16x: one night, the same figures at every second.
#[test]
fn the_incident_recorded_headless_and_at_16x_holds_the_same_figures_every_second() {
    // 1: the naive lane's data is wrong, as the night's was.
    let (dir, slow) = same_figures_every_second("incident", 1, "1");
    let fast = record_headless(dir.path(), "incident", 1, "16");
    assert_same_figures("incident", &slow, &fast);
}

/// The other scenarios' headless recordings at four times their pace (the incident's test shows
/// a headless recording alike at 1x and 16x).
#[test]
fn the_kill_storm_recorded_headless_and_at_16x_holds_the_same_figures_every_second() {
    let _ = same_figures_every_second("kill-storm", 1, "4");
}

/// A hang (SIGSTOP, then SIGCONT at its moment) and a wipe of the checkpoints are moments of
/// the night like a kill: recorded exactly too.
#[test]
fn a_hang_and_a_wipe_recorded_headless_and_at_16x_hold_the_same_figures_every_second() {
    both_same_figures_every_second(("hung-worker", 0), ("wiped-checkpoints", 1), "4");
}

/// Nights exact looks are not made for are looked at as each second ends (the clock and the
/// grants stop there, the night settles, its figures are read): a relay and a vendor
/// (side-effects), two workers in lockstep (duplicate-delivery). Before, sampled at the clock,
/// a 16x recording showed the outbox lane's 10 rows at 02:00:00, and its headless and 16x
/// recordings differed on 1,492 of 2,558 lane-seconds.
#[test]
fn a_relay_and_workers_in_lockstep_recorded_headless_and_at_16x_hold_the_same_figures() {
    both_same_figures_every_second(("side-effects", 1), ("duplicate-delivery", 1), "4");
}

/// A long item's steps (long-item), claim and fenced with a worker paused past its lease
/// (the-pause): looked at as each second ends too.
#[test]
fn a_long_item_and_a_pause_recorded_headless_and_at_16x_hold_the_same_figures() {
    both_same_figures_every_second(("long-item", 1), ("the-pause", 1), "4");
}

/// Each `{name}` of `template` with the text `filled` gives it (the text around the
/// placeholders is the same in both); `None` when `filled` is not `template` filled.
fn placeholders(template: &str, filled: &str) -> Option<Vec<(String, String)>> {
    // The template as literal, placeholder, literal, ..., literal.
    let mut literals = vec![String::new()];
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = open + rest[open..].find('}')?;
        literals.last_mut()?.push_str(&rest[..open]);
        names.push(rest[open + 1..close].to_string());
        literals.push(String::new());
        rest = &rest[close + 1..];
    }
    literals.last_mut()?.push_str(rest);
    let mut text = filled.strip_prefix(literals[0].as_str())?;
    let mut values = Vec::new();
    for (name, literal) in names.into_iter().zip(&literals[1..]) {
        let end = if literal.is_empty() {
            text.len()
        } else {
            text.find(literal.as_str())?
        };
        values.push((name, text[..end].to_string()));
        text = &text[end + literal.len()..];
    }
    text.is_empty().then_some(values)
}

/// Every caption of every shipped scenario, in its recording made headless, as the replay
/// fills it (the `.cast` markers, `--notes`, slides): each of its figures is the one its
/// lane's panel shows at the caption's moment (the last sample there), never a row behind or
/// ahead (a replay once read `Guarded ends with 199 rows` beside `rows 200`).
#[test]
fn every_caption_of_every_scenario_has_its_lanes_figures_at_its_moment() {
    let dir = crate::support::tempdir();
    let names: Vec<&str> = (reclaim::scenario::SHIPPED.iter().map(|(n, _)| *n))
        .filter(|name| crate::support::runs_here(name))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let recorded: Vec<(String, String)> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    while let Some(name) =
                        names.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        let path = dir.path().join(format!("{name}.jsonl"));
                        // At sixteen times each scenario's pace: a caption's figures are
                        // the night's at its moment at any speed.
                        let run = reclaim_in_dir(
                            dir.path(),
                            &[
                                "run",
                                "--scenario",
                                name,
                                "--record",
                                path_arg(&path),
                                "--speed",
                                "16",
                            ],
                            Duration::from_secs(240),
                        );
                        mine.push((name.to_string(), format!("{run:?}")));
                    }
                    mine
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap_or_default())
            .collect()
    });
    assert_eq!(recorded.len(), names.len(), "{recorded:?}");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, run) in &recorded {
        let path = dir.path().join(format!("{name}.jsonl"));
        let recording = Recording::load(&path).unwrap_or_else(|e| panic!("{name}: {e}\n{run}"));
        let header = recording.header.clone();
        let samples = recording.samples.clone();
        let app = reclaim::tui::replay::ReplayApp::new(recording);
        let moments = app.caption_moments();
        assert!(!moments.is_empty(), "{name}: no caption reached\n{run}");
        for (i, text, at) in moments {
            let caption = &header.captions[i];
            let lane = caption.lane.as_deref().map_or(0, |n| {
                (header.lanes.iter().position(|l| l.name == n)).unwrap_or_else(|| panic!("{n}"))
            });
            let shown = (samples.iter().rev())
                .find(|s| s.sim <= at + 1e-6)
                .map(|s| &s.lanes[lane]);
            let Some(values) = placeholders(&caption.text, &text) else {
                failures.push(format!("{name}: '{text}' is not '{}' filled", caption.text));
                continue;
            };
            for (figure, value) in values {
                let want = shown.and_then(|s| match figure.as_str() {
                    "rows" => Some(s.rows.to_string()),
                    "distinct" => Some(s.distinct.to_string()),
                    "duplicated" => Some(s.duplicated.to_string()),
                    "extra" => Some(s.rows.saturating_sub(s.distinct).to_string()),
                    "kills" => Some(s.kills.to_string()),
                    "restarts" => Some(s.restarts.to_string()),
                    "checkpoints" => Some(s.checkpoints.map_or("-".into(), |c| c.to_string())),
                    "claimed" => Some(
                        (s.claimed.as_ref()).map_or("-".into(), |c| c.rows_written.to_string()),
                    ),
                    _ => None,
                });
                let Some(want) = want else {
                    continue;
                };
                checked += 1;
                if value != want {
                    let at = reclaim::base::clock::SimTime(at);
                    failures.push(format!(
                        "{name} at {at}: {{{figure}}} is {value} in '{text}', the panel shows {want}"
                    ));
                }
            }
        }
    }
    // Figures were read: a caption list that filled none would pass vacuously.
    assert!(checked >= 20, "only {checked} figures checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A loaded machine's tick can be long enough for the clock to go from a kill to the restart's
/// moment and start the worker again, all within it: the kill's second is looked at all the
/// same, at the kill's moment (a headless recording of side-effects showed 49 rows and no
/// kill from 02:05:15 to 02:05:32, beside a 16x one with the kill at 02:05:15). Here every
/// tick is that long: 100 ms apart at 100x, ten sim seconds, twice the restart delay.
#[test]
fn a_kill_and_its_restart_within_one_long_tick_are_each_looked_at() {
    let dir = crate::support::tempdir();
    let path = dir.path().join("long-ticks.toml");
    std::fs::write(
        &path,
        "title = \"Long ticks\"\nabout = \"A kill and its restart in one tick.\"\n\
         scale = 100.0\nitems = 8\ndelay_ms = 10.0\nrestart_delay = 5.0\n\n\
         [[lane]]\nstrategy = \"outbox\"\ncrash_at = \"task-004:after-send\"\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let scenario =
        reclaim::scenario::Scenario::load(path_arg(&path)).unwrap_or_else(|e| panic!("{e}"));
    let config = scenario.engine_config(dir.path(), 1, PathBuf::from(crate::support::BIN));
    let mut engine = reclaim::engine::Engine::start_with(config, Instant::now(), true)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut looks = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !engine.finished() {
        assert!(Instant::now() < deadline, "the night never ended");
        // The tick's length is the scenario here: ten sim seconds each.
        std::thread::sleep(Duration::from_millis(100));
        engine
            .tick(Instant::now())
            .unwrap_or_else(|e| panic!("{e}"));
        looks.extend(
            engine
                .exact_looks()
                .iter()
                .map(|l| (l.sim, l.lanes[0].kills)),
        );
    }
    let lines: Vec<String> = engine.timeline().iter().map(|e| e.line(None)).collect();
    let moment = |text: &str| {
        (engine.timeline().iter())
            .find(|e| e.line(None).contains(text))
            .map_or_else(
                || panic!("no {text:?} in:\n{}", lines.join("\n")),
                |e| e.sim.0,
            )
    };
    let (killed, restarted) = (moment("reclaimed by host"), moment("restarts the worker"));
    assert!(restarted > killed + 1.0, "{killed} {restarted}");
    assert!(
        looks
            .iter()
            .any(|&(at, kills)| kills == 1 && at < restarted),
        "no look holds the kill before the restart at {restarted} (killed at {killed}): {looks:?}"
    );
}
