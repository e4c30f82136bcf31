//! The simulated clock: real elapsed time, scaled, shown as the incident's night (02:00:00 on).
//!
//! Pure: every method takes `now`, so tests (and replays) control time.

use std::fmt;
use std::time::Instant;

use serde::Serialize;

/// 02:00:00, when the nightly job starts, in seconds after midnight.
pub const NIGHT_START: f64 = 2.0 * 3600.0;

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

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.0.max(0.0).floor() as u64;
        let (h, m, s) = ((total / 3600) % 24, (total / 60) % 60, total % 60);
        write!(f, "{h:02}:{m:02}:{s:02}")
    }
}

/// Maps real time to sim time at `scale` sim-seconds per real second; can pause and change
/// speed without the night jumping.
#[derive(Debug, Clone)]
pub struct SimClock {
    /// The sim time at `anchor`.
    anchor_sim: f64,
    anchor: Instant,
    scale: f64,
    paused_at: Option<Instant>,
}

impl SimClock {
    /// A clock that reads 02:00:00 at `start`.
    #[must_use]
    pub fn new(start: Instant, scale: f64) -> Self {
        Self {
            anchor_sim: NIGHT_START,
            anchor: start,
            scale,
            paused_at: None,
        }
    }

    #[must_use]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused_at.is_some()
    }

    /// The sim time at real instant `now`.
    #[must_use]
    pub fn at(&self, now: Instant) -> SimTime {
        let now = self.paused_at.map_or(now, |p| p.min(now));
        let real = now.saturating_duration_since(self.anchor).as_secs_f64();
        SimTime(self.anchor_sim + real * self.scale)
    }

    /// Changes speed from `now` on; the time shown does not jump.
    pub fn set_scale(&mut self, scale: f64, now: Instant) {
        self.anchor_sim = self.at(now).0;
        self.anchor = self.paused_at.unwrap_or(now).min(now);
        if let Some(paused) = self.paused_at.as_mut() {
            *paused = self.anchor;
        }
        self.scale = scale;
    }

    pub fn pause(&mut self, now: Instant) {
        if self.paused_at.is_none() {
            self.paused_at = Some(now);
        }
    }

    pub fn resume(&mut self, now: Instant) {
        if let Some(paused) = self.paused_at.take() {
            self.anchor_sim +=
                paused.saturating_duration_since(self.anchor).as_secs_f64() * self.scale;
            self.anchor = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn starts_at_two_and_runs_at_scale() {
        let t0 = Instant::now();
        let clock = SimClock::new(t0, 60.0);
        assert_eq!(clock.at(t0).to_string(), "02:00:00");
        // 11 min 47 s of sim time at 60x is 11.783 real seconds.
        assert_eq!(
            clock.at(t0 + Duration::from_millis(11_784)).to_string(),
            "02:11:47"
        );
    }

    #[test]
    fn pause_freezes_and_resume_continues_without_a_jump() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 100.0);
        clock.pause(t0 + Duration::from_secs(1));
        let frozen = clock.at(t0 + Duration::from_secs(50)).since_start();
        assert!((frozen - 100.0).abs() < 1e-6, "{frozen}");
        clock.resume(t0 + Duration::from_secs(50));
        let later = clock.at(t0 + Duration::from_secs(51)).since_start();
        assert!((later - 200.0).abs() < 1e-6, "{later}");
    }

    #[test]
    fn a_speed_change_keeps_the_time_shown() {
        let t0 = Instant::now();
        let mut clock = SimClock::new(t0, 10.0);
        let t1 = t0 + Duration::from_secs(3);
        clock.set_scale(40.0, t1);
        assert!((clock.at(t1).since_start() - 30.0).abs() < 1e-6);
        assert!((clock.at(t1 + Duration::from_secs(1)).since_start() - 70.0).abs() < 1e-6);
    }

    #[test]
    fn formats_past_midnight_and_hours() {
        assert_eq!(SimTime(NIGHT_START + 1171.0).to_string(), "02:19:31");
        assert_eq!(SimTime(24.0 * 3600.0 + 5.0).to_string(), "00:00:05");
    }
}
