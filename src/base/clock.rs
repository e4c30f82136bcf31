//! The simulated clock: the incident's night (02:00:00 on), shown at `scale` sim seconds per real
//! second but pinned to the work: the engine advances it tick by tick up to a limit (the next
//! item a worker has not written yet, the next planned event), so it never runs ahead of the
//! workers, and every event is stamped with the sim time the scenario gives it, not with the
//! moment the machine got round to it.
//!
//! Pure: every method takes `now`, so tests (and replays) control time.

use std::collections::VecDeque;
use std::fmt;
use std::time::Instant;

use serde::Serialize;

/// 02:00:00, when the nightly job starts, in seconds after midnight.
pub const NIGHT_START: f64 = 2.0 * 3600.0;

/// Readings kept to answer "what did the clock show at that past instant" (a heartbeat's last
/// beat): ticks come every 2 to 20 ms, so this covers well over a minute of real time, longer
/// than any dead-man's threshold takes to cross at the shipped scales.
const HISTORY: usize = 8192;

/// A moment of the simulated night, in seconds after midnight.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default, Serialize)]
pub struct SimTime(pub f64);

impl SimTime {
    /// Seconds since the night began (02:00:00).
    #[must_use]
    pub fn since_start(self) -> f64 {
        self.0 - NIGHT_START
    }
}

impl SimTime {
    /// The whole second it is shown as (seconds after midnight).
    #[must_use]
    pub fn second(self) -> u64 {
        // A scheduled moment computed as 704.0 may come out as 703.9999999: a millisecond's
        // tolerance keeps 02:11:47 from printing as 02:11:46.
        (self.0.max(0.0) + 1e-3).floor() as u64
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.second();
        let (h, m, s) = ((total / 3600) % 24, (total / 60) % 60, total % 60);
        write!(f, "{h:02}:{m:02}:{s:02}")
    }
}

/// The night's clock: real time times `scale`, advanced by the engine up to a limit.
#[derive(Debug, Clone)]
pub struct SimClock {
    /// The sim time shown, seconds after midnight.
    shown: f64,
    /// The real instant of the last `advance`.
    last: Instant,
    scale: f64,
    paused: bool,
    /// Past readings, oldest first, for `at` with an instant before `last`.
    history: VecDeque<(Instant, f64)>,
}

impl SimClock {
    /// A clock that reads 02:00:00 at `start`.
    #[must_use]
    pub fn new(start: Instant, scale: f64) -> Self {
        Self {
            shown: NIGHT_START,
            last: start,
            scale,
            paused: false,
            history: VecDeque::from([(start, NIGHT_START)]),
        }
    }

    #[must_use]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// The sim time shown now.
    #[must_use]
    pub fn now(&self) -> SimTime {
        SimTime(self.shown)
    }

    /// The sim time shown at real instant `at`: the current reading from the last advance on,
    /// the reading of that moment before it (interpolated between ticks).
    #[must_use]
    pub fn at(&self, at: Instant) -> SimTime {
        if at >= self.last {
            return SimTime(self.shown);
        }
        let after = self.history.partition_point(|(t, _)| *t <= at);
        let Some(&(t0, s0)) = after.checked_sub(1).and_then(|i| self.history.get(i)) else {
            return SimTime(self.history.front().map_or(self.shown, |h| h.1));
        };
        let Some(&(t1, s1)) = self.history.get(after) else {
            return SimTime(s0);
        };
        let span = t1.saturating_duration_since(t0).as_secs_f64();
        let part = at.saturating_duration_since(t0).as_secs_f64();
        SimTime(if span > 0.0 {
            s0 + (s1 - s0) * part / span
        } else {
            s0
        })
    }

    /// Moves the clock on to `now` at its scale, but never past `limit` (seconds after
    /// midnight) and never backwards; a paused clock stays where it is.
    pub fn advance(&mut self, now: Instant, limit: f64) {
        if now < self.last {
            return;
        }
        if !self.paused {
            let real = now.saturating_duration_since(self.last).as_secs_f64();
            self.shown = (self.shown + real * self.scale).min(limit.max(self.shown));
        }
        self.last = now;
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((now, self.shown));
    }

    /// Moves the clock straight to `to` at `now` (never backwards; a paused clock stays): a
    /// night measured by its work alone goes from one scheduled moment to the next, whatever
    /// real time passed between them.
    pub fn jump(&mut self, now: Instant, to: f64) {
        if now < self.last {
            return;
        }
        if !self.paused {
            self.shown = self.shown.max(to);
        }
        self.last = now;
        if self.history.len() >= HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((now, self.shown));
    }

    /// Changes speed from the next advance on; the time shown does not jump. (The engine's
    /// tick advances the clock; only the work may say how far, so nothing here moves it.)
    pub fn set_scale(&mut self, scale: f64, _now: Instant) {
        self.scale = scale;
    }

    pub fn pause(&mut self, _now: Instant) {
        self.paused = true;
    }

    /// Goes on from `now`: the paused stretch is not counted.
    pub fn resume(&mut self, now: Instant) {
        if self.paused {
            self.paused = false;
            self.last = self.last.max(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const FREE: f64 = f64::INFINITY;

    #[test]
    fn starts_at_two_and_runs_at_scale() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 60.0);
        assert_eq!(clock.at(t0).to_string(), "02:00:00");
        // 11 min 47 s of sim time at 60x is 11.783 real seconds.
        clock.advance(t0 + Duration::from_millis(11_784), FREE);
        assert_eq!(clock.now().to_string(), "02:11:47");
    }

    #[test]
    fn it_never_passes_its_limit_and_waits_there() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 100.0);
        let limit = NIGHT_START + 50.0;
        clock.advance(t0 + Duration::from_secs(3), limit);
        assert!((clock.now().since_start() - 50.0).abs() < 1e-9);
        // The work caught up: from there on at the scale again, not with a jump.
        clock.advance(t0 + Duration::from_millis(3100), FREE);
        assert!((clock.now().since_start() - 60.0).abs() < 1e-6);
        // A lower limit never moves it back.
        clock.advance(t0 + Duration::from_secs(4), NIGHT_START);
        assert!((clock.now().since_start() - 60.0).abs() < 1e-6);
    }

    #[test]
    fn pause_freezes_and_resume_continues_without_a_jump() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 100.0);
        clock.advance(t0 + Duration::from_secs(1), FREE);
        clock.pause(t0 + Duration::from_secs(1));
        clock.advance(t0 + Duration::from_secs(50), FREE);
        assert!((clock.now().since_start() - 100.0).abs() < 1e-6);
        clock.resume(t0 + Duration::from_secs(50));
        clock.advance(t0 + Duration::from_secs(51), FREE);
        assert!((clock.now().since_start() - 200.0).abs() < 1e-6);
    }

    #[test]
    fn a_speed_change_keeps_the_time_shown() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 10.0);
        let t1 = t0 + Duration::from_secs(3);
        clock.advance(t1, FREE);
        clock.set_scale(40.0, t1);
        assert!((clock.now().since_start() - 30.0).abs() < 1e-6);
        clock.advance(t1 + Duration::from_secs(1), FREE);
        assert!((clock.now().since_start() - 70.0).abs() < 1e-6);
        // A past instant reads what was shown then.
        assert!((clock.at(t0 + Duration::from_secs(1)).since_start() - 10.0).abs() < 1e-6);
    }

    #[test]
    fn a_jump_ignores_real_time_and_never_goes_back() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 100.0);
        clock.jump(t0 + Duration::from_secs(30), NIGHT_START);
        assert!(
            (clock.now().since_start()).abs() < 1e-9,
            "30 s of real time: no move"
        );
        clock.jump(t0 + Duration::from_secs(31), NIGHT_START + 18.0);
        assert!((clock.now().since_start() - 18.0).abs() < 1e-9);
        clock.jump(t0 + Duration::from_secs(32), NIGHT_START + 5.0);
        assert!((clock.now().since_start() - 18.0).abs() < 1e-9);
    }

    #[test]
    fn formats_past_midnight_and_hours() {
        assert_eq!(SimTime(NIGHT_START + 1171.0).to_string(), "02:19:31");
        assert_eq!(SimTime(NIGHT_START + 706.999_999_9).to_string(), "02:11:47");
        assert_eq!(SimTime(24.0 * 3600.0 + 5.0).to_string(), "00:00:05");
    }
}
