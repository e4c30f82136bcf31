//! Captions: teaching lines tied to a moment of the night (a sim time or the first event of a
//! kind), when each falls, and the night's figures a caption may name so it is never wrong.

use serde::{Deserialize, Serialize};

use crate::engine::Kind;

use super::file::quoted;
use super::{ScenarioLane, parse_clock};

/// A teaching caption attached to a moment: a sim time (`at = "02:11:47"`) or the first event of
/// a kind (`on = "kill"`), optionally in one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caption {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane: Option<String>,
    pub text: String,
    /// Speaker notes: not shown on the dashboard; `--notes FILE` appends them, with the
    /// caption, as the night reaches it (for a second screen). May name the night's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

/// The events a caption can wait for.
pub const CAPTION_EVENTS: [&str; 7] = [
    "start", "kill", "restart", "resume", "done", "alert", "symptom",
];

impl Caption {
    pub(super) fn validate(&self, n: usize, lanes: &[ScenarioLane]) -> Result<(), String> {
        match (&self.at, &self.on) {
            (Some(at), None) => {
                parse_clock(at).ok_or_else(|| {
                    format!("caption {n}: at = \"{at}\" is not a time such as 02:11:47")
                })?;
            }
            (None, Some(on)) => {
                if !CAPTION_EVENTS.contains(&on.as_str()) {
                    return Err(format!(
                        "caption {n}: on = \"{on}\" is not one of {}",
                        CAPTION_EVENTS.join(", ")
                    ));
                }
            }
            _ => {
                return Err(format!(
                    "caption {n}: give exactly one of at = \"HH:MM:SS\" or on = \"EVENT\""
                ));
            }
        }
        if let Some(lane) = &self.lane
            && !lanes.iter().any(|l| &l.name == lane)
        {
            return Err(format!(
                "caption {n}: lane = \"{lane}\" is not a lane of this scenario"
            ));
        }
        if self.text.trim().is_empty() {
            return Err(format!("caption {n}: text is empty"));
        }
        let notes = self.notes.as_deref().unwrap_or_default();
        if let Some(name) = unknown_placeholders(&self.text)
            .first()
            .or(unknown_placeholders(notes).first())
        {
            return Err(format!(
                "caption {n}: {{{}}} is not one of the night's figures ({})",
                quoted(name),
                CAPTION_FIGURES.map(|f| format!("{{{f}}}")).join(", ")
            ));
        }
        Ok(())
    }
}

impl Caption {
    /// Its text and its notes with the night's figures: those of its lane (the first lane
    /// when it names none; `lane_names` in order), which `figures_of` gives for a lane's index
    /// (`None`: left as written).
    pub fn filled(
        &self,
        lane_names: &[&str],
        figures_of: impl FnOnce(usize) -> Option<CaptionFigures>,
    ) -> (String, Option<String>) {
        let lane = (self.lane.as_deref())
            .and_then(|name| lane_names.iter().position(|l| *l == name))
            .unwrap_or(0);
        let figures = figures_of(lane);
        let fill = |text: &str| match &figures {
            Some(f) => fill_caption(text, f),
            None => text.to_string(),
        };
        (fill(&self.text), self.notes.as_deref().map(fill))
    }
}

/// The figures a caption's text may name, `{rows}` and the like: the night's own, so a caption
/// is never wrong about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptionFigures {
    pub lane: String,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    pub kills: u32,
    pub restarts: u32,
    /// What the worker claimed (`rows_written`), once it has.
    pub claimed: Option<u64>,
    pub checkpoints: Option<u64>,
}

/// The placeholders a caption may use.
pub const CAPTION_FIGURES: [&str; 10] = [
    "lane",
    "items",
    "rows",
    "distinct",
    "duplicated",
    "extra",
    "kills",
    "restarts",
    "claimed",
    "checkpoints",
];

impl CaptionFigures {
    /// A lane's figures as its panel shows them.
    #[must_use]
    pub fn of(snap: &crate::engine::LaneSnapshot, lane: &str, items: u64) -> Self {
        Self {
            lane: lane.to_string(),
            items,
            rows: snap.rows,
            distinct: snap.distinct,
            duplicated: snap.duplicated,
            kills: snap.kills,
            restarts: snap.restarts,
            claimed: snap.claimed.as_ref().map(|c| c.rows_written),
            checkpoints: snap.checkpoints,
        }
    }

    fn get(&self, name: &str) -> Option<String> {
        let dash = || "-".to_string();
        Some(match name {
            "lane" => self.lane.clone(),
            "items" => self.items.to_string(),
            "rows" => self.rows.to_string(),
            "distinct" => self.distinct.to_string(),
            "duplicated" => self.duplicated.to_string(),
            "extra" => self.rows.saturating_sub(self.distinct).to_string(),
            "kills" => self.kills.to_string(),
            "restarts" => self.restarts.to_string(),
            "claimed" => self.claimed.map_or_else(dash, |c| c.to_string()),
            "checkpoints" => self.checkpoints.map_or_else(dash, |c| c.to_string()),
            _ => return None,
        })
    }
}

/// A caption's text with its `{name}` placeholders replaced by the night's figures.
#[must_use]
pub fn fill_caption(text: &str, figures: &CaptionFigures) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let found = after
            .find('}')
            .and_then(|close| figures.get(&after[..close]).map(|value| (value, close)));
        if let Some((value, close)) = found {
            out.push_str(&value);
            rest = &after[close + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The placeholders a caption's text names that are not figures, if any.
pub(super) fn unknown_placeholders(text: &str) -> Vec<String> {
    let mut unknown = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        if !CAPTION_FIGURES.contains(&name) {
            unknown.push(name.to_string());
        }
        rest = &after[close + 1..];
    }
    unknown
}

/// One event as captions see it: sim time, kind, mark, lane.
#[derive(Debug, Clone, Copy)]
pub struct CaptionEvent {
    pub sim: f64,
    pub kind: Kind,
    pub mark: Option<crate::engine::Mark>,
    pub lane: Option<usize>,
}

/// When each caption falls (seconds after midnight), given the night's events so far; `None`
/// for a caption whose event has not happened.
#[must_use]
pub fn caption_times(
    captions: &[Caption],
    lane_names: &[String],
    events: &(impl Iterator<Item = CaptionEvent> + Clone),
) -> Vec<Option<f64>> {
    use crate::engine::Mark;
    captions
        .iter()
        .map(|caption| {
            if let Some(at) = &caption.at {
                return parse_clock(at);
            }
            let on = caption.on.as_deref().unwrap_or_default();
            let lane = caption
                .lane
                .as_ref()
                .and_then(|name| lane_names.iter().position(|n| n == name));
            events
                .clone()
                .find(|e| {
                    let kind_matches = match on {
                        "kill" => e.mark == Some(Mark::Kill),
                        "restart" => e.mark == Some(Mark::Restart),
                        other => e.kind.name() == other,
                    };
                    kind_matches && (lane.is_none() || e.lane == lane)
                })
                .map(|e| e.sim)
        })
        .collect()
}

/// The caption showing at `now` (seconds after midnight): the latest one whose moment has come.
#[must_use]
pub fn current_caption(times: &[Option<f64>], now: f64) -> Option<usize> {
    times
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.filter(|&t| t <= now).map(|t| (i, t)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
        .map(|(i, _)| i)
}
