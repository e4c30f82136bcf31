//! What the live night has shown so far, kept in memory so it can be looked back at while the
//! night waits (`b`, `[`): samples at the recorder's pace (`record::Sampler`), thinned as the
//! night grows so a night of any length costs the same memory.

use std::time::Instant;

use crate::engine::Engine;
use crate::record::{self, End, Event, Header, Recording, Sample};

/// Samples kept; beyond it every other one is dropped (the newest always stays).
const MAX_SAMPLES: usize = 4096;

#[derive(Debug, Default)]
pub struct Tape {
    samples: Vec<Sample>,
    sampler: record::Sampler,
    /// Timeline lines when the last sample was taken.
    events: usize,
}

impl Tape {
    /// Takes a sample when one is due.
    pub fn observe(&mut self, engine: &Engine, now: Instant) {
        let new_lines = engine.timeline().len() != self.events;
        if let Some(sample) = self.sampler.due(engine, now, new_lines) {
            self.push(sample);
            self.events = engine.timeline().len();
        }
    }

    fn push(&mut self, sample: Sample) {
        // A paused night samples the same moment over and over: keep the latest of them only.
        if self
            .samples
            .last()
            .is_some_and(|last| (last.sim - sample.sim).abs() < 1e-9)
        {
            self.samples.pop();
        }
        self.samples.push(sample);
        if self.samples.len() > MAX_SAMPLES {
            let last = self.samples.pop();
            let kept: Vec<Sample> = self.samples.drain(..).step_by(2).collect();
            self.samples = kept;
            self.samples.extend(last);
        }
    }

    /// The night so far as a recording: `header` names it, `events` are its timeline as
    /// shown, `last` its present, `end` its verdict once there is one.
    pub fn recording(
        &self,
        header: Header,
        events: Vec<Event>,
        last: Sample,
        end: Option<End>,
    ) -> Recording {
        let mut samples: Vec<Sample> = (self.samples.iter())
            .filter(|s| s.sim < last.sim - 1e-9)
            .cloned()
            .collect();
        samples.push(last);
        Recording {
            header,
            events,
            samples,
            end,
            truncated: false,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.samples.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(sim: f64) -> Sample {
        Sample {
            real_ms: 0,
            sim,
            lanes: Vec::new(),
        }
    }

    #[test]
    fn a_long_night_stays_bounded_and_keeps_its_ends() {
        let mut tape = Tape::default();
        for i in 0..100_000 {
            tape.push(sample(f64::from(i)));
        }
        assert!(tape.len() <= MAX_SAMPLES, "{}", tape.len());
        assert_eq!(tape.samples.first().map(|s| s.sim), Some(0.0));
        assert_eq!(tape.samples.last().map(|s| s.sim), Some(99_999.0));
        assert!(tape.samples.windows(2).all(|w| w[0].sim < w[1].sim));
    }

    #[test]
    fn a_paused_moment_is_kept_once() {
        let mut tape = Tape::default();
        for _ in 0..50 {
            tape.push(sample(10.0));
        }
        tape.push(sample(11.0));
        assert_eq!(tape.len(), 2);
    }
}
