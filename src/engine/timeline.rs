//! The night's shared timeline: one entry per line of the postmortem-style log.

use serde::Serialize;

use crate::base::clock::SimTime;

/// Where a timeline line comes from, as in the postmortem's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Worker,
    Runner,
}

/// What a timeline line is: a worker's own words (`start`, `resume`, `crash`, `done`, `log`,
/// `stderr`), or the runner's (`item`, `notice`, `alert`, `error`, `symptom`). Recorded by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Start,
    Resume,
    Crash,
    Done,
    Stderr,
    /// The last task a killed worker wrote.
    Item,
    Notice,
    /// The dead-man's switch.
    Alert,
    Error,
    /// A row of the postmortem's symptom table, observed.
    Symptom,
    /// Any other line a worker printed (and any kind a recording names that this build does not
    /// know).
    #[serde(other)]
    Log,
}

impl Kind {
    /// The word the timeline shows (and a caption's `on` names).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Resume => "resume",
            Self::Crash => "crash",
            Self::Done => "done",
            Self::Stderr => "stderr",
            Self::Item => "item",
            Self::Notice => "notice",
            Self::Alert => "alert",
            Self::Error => "error",
            Self::Symptom => "symptom",
            Self::Log => "log",
        }
    }

    /// How loudly the dashboard shows a line of this kind (with its chart mark).
    #[must_use]
    pub fn tone(self, mark: Option<Mark>) -> Tone {
        match (self, mark) {
            (_, Some(Mark::Kill)) | (Self::Alert | Self::Error | Self::Crash | Self::Stderr, _) => {
                Tone::Bad
            }
            (Self::Symptom, _) => Tone::Warn,
            _ => Tone::Plain,
        }
    }
}

/// How loudly a line is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    #[default]
    Plain,
    Warn,
    Bad,
}

/// One line of the shared timeline: `02:11:47  runner  notice  instance reclaimed by host`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub sim: SimTime,
    /// Real milliseconds since the night began.
    pub real_ms: u64,
    pub lane: Option<usize>,
    pub source: Source,
    pub kind: Kind,
    pub text: String,
    /// Kills and restarts, which the charts mark on the time axis.
    pub mark: Option<Mark>,
    /// What the line says, as data beside its words, where something reads it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fact: Option<Fact>,
    /// In a lane of several workers, the one whose line this is (or whose exit it tells): the
    /// lines of one second are put in slot order, whatever order the pipes delivered them in.
    #[serde(skip)]
    pub slot: Option<usize>,
}

/// What a timeline line says, as data beside its words, for the lines something reads back: a
/// replayed kill and `shrink` (what had committed), a lecture's stops (a hang, a resume, a
/// death on its own). Recorded with the line, so nothing reads the words back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fact {
    /// An `item` line: what had committed when the worker died.
    Committed(Committed),
    /// The lane's workers were stopped (SIGSTOP): alive, no progress (`HUNG`).
    Hung,
    /// The hung workers were continued (`RESUMED`).
    Resumed,
    /// A worker died on its own, not by the host's kill (`DIED_ON_ITS_OWN`).
    DiedOnItsOwn,
    /// The kill landed at the worker's planned crash point (`crash_at`): the moment was named
    /// before the night, not drawn.
    AtCrashPoint,
    /// The lane's rows went past its queue's items, on this line's second (the symptom `row
    /// count exceeds queue size`).
    PastQueue,
}

/// What had committed in a lane when its worker died, as its `item` line says it in words: what
/// a replayed kill (`--replay-schedule`) and `shrink` place a kill after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Committed {
    /// reclaim's own worker: the last task committed in the queue's order, `None` before the
    /// first.
    Task(Option<u64>),
    /// Someone else's job: the newest key its rows hold, `None` when it has no row or reclaim
    /// cannot tell which is newest (`--count-sql`, a table read whole).
    Key(Option<String>),
}

/// Entries handed out in a stable order, so two runs of one night print the same text: by the
/// second they are shown at, then by lane (the night's own lines first), then by worker in a
/// lane of several (the runner's lines about none with the first), then as they were heard, but
/// for a symptom read after a worker's `done` of its second, which goes just before it. Each
/// waits until no entry still to come can fall in its second: workers' pipes and the database
/// are read as they deliver, and two lanes' lines of one second arrive in either order.
#[derive(Debug, Default)]
pub struct InOrder {
    /// Indices into the timeline not yet handed out.
    pending: Vec<usize>,
    /// How much of the timeline has been looked at.
    seen: usize,
    /// The second the last call released up to (`u64::MAX`: everything): while it stays,
    /// the entries already waiting still wait, and only the new ones need a look. A storm held
    /// on one second (`--kill-rows` at full speed) keeps every line waiting, and looking at all
    /// of them on every tick would cost the square of its kills.
    before: Option<u64>,
}

impl InOrder {
    /// The indices of the entries of `timeline` now in their final order, given the earliest
    /// moment an entry still to come can carry (`Engine::heard_up_to`); `None` when the night
    /// is over and every entry goes.
    pub fn release(&mut self, timeline: &[Entry], heard_up_to: Option<f64>) -> Vec<usize> {
        let before = heard_up_to.map(|at| SimTime(at).second());
        let goes = |i: &usize| before.is_none_or(|second| timeline[*i].sim.second() < second);
        let new = self.seen..timeline.len();
        self.seen = timeline.len();
        let key = before.unwrap_or(u64::MAX);
        let mut ready: Vec<usize> = if self.before == Some(key) {
            let (ready, waiting): (Vec<usize>, Vec<usize>) = new.partition(goes);
            self.pending.extend(waiting);
            ready
        } else {
            self.pending.extend(new);
            let (ready, waiting): (Vec<usize>, Vec<usize>) =
                self.pending.iter().copied().partition(goes);
            self.pending = waiting;
            ready
        };
        self.before = Some(key);
        // A worker's `done` is the last it says: what the rows show of its writes in that
        // second (a symptom read by a poll that came after the line) goes just before it;
        // whatever else came after it (a note on the job's exit) stays after it.
        let group = |e: &Entry| (e.sim.second(), e.lane, e.slot.unwrap_or(0));
        let mut dones = std::collections::HashMap::new();
        for &i in &ready {
            let e = &timeline[i];
            if e.source == Source::Worker && e.kind == Kind::Done {
                dones.entry(group(e)).or_insert(i);
            }
        }
        ready.sort_by_key(|&i| {
            let e = &timeline[i];
            let symptom = e.source == Source::Runner && e.kind == Kind::Symptom;
            let at = match dones.get(&group(e)) {
                Some(&done) if symptom && done < i => (done, 0, i),
                _ => (i, 1, 0),
            };
            (group(e), at)
        });
        ready
    }
}

/// How a worker's death that no kill caused begins its line: it is marked as a kill on the
/// charts (and restarted as after one), and told apart from the host's by these words.
pub const DIED_ON_ITS_OWN: &str = "worker died on its own";

/// How the line of a worker the operator or the plan hangs (SIGSTOP) begins.
pub const HUNG: &str = "worker hung";
/// How the line of a hung worker resumed (SIGCONT) begins.
pub const RESUMED: &str = "worker resumed";

/// The timeline entries a driver asks the clock to stop on (a lecture's): any with a chart
/// mark (kills, restarts), and any of `kinds`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StopWhen {
    pub marks: bool,
    pub kinds: Vec<Kind>,
}

impl StopWhen {
    #[must_use]
    pub fn picks(&self, entry: &Entry) -> bool {
        (self.marks && entry.mark.is_some()) || self.kinds.contains(&entry.kind)
    }
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
    kind: Kind,
    text: &str,
) -> String {
    let source = match source {
        Source::Worker => "worker",
        Source::Runner => "runner",
    };
    let lane = lane
        .map(|(name, width)| format!("{name:<width$}  "))
        .unwrap_or_default();
    format!("{sim}  {lane}{source}  {:<7} {text}", kind.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_lines_match_the_postmortem() {
        let entry = Entry {
            sim: SimTime(crate::base::clock::NIGHT_START + 707.0),
            real_ms: 0,
            lane: Some(0),
            source: Source::Runner,
            kind: Kind::Notice,
            text: "instance reclaimed by host".into(),
            mark: Some(Mark::Kill),
            fact: None,
            slot: None,
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

    /// `second` seconds into the night.
    fn night(second: f64) -> f64 {
        crate::base::clock::NIGHT_START + second
    }

    fn at(second: f64, lane: Option<usize>, text: &str) -> Entry {
        Entry {
            sim: SimTime(night(second)),
            real_ms: 0,
            lane,
            source: Source::Worker,
            kind: Kind::Start,
            text: text.into(),
            mark: None,
            fact: None,
            slot: None,
        }
    }

    #[test]
    fn a_night_held_on_one_second_releases_only_what_is_before_it() {
        let mut timeline = vec![at(3.0, Some(0), "held"), at(2.0, Some(0), "before")];
        let mut order = InOrder::default();
        let texts = |released: Vec<usize>, timeline: &[Entry]| -> Vec<String> {
            released.iter().map(|&i| timeline[i].text.clone()).collect()
        };
        assert_eq!(
            texts(order.release(&timeline, Some(night(3.0))), &timeline),
            ["before"]
        );
        // The same second again: the held line still waits, a new one before it goes.
        timeline.push(at(3.0, Some(0), "held too"));
        timeline.push(at(2.5, Some(0), "late, before"));
        assert_eq!(
            texts(order.release(&timeline, Some(night(3.5))), &timeline),
            ["late, before"]
        );
        assert_eq!(
            texts(order.release(&timeline, Some(night(4.0))), &timeline),
            ["held", "held too"]
        );
    }

    #[test]
    fn lines_of_one_second_come_out_in_lane_order_whatever_order_they_arrived_in() {
        let mut timeline = vec![at(3.2, Some(1), "guarded"), at(3.1, Some(0), "naive")];
        let mut order = InOrder::default();
        // The clock is still inside second 3: a line of it may yet arrive.
        assert!(order.release(&timeline, Some(night(3.9))).is_empty());
        timeline.push(at(2.5, Some(1), "late, stamped before"));
        timeline.push(at(4.0, None, "the night's own"));
        let texts = |released: Vec<usize>, timeline: &[Entry]| -> Vec<String> {
            released.iter().map(|&i| timeline[i].text.clone()).collect()
        };
        assert_eq!(
            texts(order.release(&timeline, Some(night(4.5))), &timeline),
            ["late, stamped before", "naive", "guarded"]
        );
        timeline.push(at(4.2, Some(0), "naive at 4"));
        assert_eq!(
            texts(order.release(&timeline, None), &timeline),
            ["the night's own", "naive at 4"]
        );
        assert!(order.release(&timeline, None).is_empty());
    }

    #[test]
    fn several_workers_lines_of_one_second_come_out_in_slot_order() {
        let mut timeline = Vec::new();
        for (slot, text) in [(Some(2), "w=3"), (None, "the runner's"), (Some(0), "w=1")] {
            let mut entry = at(3.0, Some(1), text);
            entry.slot = slot;
            timeline.push(entry);
        }
        timeline.push(at(2.0, Some(1), "before"));
        let texts: Vec<String> = (InOrder::default().release(&timeline, None).iter())
            .map(|&i| timeline[i].text.clone())
            .collect();
        assert_eq!(texts, ["before", "the runner's", "w=1", "w=3"]);
    }

    /// A symptom a poll read after the worker's `done` of the same second goes just before
    /// it; a note made after the done (the job's exit) stays after it.
    #[test]
    fn a_symptom_of_the_done_lines_second_goes_before_it_and_nothing_else_moves() {
        let mut timeline = vec![at(3.0, Some(0), "start"), at(5.1, Some(0), "wrote")];
        let mut done = at(5.2, Some(0), "done");
        done.kind = Kind::Done;
        timeline.push(done);
        for (kind, text) in [
            (Kind::Notice, "exit note"),
            (Kind::Symptom, "past the queue"),
        ] {
            let mut entry = at(5.3, Some(0), text);
            (entry.source, entry.kind) = (Source::Runner, kind);
            timeline.push(entry);
        }
        let texts: Vec<String> = (InOrder::default().release(&timeline, None).iter())
            .map(|&i| timeline[i].text.clone())
            .collect();
        assert_eq!(
            texts,
            ["start", "wrote", "past the queue", "done", "exit note"]
        );
    }
}
