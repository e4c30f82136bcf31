//! asciicast v2 (the asciinema format): a JSON header line, then `[time, "o", text]` output
//! events and `[time, "m", label]` markers, which the asciinema player shows as chapter stops.
//!
//! Frames follow the recording's own timing: one at each sample (every 100 ms of the night, and
//! after each event), each sending only the rows that changed since the one before.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::json;

use super::{Spec, ansi, frame};
use crate::engine::Mark;
use crate::record::Recording;
use crate::tui::replay::ReplayApp;

pub(super) fn write(
    recording: &Recording,
    request: &Spec<'_>,
    out: &mut dyn Write,
) -> io::Result<String> {
    let (w, h) = request.size;
    let header = json!({
        "version": 2,
        "width": w,
        "height": h,
        "timestamp": recording.header.started_unix as u64,
        "title": format!("reclaim: {}", recording.header.title),
        "env": {"TERM": "xterm-256color"},
    });
    writeln!(out, "{header}")?;
    let mut events: Vec<(f64, &'static str, String)> = Vec::new();
    // Markers: each kill and restart, and each caption as the night reaches it.
    for event in &recording.events {
        let label = match event.mark {
            Some(Mark::Kill) => "kill",
            Some(Mark::Restart) => "restart",
            None => continue,
        };
        let lane = event
            .lane
            .and_then(|l| recording.header.lanes.get(l))
            .map_or(String::new(), |l| format!(" ({})", l.name));
        let at = crate::base::clock::SimTime(event.sim);
        events.push((seconds(event.real_ms), "m", format!("{at} {label}{lane}")));
    }
    let mut app = ReplayApp::new(recording.clone());
    for (_, text, sim) in app.caption_moments() {
        let real = real_at(recording, sim);
        let at = crate::base::clock::SimTime(sim);
        events.push((real, "m", format!("{at} caption: {text}")));
    }
    let markers = events.len();
    // Frames: every sample, then the end (the verdict).
    let mut moments: Vec<(f64, f64)> = recording
        .samples
        .iter()
        .map(|s| (seconds(s.real_ms), s.sim))
        .collect();
    if let Some(end) = &recording.end {
        moments.push((seconds(end.real_ms), end.sim));
    }
    let mut previous: Vec<String> = Vec::new();
    let mut frames = 0;
    for (t, sim) in moments {
        let buffer = frame(&mut app, sim, request.size, request.theme);
        let rows: Vec<String> = (0..h).map(|y| ansi::row(&buffer, y)).collect();
        let mut text = String::new();
        if previous.is_empty() {
            // Hide the cursor and start from a clear screen.
            text.push_str("\x1b[?25l\x1b[2J");
        }
        for (y, row) in rows.iter().enumerate() {
            if previous.get(y) != Some(row) {
                let _ = write!(text, "\x1b[{};1H{row}", y + 1);
            }
        }
        if !text.is_empty() {
            events.push((t, "o", text));
            frames += 1;
        }
        previous = rows;
    }
    // A stable order: by time, frames before the markers they lead to.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)));
    let mut last = 0.0_f64;
    for (t, kind, data) in events {
        // Times never go backwards in a cast.
        last = last.max(t);
        writeln!(
            out,
            "{}",
            json!([(last * 1000.0).round() / 1000.0, kind, data])
        )?;
    }
    Ok(format!(
        "{frames} frames and {markers} markers (kills, restarts, captions), {w}x{h}, {last:.1} s"
    ))
}

fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// The real time (seconds into the recording) at which the night reached `sim`: the first
/// sample at or after it.
fn real_at(recording: &Recording, sim: f64) -> f64 {
    recording.samples.iter().find(|s| s.sim >= sim).map_or_else(
        || recording.end.as_ref().map_or(0.0, |e| seconds(e.real_ms)),
        |s| seconds(s.real_ms),
    )
}
