//! How many of a worker's own lines (a job's prints, its stderr) go on the timeline: the first
//! `KEPT_LINES` of each attempt; the rest are counted, not kept, and the count is said when the
//! attempt's pipe closes. A job printing millions of lines costs reclaim a counter, not a
//! timeline (and a recording) of millions of entries.

use std::collections::BTreeMap;

/// The most lines of its own output one attempt puts on the timeline.
pub const KEPT_LINES: u64 = 1000;

/// Lines kept and not kept, per `(slot, attempt)`.
#[derive(Debug, Default)]
pub struct KeptLines {
    counts: BTreeMap<(usize, u32), (u64, u64)>,
}

impl KeptLines {
    /// Whether one more line of `slot`'s `attempt` goes on the timeline; counted either way.
    pub fn admit(&mut self, slot: usize, attempt: u32) -> bool {
        let (kept, dropped) = self.counts.entry((slot, attempt)).or_default();
        if *kept < KEPT_LINES {
            *kept += 1;
            true
        } else {
            *dropped += 1;
            false
        }
    }

    /// A pipe of `slot`'s `attempt` closed: the lines not kept since the last time this was
    /// said, if any, to be said now.
    pub fn closed(&mut self, slot: usize, attempt: u32) -> Option<u64> {
        let (_, dropped) = self.counts.get_mut(&(slot, attempt))?;
        let said = std::mem::take(dropped);
        // Attempts before this one are over: their counts are said already.
        self.counts.retain(|&(s, a), _| s != slot || a >= attempt);
        (said > 0).then_some(said)
    }

    /// What the timeline says of `n` lines not kept.
    #[must_use]
    pub fn line(n: u64) -> String {
        format!(
            "{} of its output not kept (the first {KEPT_LINES} of each attempt are)",
            crate::base::text::count(n, "more line", "more lines")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_lines_of_each_attempt_are_kept_and_the_rest_counted_once() {
        let mut kept = KeptLines::default();
        let admitted = (0..KEPT_LINES + 25).filter(|_| kept.admit(0, 1)).count();
        assert_eq!(admitted as u64, KEPT_LINES);
        // Another slot and the next attempt start their own window.
        assert!(kept.admit(1, 1));
        assert!(kept.admit(0, 2));
        assert_eq!(kept.closed(0, 1), Some(25));
        // Said once: the second pipe's close has nothing more to say.
        assert_eq!(kept.closed(0, 1), None);
        assert_eq!(kept.closed(1, 1), None);
        assert!(KeptLines::line(25).starts_with("25 more lines of its output not kept"));
    }
}
