//! The night's figures as CSV, one row per sample and lane, for a plot.

use std::io::{self, Write};

use crate::base::clock::SimTime;
use crate::record::Recording;

pub(super) fn write(recording: &Recording, out: &mut dyn Write) -> io::Result<String> {
    writeln!(
        out,
        "sim_time,sim_seconds,real_ms,lane,strategy,rows,distinct,duplicated,checkpoints,heartbeat_age_s,alive,progress,stale,restarts,kills"
    )?;
    let mut rows = 0;
    for sample in &recording.samples {
        for (info, lane) in recording.header.lanes.iter().zip(&sample.lanes) {
            let opt = |v: Option<String>| v.unwrap_or_default();
            writeln!(
                out,
                "{},{:.3},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                SimTime(sample.sim),
                sample.sim - crate::base::clock::NIGHT_START,
                sample.real_ms,
                field(&info.name),
                field(info.strategy.name()),
                lane.rows,
                lane.distinct,
                lane.duplicated,
                opt(lane.checkpoints.map(|c| c.to_string())),
                opt(lane.heartbeat_age.map(|a| format!("{a:.1}"))),
                lane.alive,
                lane.progress,
                lane.stale,
                lane.restarts,
                lane.kills
            )?;
            rows += 1;
        }
    }
    Ok(format!(
        "{rows} rows ({} samples x {} lanes)",
        recording.samples.len(),
        recording.header.lanes.len()
    ))
}

/// A text field, quoted when it holds a comma, a quote or a line break (RFC 4180); one that a
/// spreadsheet would take for a formula (`=`, `+`, `-`, `@`, a tab or a carriage return first:
/// a recording's lane named `=HYPERLINK(...)`) is made text by a leading `'`, as OWASP advises.
#[must_use]
pub fn field(text: &str) -> String {
    let text = if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cell_a_spreadsheet_would_evaluate_is_made_text() {
        assert_eq!(
            super::field("=HYPERLINK(\"http://x\",\"y\")"),
            "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""
        );
        assert_eq!(super::field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(super::field("guarded"), "guarded");
    }
}
