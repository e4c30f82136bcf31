//! Which teaching caption the live night shows: each one reached stays on screen long enough to
//! read, in real time whatever the speed, then gives way to the next one reached; `c` moves on
//! at once. Outside a lecture the night holds at a caption's moment while it is read (`hold`),
//! so a caption is on screen with its moment's figures, never behind the night. Pure: `now` is
//! passed in.

use std::time::{Duration, Instant};

/// The shortest time a caption is on screen before the next one may replace it.
const READ_AT_LEAST: Duration = Duration::from_secs(3);
/// The longest the night holds at one caption's moment: the caption stays on screen after it,
/// until the next one is reached.
const HOLD_AT_MOST: Duration = Duration::from_secs(5);
/// Reading speed, in characters per second (about 200 words a minute).
const CHARS_PER_SECOND: f64 = 18.0;

/// How long a caption of `chars` characters needs on screen.
#[must_use]
pub fn read_for(chars: usize) -> Duration {
    READ_AT_LEAST.max(Duration::from_secs_f64(chars as f64 / CHARS_PER_SECOND))
}

/// The captions shown so far and the one on screen.
#[derive(Debug, Clone, Default)]
pub struct CaptionQueue {
    shown: Option<usize>,
    since: Option<Instant>,
    done: Vec<bool>,
    /// Until when the night holds for the captions reached to be read.
    hold: Option<Instant>,
}

impl CaptionQueue {
    /// The caption on screen.
    #[must_use]
    pub fn shown(&self) -> Option<usize> {
        self.shown
    }

    /// Captions reached (their moment is at or before `clock`) and not shown yet, in the order
    /// of their moments.
    fn pending(&self, times: &[Option<f64>], clock: f64) -> Vec<usize> {
        let mut reached: Vec<(usize, f64)> = (times.iter().enumerate())
            .filter_map(|(i, t)| t.filter(|&t| t <= clock).map(|t| (i, t)))
            .filter(|(i, _)| !self.done.get(*i).copied().unwrap_or(false))
            .collect();
        reached.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        reached.into_iter().map(|(i, _)| i).collect()
    }

    fn show(&mut self, caption: usize, now: Instant) {
        if self.done.len() <= caption {
            self.done.resize(caption + 1, false);
        }
        self.done[caption] = true;
        self.shown = Some(caption);
        self.since = Some(now);
    }

    /// Moves on to the next caption reached once the one on screen has been read; `chars` is
    /// each caption's length.
    pub fn update(&mut self, times: &[Option<f64>], clock: f64, chars: &[usize], now: Instant) {
        let Some(&next) = self.pending(times, clock).first() else {
            return;
        };
        let read = match (self.shown, self.since) {
            (Some(shown), Some(since)) => {
                let need = read_for(chars.get(shown).copied().unwrap_or(0));
                now.saturating_duration_since(since) >= need
            }
            _ => true,
        };
        if read {
            self.show(next, now);
        }
    }

    /// A caption of `chars` characters has been reached: the night holds until it has been
    /// read, after those reached before it.
    pub fn hold_for(&mut self, chars: usize, now: Instant) {
        let from = self.hold.filter(|&h| h > now).unwrap_or(now);
        self.hold = Some(from + read_for(chars).min(HOLD_AT_MOST));
    }

    /// Whether the night holds for a caption at `now`.
    #[must_use]
    pub fn holding(&self, now: Instant) -> bool {
        self.hold.is_some_and(|h| now < h)
    }

    /// Until when the night holds for a caption, if it holds at `now`.
    #[must_use]
    pub fn holding_until(&self, now: Instant) -> Option<Instant> {
        self.hold.filter(|&h| now < h)
    }

    /// `c` outside a lecture: the next caption waiting, read from now, or the night goes on.
    pub fn move_on(&mut self, times: &[Option<f64>], clock: f64, chars: &[usize], now: Instant) {
        if self.step(times, clock, now) {
            let shown = self.shown.and_then(|i| chars.get(i)).copied().unwrap_or(0);
            self.hold = Some(now + read_for(shown).min(HOLD_AT_MOST));
            for waiting in self.pending(times, clock) {
                self.hold_for(chars.get(waiting).copied().unwrap_or(0), now);
            }
        } else {
            self.hold = None;
        }
    }

    /// `c`: the next caption reached, at once; false when none is waiting.
    pub fn step(&mut self, times: &[Option<f64>], clock: f64, now: Instant) -> bool {
        match self.pending(times, clock).first() {
            Some(&next) => {
                self.show(next, now);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captions_close_together_each_stay_long_enough_to_read() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        // A kill at 707 s and a restart 18 sim-seconds later: at 100x that is 0.18 s apart.
        let times = [Some(0.0), Some(707.0), Some(725.0)];
        let chars = [40, 40, 40];
        let mut q = CaptionQueue::default();
        q.update(&times, 0.0, &chars, at(0.0));
        assert_eq!(q.shown(), Some(0));
        q.update(&times, 725.0, &chars, at(7.3));
        assert_eq!(q.shown(), Some(1), "the kill caption, not skipped");
        q.update(&times, 740.0, &chars, at(7.5));
        assert_eq!(q.shown(), Some(1), "still being read");
        q.update(&times, 1000.0, &chars, at(10.4));
        assert_eq!(q.shown(), Some(2));
        // Nothing after it: it stays.
        q.update(&times, 1100.0, &chars, at(60.0));
        assert_eq!(q.shown(), Some(2));
    }

    #[test]
    fn a_hold_ends_where_its_reading_time_does_and_two_holds_queue() {
        let t0 = Instant::now();
        let mut q = CaptionQueue::default();
        assert_eq!(q.holding_until(t0), None, "nothing reached, nothing held");
        q.hold_for(40, t0);
        let end = q.holding_until(t0).unwrap_or_else(|| panic!("not held"));
        assert_eq!(end, t0 + read_for(40).min(HOLD_AT_MOST));
        assert!(q.holding(t0 + read_for(40).min(HOLD_AT_MOST) / 2));
        assert_eq!(q.holding_until(end), None, "the hold is over at its end");
        // A second caption reached while the first is read is read after it.
        q.hold_for(40, t0);
        assert_eq!(
            q.holding_until(t0),
            Some(end + read_for(40).min(HOLD_AT_MOST))
        );
    }

    #[test]
    fn c_moves_on_at_once_and_never_freezes_the_bar() {
        let t0 = Instant::now();
        let times = [Some(0.0), Some(10.0), Some(20.0), None];
        let chars = [200, 200, 200, 200];
        let mut q = CaptionQueue::default();
        q.update(&times, 25.0, &chars, t0);
        assert_eq!(q.shown(), Some(0));
        assert!(q.step(&times, 25.0, t0));
        assert_eq!(q.shown(), Some(1));
        assert!(q.step(&times, 25.0, t0));
        assert_eq!(q.shown(), Some(2));
        // Nothing reached is left: `c` says so and the night's own captions go on.
        assert!(!q.step(&times, 25.0, t0));
        assert_eq!(q.shown(), Some(2));
    }

    #[test]
    fn the_night_holds_while_each_caption_reached_is_read_and_c_moves_on() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let times = [Some(0.0), Some(707.0), Some(707.0)];
        let chars = [40, 40, 90];
        let mut q = CaptionQueue::default();
        q.update(&times, 0.0, &chars, t0);
        assert!(!q.holding(t0));
        // Two captions at one moment: held for both, one after the other (3 s and 5 s).
        q.hold_for(chars[1], at(10.0));
        q.hold_for(chars[2], at(10.0));
        q.update(&times, 707.0, &chars, at(10.0));
        assert_eq!(q.shown(), Some(1));
        assert!(q.holding(at(17.9)));
        assert!(!q.holding(at(18.0)));
        // `c` shows the one waiting at once and holds for it; again, and the night goes on.
        q.move_on(&times, 707.0, &chars, at(11.0));
        assert_eq!(q.shown(), Some(2));
        assert!(q.holding(at(15.9)));
        assert!(!q.holding(at(16.0)));
        q.move_on(&times, 707.0, &chars, at(11.5));
        assert!(!q.holding(at(11.5)));
    }

    #[test]
    fn a_long_caption_gets_more_time() {
        assert_eq!(read_for(10), READ_AT_LEAST);
        assert!(read_for(180) >= Duration::from_secs(10));
    }
}
