//! A replay's lecture mode: its stops (captions, kills, restarts, alerts, symptoms, `done` lines
//! and verdicts, each at the moment the recording shows it), and playing that holds at each.

use crate::base::clock::SimTime;
use crate::tui::chrome::symptoms;
use crate::tui::lecture::{self, Hold, Why};

use super::ReplayApp;

/// A replay's lecture: its stops, and the one it holds at.
#[derive(Debug)]
pub(super) struct Lecture {
    pub(super) stops: Vec<(f64, Why)>,
    /// Stops at or before this moment are behind: playing from here stops only after it.
    pub(super) behind: f64,
    pub(super) hold: Option<Hold>,
    /// The captions of the stop held at not shown yet, the one on screen first: space shows
    /// the next before going on, so every caption is on screen at its stop.
    pub(super) captions: Vec<usize>,
}

impl ReplayApp {
    /// Lecture mode: playing stops at each caption, kill, restart, alert, symptom, `done` and
    /// verdict, and goes on with `space`.
    #[must_use]
    pub fn lecture(mut self, captions_only: bool) -> Self {
        let header = &self.recording.header;
        let name = |lane: Option<usize>| {
            lane.and_then(|l| header.lanes.get(l))
                .map(|l| l.name.as_str())
        };
        let mut stops: Vec<(f64, Why)> = (self.recording.events.iter())
            .filter_map(|e| {
                let fact = e.fact();
                let why = lecture::why((e.kind, e.mark, fact.as_ref()), name(e.lane), &e.text)?;
                Some((e.sim, why))
            })
            .collect();
        stops.extend(
            self.caption_times
                .iter()
                .flatten()
                .map(|&t| (t, Why::Caption)),
        );
        // Each lane's verdict at its end (as live, where it is read once the lane has ended),
        // and the symptoms the timeline does not log where the figures first show them.
        let samples = &self.recording.samples;
        for (i, (end, over)) in self.lane_ends.iter().zip(&self.overs).enumerate() {
            if let (Some(end), Some(over)) = (end, over) {
                // What the receiving end held when the lane ended, not at the night's end.
                let messages =
                    (samples[over.sample].lanes.get(i)).and_then(|l| l.messages.as_ref());
                let name = header.lanes.get(i).map_or("", |l| l.name.as_str());
                stops.push((over.at, Why::verdict(name, &end.derived, messages)));
            }
        }
        let items: Vec<u64> = header.lanes.iter().map(|l| l.items).collect();
        let mut moments: Vec<f64> = (samples.iter().map(|s| s.sim))
            .chain(self.overs.iter().flatten().map(|o| o.at))
            .collect();
        moments.sort_by(f64::total_cmp);
        // A recording whose timeline says when the rows went past the queue stops there; one
        // made before it did stops where its figures first show them.
        let logged = (self.recording.events.iter())
            .any(|e| e.fact() == Some(crate::engine::Fact::PastQueue));
        let mut lit = if logged {
            vec![crate::verdict::Symptom::RowsExceedQueue]
        } else {
            Vec::new()
        };
        for at in moments {
            let snaps = self.snapshots_at(at);
            if snaps.is_empty() {
                continue;
            }
            let now = symptoms(&snaps, &items, &self.ends_at(at));
            let newly = lecture::newly_lit(&mut lit, &now);
            stops.extend(newly.into_iter().map(|why| (at, why)));
        }
        if captions_only {
            stops.retain(|(_, why)| *why == Why::Caption);
        }
        stops.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.lecture = Some(Lecture {
            stops,
            behind: f64::NEG_INFINITY,
            hold: None,
            captions: Vec::new(),
        });
        self
    }

    /// Playing from the cursor to `to`: where it stops (a lecture's next stop, if one comes
    /// first), holding there.
    pub(super) fn play_to(&mut self, to: f64) -> f64 {
        let Some(lecture) = self.lecture.as_mut() else {
            return to;
        };
        let Some(&(at, _)) = (lecture.stops.iter()).find(|(t, _)| *t > lecture.behind + 1e-6)
        else {
            return to;
        };
        if at > to {
            return to;
        }
        // What falls within the same second of the night is one stop (a symptom the figures
        // show a sample after the line that caused it).
        let mut hold = Hold::new(SimTime(at));
        let mut behind = at;
        for (t, why) in lecture
            .stops
            .iter()
            .filter(|(t, _)| *t >= at && *t < at + 1.0)
        {
            hold.add(why.clone());
            behind = behind.max(*t);
        }
        lecture.behind = behind;
        lecture.hold = Some(hold);
        let mut captions: Vec<(f64, usize)> = (self.caption_times.iter().enumerate())
            .filter_map(|(i, t)| t.filter(|&t| t >= at && t <= behind).map(|t| (t, i)))
            .collect();
        captions.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        lecture.captions = captions.into_iter().map(|(_, i)| i).collect();
        self.playing = false;
        at
    }
}
