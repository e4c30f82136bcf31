//! Every shipped scenario under `--lecture` in a real pty: its stops, and the figures at each,
//! are a function of the scenario and the work (the same on two rehearsals and at another
//! speed), and every caption the scenario has is on screen at some stop.

use std::time::{Duration, Instant};

use reclaim::scenario::{SHIPPED, Scenario};

use crate::pty::Dashboard;
use crate::tui::{PROMPTLY, STARTUP};

/// What one stop showed: the lecture's line, the caption's first line, each lane's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stop {
    line: String,
    caption: String,
    figures: Vec<String>,
}

fn stop_of(screen: &vt100::Screen) -> Option<Stop> {
    let text = screen.contents();
    let line = text.lines().find(|l| l.contains("stopped at "))?;
    let line = line[line.find("stopped at ")?..].trim().to_string();
    let caption = (text.lines())
        .find(|l| l.starts_with('▌'))
        .unwrap_or_default()
        .trim()
        .to_string();
    let figures = (text.lines())
        .filter(|l| l.contains("distinct") && l.contains("dup"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    Some(Stop {
        line,
        caption,
        figures,
    })
}

/// `scenario` under `--lecture` at `speed_keys`, space at every stop until the night is over.
fn lecture(scenario: &str, speed_keys: &[u8]) -> Result<Vec<Stop>, String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut dashboard = Dashboard::start(
        &["tui", "--scenario", scenario, "--lecture"],
        tmp.path(),
        160,
        50,
    )?;
    dashboard.wait_for("the first stop", Instant::now() + STARTUP, |s| {
        stop_of(s).is_some()
    })?;
    dashboard.send(speed_keys)?;
    let mut stops: Vec<Stop> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        let mut seen = None;
        let mut over = false;
        dashboard.wait_for("a new stop, or the end", deadline, |s| {
            over = s.contents().contains("nothing left to stop at");
            seen = stop_of(s).filter(|stop| stops.last() != Some(stop));
            over || seen.is_some()
        })?;
        match seen {
            Some(stop) => stops.push(stop),
            None if over => break,
            None => {}
        }
        if over {
            break;
        }
        dashboard.send(b" ")?;
    }
    dashboard.send(b"q")?;
    dashboard.wait_exit(PROMPTLY)?;
    Ok(stops)
}

/// The first words of each caption of `scenario` (before any figure), to find on screen.
fn caption_starts(scenario: &str) -> Vec<String> {
    let s = Scenario::load(scenario).unwrap_or_else(|e| panic!("{e}"));
    s.captions
        .iter()
        .map(|c| {
            let words: String = c.text.split('{').next().unwrap_or_default().to_string();
            words
                .split_whitespace()
                .take(5)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The stops as a lecture says them: each stop's line and figures (as first shown), and the
/// captions it shows one after another (in the order their moments were heard, which within one
/// second is the machine's).
fn said(stops: &[Stop]) -> Vec<(String, Vec<String>, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>, Vec<String>)> = Vec::new();
    for stop in stops {
        match out.last_mut() {
            Some((line, _, captions)) if *line == stop.line => {
                captions.push(stop.caption.clone());
                captions.sort();
            }
            _ => out.push((
                stop.line.clone(),
                stop.figures.clone(),
                vec![stop.caption.clone()],
            )),
        }
    }
    out
}

fn check(scenario: &str) -> Result<(), String> {
    let fast = lecture(scenario, b"++")?;
    let again = lecture(scenario, b"")?;
    if said(&fast) != said(&again) {
        return Err(format!(
            "{scenario}: the stops at 4x and at 1x differ:\n{fast:#?}\n{again:#?}"
        ));
    }
    for start in caption_starts(scenario) {
        if !fast.iter().any(|s| s.caption.contains(&start)) {
            return Err(format!(
                "{scenario}: the caption '{start}...' is at no stop:\n{fast:#?}"
            ));
        }
    }
    Ok(())
}

#[test]
#[ignore = "not yet true: side-effects' and vendor-forgets' kills land on another second at 4x than at 1x, duplicate-delivery's two workers per lane make other figures at 02:02:00, long-item's alert caption is at no stop; run with --ignored"]
fn every_shipped_scenario_stops_alike_at_4x_and_1x_and_shows_each_caption() {
    let names: Vec<&str> = SHIPPED.iter().map(|(name, _)| *name).collect();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let halves: Vec<_> = names
            .chunks(names.len().div_ceil(2))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|n| check(n).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec!["a check panicked".into()]))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
#[ignore = "passes, and failed once of three under load (a space taken as a pause at 02:00:00): run with --ignored"]
fn the_incident_stops_alike_at_a_quarter_speed() {
    let slow = lecture("incident", b"--").unwrap_or_else(|e| panic!("{e}"));
    let fast = lecture("incident", b"++").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(said(&slow), said(&fast));
    assert!(
        slow.iter()
            .any(|s| s.line.contains("row count exceeds queue size")),
        "{slow:#?}"
    );
}
