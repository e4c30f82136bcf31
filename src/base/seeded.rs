//! The seeded random stream behind `--seed`: ChaCha8 (rand_chacha, tested against reference
//! vectors and documented deterministic and portable) read through reclaim's own integer
//! arithmetic, so a recorded seed names the same night after any upgrade. `rand`'s `StdRng`
//! and its range sampling are documented as free to change between versions; neither is used.

use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore as _, SeedableRng as _};

/// Which use a stream serves: one seed drives several independent streams, so drawing more of
/// one (a vendor's drops) never moves another (the kill schedule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// The random kills' delays after each spawn.
    Kills = 0,
    /// Which of a vendor's responses are dropped.
    VendorDrops = 1,
    /// The row counts at which answers are lost at random (`--lose-answers`).
    LostAnswers = 2,
    /// The row count at which the server restarts at random (`--restart-server-at-random`).
    ServerRestart = 3,
    /// Where a pause lands at random (`--pause-at-random`).
    Pause = 4,
}

/// `n` distinct whole numbers in `1..=hi` drawn from `stream` of `seed`, ascending (all of them
/// when `n` is `hi` or more).
#[must_use]
pub fn distinct_in(seed: u64, stream: Stream, n: u64, hi: u64) -> Vec<u64> {
    let mut rng = Seeded::new(seed, stream);
    let mut drawn = std::collections::BTreeSet::new();
    while (drawn.len() as u64) < n.min(hi) {
        drawn.insert(rng.u64_in(1, hi));
    }
    drawn.into_iter().collect()
}

/// A deterministic stream of draws from one seed.
#[derive(Debug, Clone)]
pub struct Seeded {
    rng: ChaCha8Rng,
}

impl Seeded {
    /// The stream `stream` of `seed`. The key is the seed's eight little-endian bytes followed
    /// by zeros: a fixed rule of this file, not a library's seeding convention.
    #[must_use]
    pub fn new(seed: u64, stream: Stream) -> Self {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        let mut rng = ChaCha8Rng::from_seed(key);
        rng.set_stream(stream as u64);
        Self { rng }
    }

    /// The next raw 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A duration in `lo..hi` (`lo` when the window is empty), to the nanosecond: the draw
    /// times the span, high 64 bits, in integers, so no float rounding can differ anywhere.
    pub fn duration_in(&mut self, lo: Duration, hi: Duration) -> Duration {
        let (lo_ns, hi_ns) = (lo.as_nanos(), hi.as_nanos());
        if hi_ns <= lo_ns {
            return lo;
        }
        let span = (hi_ns - lo_ns).min(u128::from(u64::MAX));
        let offset = (u128::from(self.next_u64()) * span) >> 64;
        u64::try_from(lo_ns + offset).map_or(lo, Duration::from_nanos)
    }

    /// A whole number in `lo..=hi` (`lo` when the range is empty): the draw times the span,
    /// high 64 bits, in integers, as `duration_in`.
    pub fn u64_in(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let span = u128::from(hi - lo) + 1;
        let offset = (u128::from(self.next_u64()) * span) >> 64;
        lo + u64::try_from(offset).unwrap_or(0)
    }

    /// True with probability `p` (0 never, 1 always): the draw's top 53 bits as a fraction in
    /// 0..1, exact in an f64, compared with `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        unit < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_draws_are_distinct_in_range_and_pinned_to_their_seed() {
        let drawn = distinct_in(7, Stream::LostAnswers, 3, 200);
        assert_eq!(drawn.len(), 3);
        assert!(drawn.windows(2).all(|w| w[0] < w[1]), "{drawn:?}");
        assert!(drawn.iter().all(|&n| (1..=200).contains(&n)), "{drawn:?}");
        assert_eq!(drawn, distinct_in(7, Stream::LostAnswers, 3, 200));
        assert_ne!(drawn, distinct_in(8, Stream::LostAnswers, 3, 200));
        assert_ne!(drawn, distinct_in(7, Stream::ServerRestart, 3, 200));
        assert_eq!(distinct_in(1, Stream::LostAnswers, 9, 4), [1, 2, 3, 4]);
    }

    #[test]
    fn the_stream_is_chacha8_keyed_by_the_seed_and_pinned() {
        // If this changes, every recorded `--seed` names another night: do not update the
        // figures, find what changed the stream.
        let mut kills = Seeded::new(7, Stream::Kills);
        let first: Vec<u64> = (0..3).map(|_| kills.next_u64()).collect();
        assert_eq!(first, PINNED_FIRST_DRAWS_OF_SEED_7);
        let mut drops = Seeded::new(7, Stream::VendorDrops);
        assert_ne!(
            drops.next_u64(),
            first[0],
            "the streams of one seed are apart"
        );
    }

    #[test]
    fn draws_stay_in_their_window_and_chance_keeps_its_ends() {
        let mut s = Seeded::new(1, Stream::Kills);
        let (lo, hi) = (Duration::from_millis(200), Duration::from_millis(900));
        for _ in 0..1000 {
            let d = s.duration_in(lo, hi);
            assert!(d >= lo && d < hi, "{d:?}");
            assert!(!s.chance(0.0));
            assert!(s.chance(1.0));
        }
        assert_eq!(s.duration_in(hi, lo), hi);
        let hits = (0..10_000).filter(|_| s.chance(0.25)).count();
        assert!((2_000..3_000).contains(&hits), "{hits}");
    }

    /// The first words of ChaCha8 with key = 7 (little-endian, zero-padded), counter 0, stream
    /// 0, low word first: checked against a from-scratch ChaCha8 outside this code base.
    const PINNED_FIRST_DRAWS_OF_SEED_7: [u64; 3] = [
        14_095_323_943_061_994_099,
        8_595_031_940_432_502_117,
        104_676_313_501_531_310,
    ];
}
