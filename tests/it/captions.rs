//! Captions on the real dashboard in a pty: bound to the lanes on screen (after `s`, no caption
//! about a lane that is gone, and every figure the named lane's), and in step with the night.

use std::fs;
use std::time::{Duration, Instant};

use crate::pty::Dashboard;
use crate::tui::{PROMPTLY, STARTUP};

/// The caption lines of a notes file after its last night's heading.
fn last_nights_captions(notes: &str) -> (String, Vec<String>) {
    let start = notes.rfind("\n== ").unwrap_or(0);
    let night = &notes[start..];
    let heading = night.lines().nth(1).unwrap_or_default().to_string();
    let captions = (night.lines())
        .filter(|l| l.len() > 10 && l.as_bytes()[2] == b':' && l.as_bytes()[5] == b':')
        .map(str::to_string)
        .collect();
    (heading, captions)
}

#[test]
fn with_the_right_lane_switched_to_keyed_no_guarded_caption_shows_and_figures_are_the_lanes() {
    let tmp = tempfile::tempdir().unwrap();
    let notes = tmp.path().join("notes.txt");
    let mut dashboard = Dashboard::start(
        &["tui", "--notes", notes.to_str().unwrap()],
        tmp.path(),
        120,
        40,
    )
    .unwrap();
    dashboard
        .wait_for("the incident", Instant::now() + STARTUP, |s| {
            s.contents().contains("naive vs guarded")
        })
        .unwrap();
    // The right lane, then its strategy round to keyed: outbox, naive, two-commit, keyed.
    dashboard.send(b"\t").unwrap();
    for _ in 0..4 {
        dashboard.send(b"s").unwrap();
    }
    dashboard
        .wait_for(
            "the title of the lanes there are",
            Instant::now() + STARTUP,
            |s| s.contents().contains("naive vs keyed"),
        )
        .unwrap();
    let mut shown = Vec::new();
    let until = Instant::now() + Duration::from_secs(90);
    while Instant::now() < until {
        let screen = dashboard.text();
        if let Some(caption) = screen.lines().find(|l| l.starts_with('▌'))
            && shown.last() != Some(&caption.to_string())
        {
            shown.push(caption.to_string());
        }
        let text = fs::read_to_string(&notes).unwrap_or_default();
        if text.contains("The naive worker reports") && screen.contains("the night is over") {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = fs::read_to_string(&notes).unwrap();
    let (heading, captions) = last_nights_captions(&text);
    assert!(heading.contains("naive vs keyed"), "{heading}\n{text}");
    assert!(captions.len() >= 3, "{text}");
    for caption in captions.iter().chain(&shown) {
        assert!(
            !caption.to_lowercase().contains("guarded") && !caption.contains("Left,"),
            "a caption about lanes not on screen: {caption}\n{text}"
        );
    }
    // Each figure is its own lane's: naive's kill and naive's end.
    assert!(
        captions
            .iter()
            .any(|c| c.contains("112 rows are committed")),
        "{text}"
    );
    assert!(
        captions
            .iter()
            .any(|c| c.contains("rows_written=312") && c.contains("holds 312 rows")),
        "{text}"
    );
    dashboard.send(b"q").unwrap();
    let status = dashboard.wait_exit(PROMPTLY).unwrap();
    assert_eq!(status.exit_code(), 0, "{}", dashboard.text());
}
