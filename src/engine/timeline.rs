//! The night's shared timeline: one entry per line of the postmortem-style log.

use serde::Serialize;

use crate::clock::SimTime;

/// Where a timeline line comes from, as in the postmortem's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Worker,
    Runner,
}

/// One line of the shared timeline: `02:11:47  runner  notice  instance reclaimed by host`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub sim: SimTime,
    /// Real milliseconds since the night began.
    pub real_ms: u64,
    pub lane: Option<usize>,
    pub source: Source,
    pub kind: &'static str,
    pub text: String,
    /// Kills and restarts, which the charts mark on the time axis.
    pub mark: Option<Mark>,
}

/// A moment worth marking on a chart's time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mark {
    Kill,
    Restart,
}

impl Entry {
    /// The line with the lane's name in a column after the time, for a timeline several lanes
    /// share (the dashboard's).
    #[must_use]
    pub fn line_in_lane(&self, lane_name: &str, width: usize) -> String {
        timeline_line(
            self.sim,
            Some((lane_name, width)),
            self.source,
            self.kind,
            &self.text,
        )
    }

    /// The line in the postmortem's format; `lane_name` is appended when several lanes share
    /// the timeline.
    #[must_use]
    pub fn line(&self, lane_name: Option<&str>) -> String {
        let line = timeline_line(self.sim, None, self.source, self.kind, &self.text);
        match lane_name {
            Some(name) => format!("{line}  [{name}]"),
            None => line,
        }
    }
}

/// One timeline line, `02:11:47  runner  notice  instance reclaimed by host`, with the lane's
/// name (padded to `width`) in a column after the time when one is given. Live entries and
/// recorded events are both written by this.
#[must_use]
pub fn timeline_line(
    sim: SimTime,
    lane: Option<(&str, usize)>,
    source: Source,
    kind: &str,
    text: &str,
) -> String {
    let source = match source {
        Source::Worker => "worker",
        Source::Runner => "runner",
    };
    let lane = lane
        .map(|(name, width)| format!("{name:<width$}  "))
        .unwrap_or_default();
    format!("{sim}  {lane}{source}  {kind:<7} {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_lines_match_the_postmortem() {
        let entry = Entry {
            sim: SimTime(crate::clock::NIGHT_START + 707.0),
            real_ms: 0,
            lane: Some(0),
            source: Source::Runner,
            kind: "notice",
            text: "instance reclaimed by host".into(),
            mark: Some(Mark::Kill),
        };
        assert_eq!(
            entry.line(None),
            "02:11:47  runner  notice  instance reclaimed by host"
        );
        assert_eq!(
            entry.line(Some("naive")),
            "02:11:47  runner  notice  instance reclaimed by host  [naive]"
        );
    }
}
