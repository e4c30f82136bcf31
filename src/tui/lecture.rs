//! Lecture mode (`--lecture`): the night stops at each moment a teacher talks about (a caption,
//! a kill, a restart, an alert, a symptom, a worker's `done`, a verdict) and says what it
//! stopped for; `space` goes on to the next one. Pure: the live and the replay screens decide
//! when to stop with these types and show `Hold::describe`.

use crate::base::clock::SimTime;
use crate::engine::{Fact, Kind, Mark, StopWhen};
use crate::scenario::Caption;
use crate::tui::view::LectureLine;
use crate::verdict::Symptom;

/// One reason the night stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// A teaching caption was reached.
    Caption,
    /// The host killed this lane's worker.
    Kill(String),
    /// This lane's worker died on its own (and is restarted as after a kill).
    Died(String),
    /// This lane's worker was killed at its planned crash point (`crash_at`).
    CrashPoint(String),
    /// The supervisor restarted this lane's worker.
    Restart(String),
    /// The dead-man's switch fired for this lane.
    Alert(String),
    /// This lane's worker was hung (SIGSTOP): alive, no progress.
    Hang(String),
    /// This lane's hung worker was resumed (SIGCONT).
    Resumed(String),
    /// A row of the postmortem's symptom table showed up: its text.
    Symptom(String),
    /// A worker printed its `done` line (its own word on how it went).
    Done(String),
    /// A lane's status, derived from its rows: lane, verdict.
    Verdict(String, String),
}

/// The timeline entries a lecture's clock stops on: those `why` stops for, and those a
/// caption waits for (`on = "resume"`, `"start"`), so each stop lands on its own second.
#[must_use]
pub fn stop_when(captions: &[Caption]) -> StopWhen {
    // Notices: a hang and its resume, which the operator may cause between two ticks.
    let mut kinds = vec![Kind::Alert, Kind::Symptom, Kind::Done, Kind::Notice];
    for on in captions.iter().filter_map(|c| c.on.as_deref()) {
        let kind = match on {
            "start" => Kind::Start,
            "resume" => Kind::Resume,
            "done" => Kind::Done,
            "alert" => Kind::Alert,
            "symptom" => Kind::Symptom,
            // `kill` and `restart` are marks.
            _ => continue,
        };
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    StopWhen { marks: true, kinds }
}

/// The timeline entries the clock lands on outside a lecture: those a caption waits for, so
/// the night holds for it on its own second.
#[must_use]
pub fn caption_stops(captions: &[Caption]) -> StopWhen {
    let mut when = stop_when(captions);
    when.marks = captions
        .iter()
        .any(|c| matches!(c.on.as_deref(), Some("kill" | "restart")));
    when.kinds
        .retain(|kind| (captions.iter()).any(|c| c.on.as_deref() == Some(kind.name())));
    when
}

/// What a stop calls the worker of a line that names no lane.
const NO_LANE: &str = "the worker";

/// What a timeline line is worth stopping for, if anything, from its kind, mark and fact (what
/// it says as data); `lane` names its lane, and a symptom is said in the line's `text`.
#[must_use]
pub fn why(
    (kind, mark, fact): (Kind, Option<Mark>, Option<&Fact>),
    lane: Option<&str>,
    text: &str,
) -> Option<Why> {
    let lane = lane.unwrap_or(NO_LANE).to_string();
    match (mark, kind) {
        (Some(Mark::Kill), _) if fact == Some(&Fact::DiedOnItsOwn) => Some(Why::Died(lane)),
        (Some(Mark::Kill), _) if fact == Some(&Fact::AtCrashPoint) => Some(Why::CrashPoint(lane)),
        (Some(Mark::Kill), _) => Some(Why::Kill(lane)),
        (Some(Mark::Restart), _) => Some(Why::Restart(lane)),
        (None, Kind::Alert) => Some(Why::Alert(lane)),
        (None, Kind::Notice) if fact == Some(&Fact::Hung) => Some(Why::Hang(lane)),
        (None, Kind::Notice) if fact == Some(&Fact::Resumed) => Some(Why::Resumed(lane)),
        // The rows past the queue: the stop says the symptom as the panel does (the figures
        // light it too, on the same second).
        (None, Kind::Symptom) if fact == Some(&Fact::PastQueue) => {
            Some(Why::Symptom(Symptom::RowsExceedQueue.seen().to_string()))
        }
        (None, Kind::Symptom) => Some(Why::Symptom(text.to_string())),
        (None, Kind::Done) => Some(Why::Done(lane)),
        _ => None,
    }
}

/// The symptoms a lecture stops on that the timeline does not log (the panel shows them from
/// the figures): rows beyond the queue, a claim the rows contradict. Each lit in `now` and not
/// in `lit` yet is a moment, and is added to `lit`. (The restart at item zero is logged.)
pub fn newly_lit(lit: &mut Vec<Symptom>, now: &[(Symptom, bool)]) -> Vec<Why> {
    let mut moments = Vec::new();
    for &(symptom, seen) in now {
        if seen && symptom != Symptom::RestartsAtZero && !lit.contains(&symptom) {
            lit.push(symptom);
            moments.push(Why::Symptom(symptom.seen().to_string()));
        }
    }
    moments
}

impl Why {
    /// A lane's verdict as a lecture says it: the rows' status, and what went wrong at the
    /// receiving end when its items left the database.
    #[must_use]
    pub fn verdict(
        lane: &str,
        derived: &str,
        messages: Option<&crate::fake_vendor::Counts>,
    ) -> Self {
        let verdict = match messages.and_then(crate::fake_vendor::Counts::short_verdict) {
            Some(wrong) => format!("{derived}, but {wrong}"),
            None => derived.to_string(),
        };
        Self::Verdict(lane.to_string(), verdict)
    }
}

/// Where a lecture has stopped: the moment, and everything that happened at it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    pub at: SimTime,
    pub why: Vec<Why>,
}

impl Hold {
    #[must_use]
    pub fn new(at: SimTime) -> Self {
        Self {
            at,
            why: Vec::new(),
        }
    }

    /// Adds a reason, once.
    pub fn add(&mut self, why: Why) {
        if !self.why.contains(&why) {
            self.why.push(why);
        }
    }

    /// Puts the reasons in the order of the night's lanes (`lanes`, by name), whatever order
    /// the machine heard them in: a stop reads the same on every rehearsal.
    pub fn in_lane_order(&mut self, lanes: &[&str]) {
        let place = |why: &Why| {
            let lane = match why {
                Why::Kill(l)
                | Why::Died(l)
                | Why::CrashPoint(l)
                | Why::Restart(l)
                | Why::Alert(l)
                | Why::Hang(l)
                | Why::Resumed(l)
                | Why::Done(l)
                | Why::Verdict(l, _) => Some(l.as_str()),
                Why::Caption | Why::Symptom(_) => None,
            };
            lane.and_then(|l| lanes.iter().position(|n| *n == l))
                .unwrap_or(usize::MAX)
        };
        self.why.sort_by_key(place);
    }

    /// `stopped at 02:11:47: the host kills naive and guarded; a caption. space goes on`
    #[must_use]
    pub fn describe(&self) -> String {
        format!("stopped at {}: {}. space goes on", self.at, self.reasons())
    }

    /// The reasons, those of a kind together: `the host kills naive and guarded; a caption`.
    fn reasons(&self) -> String {
        let lanes = |pick: fn(&Why) -> Option<&String>| -> Vec<&str> {
            self.why
                .iter()
                .filter_map(pick)
                .map(String::as_str)
                .collect()
        };
        let mut parts = Vec::new();
        let kills = lanes(|w| match w {
            Why::Kill(l) => Some(l),
            _ => None,
        });
        if !kills.is_empty() {
            parts.push(format!("the host kills {}", and(&kills)));
        }
        let died = lanes(|w| match w {
            Why::Died(l) => Some(l),
            _ => None,
        });
        if !died.is_empty() {
            let verb = if died.len() == 1 {
                "dies on its own"
            } else {
                "die on their own"
            };
            parts.push(format!("{} {verb}", and(&died)));
        }
        let at_points = lanes(|w| match w {
            Why::CrashPoint(l) => Some(l),
            _ => None,
        });
        if !at_points.is_empty() {
            let (verb, its) = if at_points.len() == 1 {
                ("is", "its")
            } else {
                ("are", "their")
            };
            parts.push(format!(
                "{} {verb} killed at {its} crash point",
                and(&at_points)
            ));
        }
        let restarts = lanes(|w| match w {
            Why::Restart(l) => Some(l),
            _ => None,
        });
        if !restarts.is_empty() {
            parts.push(format!("the supervisor restarts {}", and(&restarts)));
        }
        let hangs = lanes(|w| match w {
            Why::Hang(l) => Some(l),
            _ => None,
        });
        if !hangs.is_empty() {
            let verb = if hangs.len() == 1 { "hangs" } else { "hang" };
            parts.push(format!("{} {verb}: alive, no progress", and(&hangs)));
        }
        let resumed = lanes(|w| match w {
            Why::Resumed(l) => Some(l),
            _ => None,
        });
        if !resumed.is_empty() {
            parts.push(format!("{} resumed", and(&resumed)));
        }
        let alerts = lanes(|w| match w {
            Why::Alert(l) => Some(l),
            _ => None,
        });
        if !alerts.is_empty() {
            parts.push(format!("the dead-man's switch fires for {}", and(&alerts)));
        }
        for why in &self.why {
            if let Why::Symptom(text) = why {
                parts.push(format!("symptom: {text}"));
            }
        }
        let done = lanes(|w| match w {
            Why::Done(l) => Some(l),
            _ => None,
        });
        if !done.is_empty() {
            let says = if done.len() == 1 { "says" } else { "say" };
            parts.push(format!("{} {says} done", and(&done)));
        }
        for why in &self.why {
            if let Why::Verdict(lane, verdict) = why {
                parts.push(rows_say(lane, verdict));
            }
        }
        if self.why.contains(&Why::Caption) {
            parts.push("a caption".to_string());
        }
        parts.join("; ")
    }

    /// `02:11:47 kill: naive, guarded · caption · space: on`, for a narrow window.
    #[must_use]
    pub fn brief(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut add = |label: &str, what: &str| {
            if let Some(part) = parts
                .iter_mut()
                .find(|p| p.starts_with(&format!("{label}:")))
            {
                part.push_str(", ");
                part.push_str(what);
            } else if what.is_empty() {
                parts.push(label.to_string());
            } else {
                parts.push(format!("{label}: {what}"));
            }
        };
        for why in &self.why {
            match why {
                Why::Kill(lane) => add("kill", lane),
                Why::Died(lane) => add("died", lane),
                Why::CrashPoint(lane) => add("crash point", lane),
                Why::Restart(lane) => add("restart", lane),
                Why::Alert(lane) => add("alert", lane),
                Why::Hang(lane) => add("hang", lane),
                Why::Resumed(lane) => add("resumed", lane),
                Why::Done(lane) => add("done", lane),
                Why::Verdict(lane, verdict) => {
                    let short = verdict.split(" (").next().unwrap_or(verdict);
                    add("rows say", &format!("{lane} {short}"));
                }
                Why::Symptom(_) | Why::Caption => {}
            }
        }
        if self.why.iter().any(|w| matches!(w, Why::Symptom(_))) {
            parts.push("symptom".into());
        }
        if self.why.contains(&Why::Caption) {
            parts.push("caption".into());
        }
        format!("{} {} · space: on", self.at, parts.join(" · "))
    }
}

/// The lecture's line for the screen: where it holds, or what it does between stops (or that
/// the night is `over`: nothing is left to stop at).
#[must_use]
pub fn line(hold: Option<&Hold>, paused: bool, over: bool) -> LectureLine {
    match hold {
        None if over => LectureLine {
            stopped: false,
            full: "the night is over: nothing left to stop at".into(),
            brief: "the night is over".into(),
            reasons: 0,
        },
        Some(hold) => LectureLine {
            stopped: true,
            full: hold.describe(),
            brief: hold.brief(),
            reasons: hold.why.len(),
        },
        None => LectureLine {
            stopped: false,
            full: between_stops(paused),
            brief: if paused {
                "paused · space: on".into()
            } else {
                "playing to the next stop · space: pause".into()
            },
            reasons: 0,
        },
    }
}

/// `a`, `a and b`, `a, b and c`, each lane as `named` says it.
fn and(names: &[&str]) -> String {
    let names: Vec<String> = names.iter().map(|n| named(n)).collect();
    match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// A lane's name in a sentence: a name of several words (long-item's `in one piece`) quoted,
/// so `the dead-man's switch fires for “in one piece”` reads as a name.
fn named(lane: &str) -> String {
    // `the worker` stands for a line that names no lane: words, not a name.
    if lane.contains(char::is_whitespace) && lane != NO_LANE {
        format!("“{lane}”")
    } else {
        lane.to_string()
    }
}

/// `naive's rows say ok`, or `the rows of “in 10 steps” say ok`.
fn rows_say(lane: &str, verdict: &str) -> String {
    let name = named(lane);
    if name == lane {
        format!("{lane}'s rows say {verdict}")
    } else {
        format!("the rows of {name} say {verdict}")
    }
}

/// The lecture line when the night is not stopped at a moment.
fn between_stops(paused: bool) -> String {
    if paused {
        "paused: space goes on to the next stop".to_string()
    } else {
        "playing on to the next stop (a caption, kill, restart, alert, symptom, done line or \
         verdict); space pauses"
            .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kill_in_two_lanes_and_a_caption_read_as_one_sentence() {
        let mut hold = Hold::new(SimTime(2.0 * 3600.0 + 707.0));
        for lane in ["naive", "guarded"] {
            let why = why(
                (Kind::Notice, Some(Mark::Kill), None),
                Some(lane),
                "instance reclaimed",
            );
            hold.add(why.unwrap_or(Why::Caption));
        }
        hold.add(Why::Caption);
        hold.add(Why::Caption);
        assert_eq!(
            hold.describe(),
            "stopped at 02:11:47: the host kills naive and guarded; a caption. space goes on"
        );
    }

    #[test]
    fn only_the_moments_worth_a_stop_stop() {
        let item = Fact::Committed(crate::engine::Committed::Task(Some(111)));
        let plain = |kind| (kind, None, None);
        assert_eq!(
            why((Kind::Item, None, Some(&item)), Some("naive"), "task-111"),
            None
        );
        assert_eq!(why(plain(Kind::Start), Some("naive"), "items=200"), None);
        assert_eq!(
            why(plain(Kind::Alert), Some("naive"), "heartbeat stale"),
            Some(Why::Alert("naive".into()))
        );
        assert_eq!(
            why(plain(Kind::Done), Some("naive"), "rows_written=312"),
            Some(Why::Done("naive".into()))
        );
        // A hang and a resume are told by what the line says, not by its words.
        let notice = |fact| (Kind::Notice, None, Some(fact));
        assert_eq!(
            why(notice(&Fact::Hung), Some("naive"), "anything"),
            Some(Why::Hang("naive".into()))
        );
        assert_eq!(
            why(notice(&Fact::Resumed), Some("naive"), "anything"),
            Some(Why::Resumed("naive".into()))
        );
        assert_eq!(why(plain(Kind::Notice), Some("naive"), "worker hung"), None);
        let mut hold = Hold::new(SimTime(2.0 * 3600.0 + 1171.0));
        hold.add(Why::Done("naive".into()));
        hold.add(Why::Verdict(
            "naive".into(),
            "DATA WRONG (112 duplicated task ids)".into(),
        ));
        hold.add(Why::Symptom("status ok, data wrong".into()));
        assert_eq!(
            hold.describe(),
            "stopped at 02:19:31: symptom: status ok, data wrong; naive says done; naive's rows \
             say DATA WRONG (112 duplicated task ids). space goes on"
        );
    }

    #[test]
    fn the_brief_line_fits_a_narrow_window() {
        let mut hold = Hold::new(SimTime(2.0 * 3600.0 + 707.0));
        hold.add(Why::Kill("naive".into()));
        hold.add(Why::Kill("guarded".into()));
        hold.add(Why::Caption);
        assert_eq!(
            hold.brief(),
            "02:11:47 kill: naive, guarded · caption · space: on"
        );
        let mut end = Hold::new(SimTime(2.0 * 3600.0 + 1171.0));
        end.add(Why::Done("naive".into()));
        end.add(Why::Verdict(
            "naive".into(),
            "DATA WRONG (112 duplicated task ids)".into(),
        ));
        end.add(Why::Caption);
        assert_eq!(
            end.brief(),
            "02:19:31 done: naive · rows say: naive DATA WRONG · caption · space: on"
        );
    }

    #[test]
    fn a_worker_that_dies_by_itself_is_not_called_a_host_kill() {
        let text = "worker died on its own  (exit status 1, pid 7); restarted as after a kill";
        let died = (Kind::Notice, Some(Mark::Kill), Some(&Fact::DiedOnItsOwn));
        let why = why(died, Some("mine"), text);
        assert_eq!(why, Some(Why::Died("mine".into())));
        let mut hold = Hold::new(SimTime(2.0 * 3600.0 + 60.0));
        hold.add(Why::Died("mine".into()));
        assert_eq!(
            hold.describe(),
            "stopped at 02:01:00: mine dies on its own. space goes on"
        );
    }

    /// crash-window's kills land at each lane's `crash_at`: the stop said `the host kills
    /// two-commit and guarded`, as if drawn at random.
    #[test]
    fn a_kill_at_a_crash_point_is_said_as_one() {
        let at_point = (Kind::Notice, Some(Mark::Kill), Some(&Fact::AtCrashPoint));
        let mut hold = Hold::new(SimTime(2.0 * 3600.0 + 321.0));
        for lane in ["two-commit", "guarded"] {
            let text = "instance reclaimed by host  (crash point task-050:after-row-commit)";
            hold.add(why(at_point, Some(lane), text).unwrap_or_else(|| panic!("no stop")));
        }
        hold.add(Why::Caption);
        assert_eq!(
            hold.describe(),
            "stopped at 02:05:21: two-commit and guarded are killed at their crash point; a \
             caption. space goes on"
        );
        assert_eq!(
            hold.brief(),
            "02:05:21 crash point: two-commit, guarded · caption · space: on"
        );
    }

    #[test]
    fn three_names_take_commas() {
        assert_eq!(and(&["a", "b", "c"]), "a, b and c");
        assert_eq!(and(&["a"]), "a");
    }

    /// long-item's lanes are named `in one piece` and `in 10 steps`: the stop line read
    /// `the dead-man's switch fires for in one piece` and `in 10 steps's rows say ok`.
    #[test]
    fn a_lane_named_in_several_words_reads_as_a_name() {
        let mut hold = Hold::new(SimTime(2.0 * 3600.0 + 460.0));
        hold.add(Why::Alert("in one piece".into()));
        hold.add(Why::Verdict("in 10 steps".into(), "ok".into()));
        hold.add(Why::Verdict("naive".into(), "ok".into()));
        assert_eq!(
            hold.describe(),
            "stopped at 02:07:40: the dead-man's switch fires for “in one piece”; the rows of \
             “in 10 steps” say ok; naive's rows say ok. space goes on"
        );
    }
}
