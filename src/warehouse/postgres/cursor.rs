//! Where a follower has read a table up to, by an identity column reclaim gives its own tables
//! (`records.rowid`, `checkpoints.seq`): a high-water mark and the gaps below it.
//!
//! On SQLite a rowid is assigned at insert and the writer holds the only write lock, so rowids
//! arrive in commit order and a high-water mark sees everything. On PostgreSQL two
//! transactions take identity values and commit in either order, so a row may appear below the
//! mark after it has passed. The gaps below the mark are remembered and asked for again on each
//! read until they are final: a gap found in a snapshot whose next transaction id was X is
//! dropped once a later read (not the one that found it) had every transaction below X ended
//! (its snapshot's xmin at or past X), so none that could hold the value is left. A rolled-back
//! insert, or an `ON CONFLICT DO NOTHING` that took a value and wrote nothing, leaves such a gap
//! for ever; a busy server's other transactions (another lane's) do not keep it asked for.

use std::collections::{BTreeMap, BTreeSet};

/// Gaps remembered at most; past it the newest are not remembered (a live figure may then lag,
/// the verdict does not: it counts the whole table at the end).
const MAX_GAPS: usize = 100_000;

/// A read's snapshot, as the server gives it (`pg_current_snapshot()`): the oldest transaction
/// still in progress, and the next one to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub xmin: i64,
    pub xmax: i64,
}

/// A table's read position.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Cursor {
    high_water: i64,
    /// Gaps that have survived one read already, each with the `xmax` of the read that found it.
    gaps: BTreeMap<i64, i64>,
    /// Gaps found in the last read.
    young_gaps: BTreeSet<i64>,
    young_xmax: i64,
}

impl Cursor {
    /// The highest value read.
    #[must_use]
    pub fn high_water(&self) -> i64 {
        self.high_water
    }

    /// The values below the mark still to ask for.
    #[must_use]
    pub fn gaps(&self) -> Vec<i64> {
        self.gaps.keys().chain(&self.young_gaps).copied().collect()
    }

    /// Takes in one read: `ids`, the values it returned (above the mark in ascending order,
    /// and any gap found), read in `snapshot`.
    pub fn advance(&mut self, ids: impl IntoIterator<Item = i64>, snapshot: Snapshot) {
        // Gaps that survived a read, asked for again in a snapshot where every transaction that
        // could hold them had ended, are final.
        self.gaps.retain(|_, found| *found > snapshot.xmin);
        let young = std::mem::take(&mut self.young_gaps);
        self.gaps
            .extend(young.into_iter().map(|id| (id, self.young_xmax)));
        self.young_xmax = snapshot.xmax;
        for id in ids {
            if self.gaps.remove(&id).is_some() || id <= self.high_water {
                continue;
            }
            for missing in (self.high_water + 1)..id {
                if self.gaps.len() + self.young_gaps.len() >= MAX_GAPS {
                    break;
                }
                self.young_gaps.insert(missing);
            }
            self.high_water = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot with nothing in progress at transaction `x`.
    fn idle(x: i64) -> Snapshot {
        Snapshot { xmin: x, xmax: x }
    }

    #[test]
    fn values_in_order_leave_no_gap() {
        let mut cursor = Cursor::default();
        cursor.advance([1, 2, 3], idle(10));
        assert_eq!(cursor.high_water(), 3);
        assert!(cursor.gaps().is_empty());
    }

    #[test]
    fn a_value_committed_late_is_asked_for_until_it_comes() {
        let mut cursor = Cursor::default();
        // 2 was taken by transaction 10, still open when 3 committed.
        let busy = Snapshot { xmin: 10, xmax: 12 };
        cursor.advance([1, 3], busy);
        assert_eq!(cursor.gaps(), [2]);
        cursor.advance([], busy);
        assert_eq!(cursor.gaps(), [2], "still in flight: asked again");
        cursor.advance([2, 4], idle(13));
        assert!(cursor.gaps().is_empty());
        assert_eq!(cursor.high_water(), 4);
    }

    #[test]
    fn a_gap_is_given_up_once_every_transaction_that_could_hold_it_ended() {
        let mut cursor = Cursor::default();
        cursor.advance([1, 3], Snapshot { xmin: 10, xmax: 12 });
        assert_eq!(cursor.gaps(), [2]);
        // Transaction 15 began later: it cannot hold 2, and keeps nothing asked for.
        cursor.advance([], Snapshot { xmin: 11, xmax: 16 });
        assert_eq!(cursor.gaps(), [2], "11 may hold it");
        cursor.advance([], Snapshot { xmin: 15, xmax: 16 });
        assert!(cursor.gaps().is_empty(), "a rolled-back insert's value");
    }
}
