//! Captions: teaching lines tied to a moment of the night (a sim time or the first event of a
//! kind), when each falls, and the night's figures a caption may name so it is never wrong.

use serde::{Deserialize, Serialize};

use crate::engine::Kind;

use super::file::{Invalid, quoted};
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
    pub(super) fn validate(&self, n: usize, lanes: &[ScenarioLane]) -> Result<(), Invalid> {
        match (&self.at, &self.on) {
            (Some(at), None) => {
                parse_clock(at).ok_or_else(|| {
                    Invalid(format!(
                        "caption {n}: at = \"{at}\" is not a time such as 02:11:47"
                    ))
                })?;
            }
            (None, Some(on)) => {
                if !CAPTION_EVENTS.contains(&on.as_str()) {
                    return Err(Invalid(format!(
                        "caption {n}: on = \"{on}\" is not one of {}",
                        CAPTION_EVENTS.join(", ")
                    )));
                }
            }
            _ => {
                return Err(Invalid(format!(
                    "caption {n}: give exactly one of at = \"HH:MM:SS\" or on = \"EVENT\""
                )));
            }
        }
        if let Some(lane) = &self.lane
            && !lanes.iter().any(|l| &l.name == lane)
        {
            return Err(Invalid(format!(
                "caption {n}: lane = \"{lane}\" is not a lane of this scenario"
            )));
        }
        if self.text.trim().is_empty() {
            return Err(Invalid(format!("caption {n}: text is empty")));
        }
        let notes = self.notes.as_deref().unwrap_or_default();
        super::file::plain(&format!("caption {n}: text"), &self.text, &['\n'])?;
        super::file::plain(&format!("caption {n}: notes"), notes, &['\n', '\t'])?;
        if let Some(name) = unknown_placeholders(&self.text)
            .first()
            .or(unknown_placeholders(notes).first())
        {
            return Err(Invalid(format!(
                "caption {n}: {{{}}} is not one of the night's figures ({})",
                quoted(name),
                CAPTION_FIGURES.map(|f| format!("{{{f}}}")).join(", ")
            )));
        }
        Ok(())
    }
}

impl Caption {
    /// Its text and its notes with the night's figures: those of its lane (the first lane
    /// when it names none; `lane_names` in order), which `figures_of` gives for a lane's index
    /// (`None`: none to give, each figure written `?`).
    pub fn filled(
        &self,
        lane_names: &[&str],
        figures_of: impl FnOnce(usize) -> Option<CaptionFigures>,
    ) -> (String, Option<String>) {
        // A caption's figures are its own lane's; a lane not on screen has none to give.
        let lane = match self.lane.as_deref() {
            Some(name) => lane_names.iter().position(|l| *l == name),
            None => Some(0),
        };
        let figures = lane.and_then(figures_of);
        let fill = |text: &str| match &figures {
            Some(f) => fill_caption(text, f),
            None => unknown_figures(text),
        };
        (fill(&self.text), self.notes.as_deref().map(fill))
    }
}

/// The figures a caption's text may name, `{rows}` and the like: the night's own, so a caption
/// is never wrong about them.
#[derive(Debug, Clone, PartialEq)]
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
    /// The lane's newest task on its panel (`task-111`), once it has one.
    pub task: Option<String>,
    /// The caption's moment, seconds after midnight (`{at}` shows it as 02:11:47).
    pub at: Option<f64>,
}

/// The placeholders a caption may use.
pub const CAPTION_FIGURES: [&str; 12] = [
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
    "task",
    "at",
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
            task: snap.task.clone(),
            at: None,
        }
    }

    /// The same figures at the caption's moment `at` (seconds after midnight).
    #[must_use]
    pub fn at(self, at: f64) -> Self {
        Self {
            at: Some(at),
            ..self
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
            "task" => self.task.clone().unwrap_or_else(dash),
            "at" => self
                .at
                .map_or_else(dash, |at| crate::base::clock::SimTime(at).to_string()),
            _ => return None,
        })
    }
}

/// A caption's text with its `{name}` placeholders replaced by the night's figures.
#[must_use]
pub fn fill_caption(text: &str, figures: &CaptionFigures) -> String {
    fill_with(text, |name| figures.get(name))
}

/// A caption's text with its figures' placeholders written `?`: a night (a recording cut short
/// after its header) that has no figures to give says it has none, never `{rows}`.
#[must_use]
pub fn unknown_figures(text: &str) -> String {
    fill_with(text, |name| {
        CAPTION_FIGURES.contains(&name).then(|| "?".to_string())
    })
}

/// `text` with each `{name}` that `value_of` knows replaced by its value, the rest kept.
fn fill_with(text: &str, value_of: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let found = after
            .find('}')
            .and_then(|close| value_of(&after[..close]).map(|value| (value, close)));
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
            let lane = match &caption.lane {
                // A caption about a lane not on screen never falls (not at another lane's event).
                Some(name) => Some(lane_names.iter().position(|n| n == name)?),
                None => None,
            };
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

/// A lane as captions see it: its name, its worker (a strategy's name, or `exec`), how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneShape<'a> {
    pub name: &'a str,
    pub worker: &'a str,
    pub workers: usize,
}

impl<'a> LaneShape<'a> {
    #[must_use]
    pub fn of(lane: &'a ScenarioLane) -> Self {
        Self {
            name: &lane.name,
            worker: lane.worker.label(),
            workers: lane.workers,
        }
    }
}

/// Whether each caption still speaks of the lanes on screen (`now`), which the user may have
/// changed from the scenario's (`s` another strategy, `a` another worker): a caption about a
/// lane applies while that lane, and every other lane its text names, runs the scenario's
/// worker, as many of them; one about no lane in particular (it may speak of left and right)
/// while every lane does.
#[must_use]
pub fn captions_apply(
    captions: &[Caption],
    scenario: &[ScenarioLane],
    now: &[LaneShape<'_>],
) -> Vec<bool> {
    let unchanged =
        |i: usize| (scenario.get(i)).is_some_and(|lane| now.get(i) == Some(&LaneShape::of(lane)));
    let all = scenario.len() == now.len() && (0..scenario.len()).all(unchanged);
    captions
        .iter()
        .map(|caption| match &caption.lane {
            Some(name) => {
                let own = scenario.iter().position(|l| &l.name == name);
                let named = (scenario.iter().enumerate())
                    .filter(|(_, l)| names(&caption.text, &l.name))
                    .map(|(i, _)| i);
                own.is_some_and(unchanged) && named.into_iter().all(unchanged)
            }
            None => all,
        })
        .collect()
}

/// Whether `text` names `name` as a word of its own, in any case (`Guarded read its...`).
fn names(text: &str, name: &str) -> bool {
    let (text, name) = (text.to_lowercase(), name.to_lowercase());
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_');
    text.match_indices(&name).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + name.len()..].chars().next())
    })
}

/// The night's title for the lanes on screen: the scenario's while they are its own, with
/// their names where it names them (`naive vs guarded` becomes `naive vs keyed`), or followed
/// by them.
#[must_use]
pub fn title_for(title: &str, scenario: &[ScenarioLane], now: &[LaneShape<'_>]) -> String {
    let was: Vec<LaneShape<'_>> = scenario.iter().map(LaneShape::of).collect();
    if was == now {
        return title.to_string();
    }
    let names = |lanes: &[LaneShape<'_>]| {
        let names: Vec<String> = (lanes.iter())
            .map(|l| match l.workers {
                1 => l.name.to_string(),
                n => format!("{n} x {}", l.name),
            })
            .collect();
        names.join(" vs ")
    };
    let (old, new) = (names(&was), names(now));
    // A moment the title names (`one SIGKILL at 02:11:47`) was the scenario's night: with
    // other lanes the kill placed by task lands elsewhere (02:11:44 with a second naive
    // worker), so it is not said.
    let title = without_moments(title);
    if !old.is_empty() && title.contains(&old) {
        title.replacen(&old, &new, 1)
    } else {
        format!("{title} (now {new})")
    }
}

/// `title` less each ` at HH:MM:SS` in it.
fn without_moments(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    let mut rest = title;
    while let Some(i) = rest.find(" at ") {
        let after = &rest[i + 4..];
        let moment = after.get(..8).is_some_and(|m| parse_clock(m).is_some())
            && !after[8.min(after.len())..].starts_with(|c: char| c.is_ascii_digit());
        out.push_str(&rest[..i]);
        if moment {
            rest = &after[8..];
        } else {
            out.push_str(" at ");
            rest = after;
        }
    }
    out.push_str(rest);
    out
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

/// The lane caption `shown` of `captions` is about, as a place among the lanes `names`
/// (`None`: about no lane, or none showing).
#[must_use]
pub fn caption_lane<'a>(
    captions: &[Caption],
    shown: Option<usize>,
    mut names: impl Iterator<Item = &'a str>,
) -> Option<usize> {
    let name = captions.get(shown?)?.lane.as_deref()?;
    names.position(|n| n == name)
}

#[cfg(test)]
mod tests {
    use crate::engine::Kind;
    use crate::scenario::*;

    #[test]
    fn a_scenarios_text_that_would_act_on_the_screen_is_refused_and_line_breaks_are_kept() {
        let scenario = |title: &str, name: &str, text: &str, notes: &str| {
            format!(
                "title = \"{title}\"\n[[lane]]\nstrategy = \"naive\"\nname = \"{name}\"\n\
                 [[caption]]\nat = \"02:00:00\"\ntext = \"{text}\"\nnotes = \"{notes}\"\n"
            )
        };
        let fine = scenario("x", "n", "two\\nlines", "a\\tb\\nc");
        assert!(Scenario::parse("t", &fine).is_ok(), "{fine}");
        for (text, needle) in [
            (
                scenario("a\\u001b[31m", "n", "t", "n"),
                "title holds U+001B",
            ),
            (scenario("a\\u202eb", "n", "t", "n"), "title holds U+202E"),
            (scenario("x", "n\\u2066", "t", "n"), "lane 1: name"),
            (
                scenario("x", "n", "t\\u0007", "n"),
                "caption 1: text holds U+0007",
            ),
            (
                scenario("x", "n", "t", "\\u009b2J"),
                "caption 1: notes holds U+009B",
            ),
        ] {
            let err = Scenario::parse("t", &text)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn captions_fall_on_their_time_or_their_event() {
        use crate::engine::Mark;
        let text = "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\n\
            [[caption]]\nat = \"02:00:00\"\ntext = \"start\"\n\
            [[caption]]\non = \"kill\"\ntext = \"kill\"\n";
        let s = Scenario::parse("t", text).unwrap_or_else(|e| panic!("{e}"));
        let events = [CaptionEvent {
            sim: 7907.0,
            kind: Kind::Notice,
            mark: Some(Mark::Kill),
            lane: Some(0),
        }];
        let times = caption_times(&s.captions, &["naive".into()], &events.iter().copied());
        assert_eq!(times, [Some(7200.0), Some(7907.0)]);
        assert_eq!(current_caption(&times, 7500.0), Some(0));
        assert_eq!(current_caption(&times, 7907.0), Some(1));
        assert_eq!(current_caption(&times, 7000.0), None);
        let bad = "title = \"x\"\n[[lane]]\nstrategy = \"naive\"\n[[caption]]\non = \"lunch\"\ntext = \"t\"\n";
        let err = Scenario::parse("t", bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("caption 1: on = \"lunch\""), "{err}");
    }

    #[test]
    fn with_the_right_lane_switched_to_keyed_no_caption_speaks_of_guarded() {
        let s = Scenario::load("incident").unwrap_or_else(|e| panic!("{e}"));
        let as_shipped: Vec<LaneShape<'_>> = s.lanes.iter().map(LaneShape::of).collect();
        assert!(
            captions_apply(&s.captions, &s.lanes, &as_shipped)
                .iter()
                .all(|a| *a)
        );
        assert_eq!(title_for(&s.title, &s.lanes, &as_shipped), s.title);
        let mut now = as_shipped.clone();
        now[1] = LaneShape {
            name: "keyed",
            worker: "keyed",
            workers: 1,
        };
        let applies = captions_apply(&s.captions, &s.lanes, &now);
        let shown: Vec<&str> = (s.captions.iter().zip(&applies))
            .filter(|(_, a)| **a)
            .map(|(c, _)| c.text.as_str())
            .collect();
        assert!(!shown.is_empty());
        for text in &shown {
            assert!(!text.to_lowercase().contains("guarded"), "{text}");
            assert!(
                !text.contains("Left,"),
                "about both lanes as shipped: {text}"
            );
        }
        assert!(
            shown
                .iter()
                .any(|t| t.starts_with("The host takes the machine back"))
        );
        // The kill's moment was the shipped night's: with other lanes it is not promised.
        assert_eq!(
            title_for(&s.title, &s.lanes, &now),
            "The incident: one SIGKILL, naive vs keyed"
        );
        let mut two = as_shipped.clone();
        two[0].workers = 2;
        assert_eq!(
            title_for(&s.title, &s.lanes, &two),
            "The incident: one SIGKILL, 2 x naive vs guarded"
        );
        assert_eq!(
            super::without_moments("met at 02:11:47 at noon, at 02:11:470 and at 25:00:00"),
            "met at noon, at 02:11:470 and at 25:00:00"
        );
        // A caption about a lane not on screen falls at no other lane's event, and has no
        // other lane's figures.
        let events = [CaptionEvent {
            sim: 8000.0,
            kind: Kind::Done,
            mark: None,
            lane: Some(1),
        }];
        let names = ["naive".to_string(), "keyed".to_string()];
        let times = caption_times(&s.captions, &names, &events.iter().copied());
        let guarded_done = (s.captions.iter())
            .position(|c| c.lane.as_deref() == Some("guarded"))
            .unwrap_or_else(|| panic!("no guarded caption"));
        assert_eq!(times[guarded_done], None);
        let (text, _) = s.captions[guarded_done].filled(&["naive", "keyed"], |_| {
            panic!("figures asked of a lane the caption is not about")
        });
        assert!(text.contains("with ? rows for ? items"), "{text}");
        assert_eq!(
            super::unknown_figures("{rows} of {items}, {tea}"),
            "? of ?, {tea}"
        );
    }

    #[test]
    fn notes_name_the_moment_and_the_task_of_this_night() {
        let figures = CaptionFigures {
            lane: "naive".into(),
            items: 200,
            rows: 51,
            distinct: 51,
            duplicated: 0,
            kills: 1,
            restarts: 0,
            claimed: None,
            checkpoints: None,
            task: Some("task-050".into()),
            at: None,
        }
        .at(7398.0);
        // A kill by hand at 02:03:18, not the postmortem's 02:11:47 and task-111.
        assert_eq!(
            fill_caption("{at}: {rows} rows, the newest {task}", &figures),
            "02:03:18: 51 rows, the newest task-050"
        );
        let s = Scenario::load("incident").unwrap_or_else(|e| panic!("{e}"));
        let kill = (s.captions.iter())
            .find(|c| c.on.as_deref() == Some("kill"))
            .and_then(|c| c.notes.clone())
            .unwrap_or_default();
        assert!(
            kill.starts_with("{at}:") && kill.contains("{task}"),
            "{kill}"
        );
        assert!(!kill.contains("task-112"), "{kill}");
    }
}
