//! What the supervisor actually watched: the stretches of real time it was not running (stopped,
//! starved, a laptop asleep) are left out of a heartbeat's silence.

use std::time::{Duration, Instant};

use crate::base::clock::SimClock;

/// A gap between two ticks longer than this means the supervisor itself was not running:
/// ticks come every 2 to 20 ms.
const ABSENCE_GAP: Duration = Duration::from_secs(1);

/// At most this many absences are remembered (one per stop of reclaim itself; the oldest are
/// long past any heartbeat's last beat).
const MAX_ABSENCES: usize = 256;

/// The stretches of real time the supervisor was not watching. A heartbeat's silence is what the
/// supervisor saw: time reclaim itself was stopped is not a worker's silence (its workers, in
/// their own process groups, kept running or finished meanwhile).
#[derive(Debug, Default)]
pub struct Absences {
    last_tick: Option<Instant>,
    stretches: Vec<(Instant, Instant)>,
}

impl Absences {
    /// Notes a tick at `now`; `continued` says reclaim was stopped and continued since the last
    /// one (SIGCONT), however briefly.
    pub fn tick(&mut self, now: Instant, continued: bool) {
        if let Some(last) = self.last_tick
            && (continued || now.saturating_duration_since(last) > ABSENCE_GAP)
        {
            if self.stretches.len() >= MAX_ABSENCES {
                self.stretches.remove(0);
            }
            self.stretches.push((last, now));
        }
        self.last_tick = Some(now);
    }

    /// Sim seconds of silence from `since` (the last beat) to `now`, less the time nobody was
    /// watching.
    #[must_use]
    pub fn silence(&self, clock: &SimClock, since: Instant, now: Instant) -> f64 {
        let sim = |from: Instant, to: Instant| clock.at(to).0 - clock.at(from).0;
        let unwatched: f64 = self
            .stretches
            .iter()
            .filter_map(|&(from, to)| {
                let (from, to) = (from.max(since), to.min(now));
                (to > from).then(|| sim(from, to))
            })
            .sum();
        (sim(since, now) - unwatched).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silence_watched_all_along_counts_whole() {
        let start = Instant::now();
        let mut clock = SimClock::new(start, 600.0);
        let mut absences = Absences::default();
        // Ticks every 20 ms for two seconds: a hung worker's silence is all of it.
        for ms in (0..=2000).step_by(20) {
            absences.tick(start + Duration::from_millis(ms), false);
            clock.advance(start + Duration::from_millis(ms), f64::INFINITY);
        }
        let now = start + Duration::from_secs(2);
        let silence = absences.silence(&clock, start, now);
        assert!((silence - 1200.0).abs() < 1e-6, "{silence}");
    }

    #[test]
    fn time_the_supervisor_was_stopped_is_not_a_workers_silence() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut clock = SimClock::new(start, 600.0);
        let mut absences = Absences::default();
        let mut tick = |ms, continued| {
            absences.tick(at(ms), continued);
            clock.advance(at(ms), f64::INFINITY);
        };
        tick(0, false);
        tick(20, false);
        // Stopped for 3 s (a gap far longer than a tick): not watched.
        tick(3020, false);
        tick(3040, false);
        // Stopped for 100 ms only, but SIGCONT says so: not watched either.
        tick(3140, true);
        tick(3200, false);
        let silence = absences.silence(&clock, at(0), at(3200));
        let watched = 0.020 + 0.020 + 0.060;
        assert!((silence - watched * 600.0).abs() < 1e-6, "{silence}");
        // A beat after the stop is judged from the beat on.
        let silence = absences.silence(&clock, at(3100), at(3200));
        assert!((silence - 0.060 * 600.0).abs() < 1e-6, "{silence}");
    }
}
