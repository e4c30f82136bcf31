//! The live night's captions: which of the scenario's apply to the lanes there are now, the
//! moment each is reached, its text filled with that moment's figures, and the clock held while
//! a caption is read (outside a lecture) or landing on its moment (in one).

use std::time::Instant;

use crate::base::clock::SimTime;
use crate::scenario::{self, CaptionEvent};
use crate::tui::lecture::{self, Why};

use super::LiveNight;

/// The longest a caption reached waits for its moment's figures (real time); normally a few
/// milliseconds.
const FIGURES_AWAITED: std::time::Duration = std::time::Duration::from_secs(2);

impl LiveNight {
    /// The clock lands on each caption's moment (a lecture's: on each of its moments), so a
    /// caption shows with that moment's figures at any speed.
    pub(super) fn apply_stops(&mut self) {
        let captions = self.captions_now();
        let at: Vec<f64> = (captions.iter())
            .filter_map(|c| c.at.as_deref().and_then(scenario::parse_clock))
            .collect();
        let when = if self.stop_on_captions && !self.captions_only {
            lecture::stop_when(&captions)
        } else {
            lecture::caption_stops(&captions)
        };
        self.engine.stop_on(&at, when);
    }

    /// The captions that speak of the lanes there are now.
    pub(super) fn captions_now(&self) -> Vec<scenario::Caption> {
        (self.scenario.captions.iter().zip(&self.applies))
            .filter(|(_, applies)| **applies)
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// Which captions, and what title, fit the lanes as they are now: a caption about a lane
    /// the user has changed (`s`, `a`) would speak of a worker that is not there.
    pub(super) fn fit_to_lanes(&mut self) {
        let now: Vec<scenario::LaneShape<'_>> = (self.lanes.iter().zip(self.engine.lanes()))
            .map(|(lane, running)| scenario::LaneShape {
                name: &lane.name,
                worker: lane.worker.label(),
                workers: running.config().workers,
            })
            .collect();
        let scenario = &self.scenario;
        self.applies = scenario::captions_apply(&scenario.captions, &scenario.lanes, &now);
        self.title = scenario::title_for(&scenario.title, &scenario.lanes, &now);
    }

    /// Captions reached since the last call (moment, text, notes), oldest first.
    pub fn take_reached(&mut self) -> Vec<(SimTime, String, Option<String>)> {
        let mut reached = std::mem::take(&mut self.reached);
        reached.sort_by(|a, b| a.0.0.total_cmp(&b.0.0));
        reached
    }

    /// Shows the next caption reached at once; whether there was one.
    pub fn step_caption(&mut self, now: Instant) -> bool {
        let times = self.caption_times();
        let clock = self.engine.clock().now().0;
        self.captions.step(&times, clock, now)
    }

    /// Holds the clock (without signalling a worker, as for a small window) while a caption
    /// reached is being read, or while nobody can see the night.
    pub(super) fn hold_for_captions(&mut self, now: Instant) {
        let reading = self.captions.holding(now);
        let awaiting = self.awaiting_verdict.is_some() || self.awaiting_figures.is_some();
        self.engine.freeze(self.small || reading || awaiting, now);
    }

    /// Fills in the text of each caption the night has just reached, with the figures of the
    /// lane it is about (the first lane otherwise) as they are now: a caption's numbers are the
    /// night's, never a script's. A lecture's caption is filled again when its stop is shown
    /// (`refill_captions`), once that moment's figures are all in.
    pub(super) fn freeze_caption_texts(
        &mut self,
        times: &[Option<f64>],
        clock: f64,
        chars: &[usize],
        now: Instant,
    ) -> bool {
        let mut reached = false;
        self.caption_texts
            .resize(self.scenario.captions.len(), None);
        let due = |i: usize| times.get(i).copied().flatten().is_some_and(|t| t <= clock);
        let pending =
            (0..self.scenario.captions.len()).any(|i| self.caption_texts[i].is_none() && due(i));
        // Its moment whole first: in a lane in lockstep the writes of one moment are made one
        // worker at a time, and a caption on the first worker's `done` would otherwise count
        // the rows before the others' last writes (waited for a bounded while).
        if pending && !self.engine.settled(now) {
            let since = *self.awaiting_figures.get_or_insert(now);
            if now.saturating_duration_since(since) < FIGURES_AWAITED {
                return false;
            }
        }
        self.awaiting_figures = None;
        for i in 0..self.scenario.captions.len() {
            if self.caption_texts[i].is_some()
                || times.get(i).copied().flatten().is_none_or(|t| t > clock)
            {
                continue;
            }
            let at = times.get(i).copied().flatten().unwrap_or(clock);
            let (text, notes) = self.fill(i, at);
            self.ahead.push((at, Why::Caption));
            self.caption_texts[i] = Some((text.clone(), notes.clone()));
            reached = true;
            if self.stop_on_captions {
                // Its stop may wait for the moment's writes to be read: said once it is shown.
                self.unshown.push(i);
            } else {
                self.reached.push((SimTime(at), text, notes));
                // Outside a lecture the night waits at the caption's moment while it is read.
                self.captions
                    .hold_for(chars.get(i).copied().unwrap_or(0), now);
            }
        }
        reached
    }

    /// A lecture's stop is shown now: the captions reached for it are filled again with the
    /// figures on screen at it. Filled as the clock reached the moment, a caption could name a
    /// row fewer than the lane beside it (359 of three naive workers' 360: the last of the
    /// moment's writes not read yet), on a loaded machine and at one speed but not another.
    pub(super) fn refill_captions(&mut self, times: &[Option<f64>]) {
        let clock = self.engine.clock().now().0;
        for i in std::mem::take(&mut self.unshown) {
            let at = times.get(i).copied().flatten().unwrap_or(clock);
            let (text, notes) = self.fill(i, at);
            self.reached
                .push((SimTime(at), text.clone(), notes.clone()));
            if let Some(slot) = self.caption_texts.get_mut(i) {
                *slot = Some((text, notes));
            }
        }
    }

    /// Caption `i`'s text and notes with its lane's figures as they are now, at moment `at`.
    fn fill(&self, i: usize, at: f64) -> (String, Option<String>) {
        let Some(caption) = self.scenario.captions.get(i) else {
            return (String::new(), None);
        };
        let dead_man = self.engine.config().dead_man;
        let names: Vec<&str> = self.lanes.iter().map(|l| l.name.as_str()).collect();
        caption.filled(&names, |lane| {
            let l = self.engine.lanes().get(lane)?;
            let figures = scenario::CaptionFigures::of(
                &l.snapshot(dead_man),
                &l.config().name,
                l.config().items,
            );
            Some(figures.at(at))
        })
    }

    pub(super) fn caption_times(&self) -> Vec<Option<f64>> {
        let names: Vec<String> = self.lanes.iter().map(|l| l.name.clone()).collect();
        let events = self.engine.timeline().iter().map(|e| CaptionEvent {
            sim: e.sim.0,
            kind: e.kind,
            mark: e.mark,
            lane: e.lane,
        });
        let times = scenario::caption_times(&self.scenario.captions, &names, &events);
        (times.into_iter().zip(&self.applies))
            .map(|(t, applies)| t.filter(|_| *applies))
            .collect()
    }
}
