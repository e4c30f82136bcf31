//! Where a lane holds the clock and the grants so a night's moments are the scenario's, not the
//! machine's: the write a planned crash falls in, two workers going write for write, the write
//! that takes the rows past the queue, a restarted worker's first write, and whether the rows
//! read show the clock's moment.

use super::Lane;
use crate::engine::pace::Attempt;
use crate::supervisor::slot::{Slot, SlotState};

impl Lane {
    /// The write of `slot`'s next attempt that holds the plan's crash point: the first
    /// attempt's (it alone carries the crash out), one task a write, from task-000.
    pub(in crate::engine) fn crash_write(&self, slot: usize) -> Option<u64> {
        let crash = self.config.crash_at?;
        // A claim worker's writes are whichever items it claims, not one task after another.
        let worker = self.on_schedule(slot)
            && crash.point != crate::worker::CrashPoint::AfterRelaySend
            && !self.claims();
        (worker && self.slots[slot].attempt() == 0 && self.config.batch <= 1)
            .then_some(crash.task + 1)
    }

    /// With two or more workers on the schedule, how far any of them may be granted: the
    /// moment of the earliest write among those they wait for (a worker busy between two writes
    /// waits for none yet), and, when the writes of that moment go one at a time, the slot
    /// whose turn it is. So each is granted its next write only once all of them wait at it,
    /// each having looked at the queue already, and which of them reaches a task first is the
    /// schedule's doing, not the machine's, at every speed.
    #[must_use]
    pub(in crate::engine) fn lockstep(&self) -> Option<(f64, Option<usize>)> {
        let next: Vec<(f64, usize)> = (0..self.slots.len())
            .filter(|&slot| self.scheduled(slot))
            .map(|slot| (self.awaited(slot), slot))
            .collect();
        let earliest = next.iter().map(|&(at, _)| at).fold(f64::INFINITY, f64::min);
        let now: Vec<usize> = (next.iter())
            .filter(|&&(at, _)| at <= earliest + 1e-9)
            .map(|&(_, slot)| slot)
            .collect();
        // The writes of one moment go one worker at a time, in slot order: the first waiting
        // there is granted, and the next only once it has made its write and asked for its
        // next (or ended). What a write does can depend on the others' (a unique key refuses
        // the second copy of a row; a claim worker claims after its grant; a worker whose write
        // ends its queue counts the table after it, its `done`), so which of them inserts,
        // claims or counts what is the same on every run, not the order the machine ran them.
        let turn = now.first().copied();
        (next.len() > 1).then_some((earliest, turn))
    }

    /// The moment of the write `slot`'s worker waits for, or of its last while it has not asked
    /// for the next; in the long item's work, the end of the step it does (its write waits
    /// there, so the others go on meanwhile, and the step is granted when the clock gets there).
    fn awaited(&self, slot: usize) -> f64 {
        self.attempts[slot].awaited()
    }

    /// Whether the lane's workers are the claim strategy's: each write is granted alone, with
    /// its moment (the worker claims at it), never ahead of the worker's asking.
    #[must_use]
    pub(in crate::engine) fn claims(&self) -> bool {
        self.config
            .worker
            .strategy()
            .is_some_and(crate::worker::Strategy::claims_items)
    }

    /// Whether each of the lane's writes is granted alone, once its worker has asked for it:
    /// a claim worker's (it claims at the moment its grant names), and a worker of a lane with
    /// a long item (the item's work moves the schedule on by its span only once the worker
    /// says it begins: writes granted ahead of that were made on the old schedule, ten rows
    /// where three were due at 16x).
    #[must_use]
    pub(in crate::engine) fn grants_one_write_at_a_time(&self) -> bool {
        self.claims() || self.config.long_item.is_some()
    }

    /// Whether `slot`'s worker is one the clock keeps pace with now: reclaim's own worker (not
    /// the relay, not someone else's job), alive and running (not hung), with a pace. The clock
    /// and the grants wait for such a worker, and what it says is stamped with its place in the
    /// schedule.
    #[must_use]
    pub(in crate::engine) fn scheduled(&self, slot: usize) -> bool {
        let (Some(s), Some(a)) = (self.slots.get(slot), self.attempts.get(slot)) else {
            return false;
        };
        self.on_schedule(slot) && s.is_live() && s.state() == SlotState::Running && a.paced()
    }

    /// Every write its running workers were granted up to `clock` has been made and read
    /// from the rows, and each has said everything it has to say at that moment: what the lane
    /// shows is the clock's moment, whatever the machine's pace.
    #[must_use]
    pub fn settled(&self, clock: f64) -> bool {
        // In lockstep, a write of the clock's moment not granted yet is only waiting for its
        // turn: it is due all the same, or a stop there would show the moment half made.
        let lockstep = self.lockstep().is_some();
        (0..self.slots.len())
            .filter(|&slot| self.scheduled(slot))
            .all(|slot| {
                let a = &self.attempts[slot];
                let read = self.read.observed_writes(slot).unwrap_or(0);
                // In the long item's work: each step granted up to the clock finished.
                if let Some(work) = a.work {
                    return work.done >= work.granted.min(work.grantable(clock))
                        && read >= a.writes;
                }
                let granted = if lockstep { u64::MAX } else { a.granted };
                let due = granted.min(a.grantable(clock)).min(a.need.max(a.writes));
                // And it has asked for its next write (`wait`): until then it may still say
                // lines stamped with its last write's moment, or with its start's (a restarted
                // worker's `start` and `resume`, which a caption may wait for), and the
                // checkpoint that follows a row may not be committed yet. Its `wait` comes
                // after all of them on the same pipe.
                let asked = a.need > a.writes;
                // Granted the write its planned crash falls in and not dead yet: it dies at this
                // moment (the clock waits there, see `Attempt::hold`), so the moment is not
                // whole until it has. A stop taken before showed a kill in one lane and not yet
                // the other's at the same second, with the other's messages of a write before.
                let crashing = a
                    .crash_write
                    .is_some_and(|k| a.writes < k && a.granted >= k);
                a.writes >= due && read >= due && asked && !crashing
            })
    }

    /// The moment of the first write that may take the rows past the queue's items, while they
    /// have not gone past it: each write adds at most a batch of rows, so it takes at least so
    /// many writes, any worker's, beyond those the rows read include; the earliest moment that
    /// many can all have been made. (Counted from the read writes: a write heard but not read
    /// yet keeps the clock on its moment until the rows show it.)
    #[must_use]
    pub(in crate::engine) fn row_past_items(&self) -> Option<f64> {
        let rows = self.observer.rows;
        if rows > self.config.items || self.config.items == 0 {
            return None;
        }
        let batch = self.config.batch.max(1);
        let needed = (self.config.items + 1 - rows).div_ceil(batch);
        let mut writes = Vec::with_capacity(self.attempts.len());
        for (slot, attempt) in self.attempts.iter().enumerate() {
            // A long item's work: its write comes when the work ends.
            if !self.scheduled(slot) || attempt.working() {
                continue;
            }
            let read =
                (self.read.observed_writes(slot)).map_or(attempt.writes, |w| w.min(attempt.writes));
            writes.push(Writes {
                attempt,
                after: read,
                count: needed,
            });
        }
        nth_moment(&writes, needed)
    }

    /// The moment of the write that took the rows past the queue's items, read from the rows
    /// once they have: in a lane of one worker, the newest writer's rows are its attempt's, and
    /// every row before them was committed before that attempt began, so the row past the queue
    /// is that attempt's write number `items + 1 - rows before`, whatever the poll that reads
    /// it saw of writes not heard yet. `None` in a lane of several workers, of a job of the
    /// user's or unpaced, or when the newest rows may not be this attempt's alone: the rows
    /// before them are not those it began with, or they are more than it was granted.
    /// `loss_rows`: the row counts at which the lane's answers were lost (`Lane::loss_rows`).
    #[must_use]
    pub(in crate::engine) fn row_past_items_read(&self, loss_rows: &[u64]) -> Option<f64> {
        let ([_], [attempt]) = (self.slots.as_slice(), self.attempts.as_slice()) else {
            return None;
        };
        let items = self.config.items;
        let block = self.observer.last_run_rows;
        let before = self.observer.rows.checked_sub(block)?;
        let batch = self.config.batch.max(1);
        // A write whose answer was lost and that the worker made again adds its rows twice
        // (as its strategy writes them again): each such write of this attempt before the
        // crossing brings the row past the queue one write sooner.
        let again = (self.config.worker.strategy())
            .filter(|_| self.config.retries_writes())
            .map_or(0, crate::worker::Strategy::lost_answer_duplicates);
        let losses = (loss_rows.iter())
            .filter(|&&r| r > before && r <= items)
            .count() as u64;
        if losses > 0 && again > 0 && batch > 1 {
            return None;
        }
        let extra = again * losses;
        let write = (items + 1).checked_sub(before + extra)?.div_ceil(batch);
        let may = (attempt.granted.max(attempt.writes))
            .saturating_mul(batch)
            .saturating_add(extra);
        let own = self.config.worker.strategy().is_some();
        // The rows before the block are the rows this attempt began with: none came from a
        // hand (sqlite3, another program) since, and the block is this attempt's.
        let its_own = before == self.kills.rows_at_spawn(0);
        // A write before a rebase (a pause, a resume) has no moment on today's schedule.
        let scheduled = write > attempt.base_writes();
        let paced = attempt.paced() && !attempt.working();
        (own && its_own && scheduled && paced && write > 0 && block <= may && items > 0)
            .then(|| attempt.done_at(write))
    }

    /// The moment the rows went past the queue's items on the schedule, from the rows that
    /// were not the current attempts' (`RowsRead::base_rows`): one row a write, that is the
    /// moment of the `items + 1 - base`th of the attempts' writes in moment order, whatever
    /// order the machine made them in and whenever the poll that found them came. (Counted
    /// from the writes heard at the last read, a poll that found a write not heard yet placed
    /// it a moment early: seen under load on PostgreSQL.) `None` without a base read since the
    /// newest attempt began, for a strategy whose write may add no row (a key, a checkpoint
    /// skipped: two-commit's two workers of duplicate-delivery placed it a moment early at
    /// one speed and not the other), with a batch or an answer lost (a write of more rows), for
    /// a job of the user's or the relay, an attempt unpaced, rebased (a pause, a resume) or in
    /// the long item's work, or one ended with a write granted it may or may not have made.
    pub(in crate::engine) fn row_past_items_scheduled(&self, loss_rows: &[u64]) -> Option<f64> {
        let base = self.read.base_rows()?;
        // A write that skips a task already checkpointed, or whose row a key refuses, adds no
        // row: only a strategy with neither adds one row each write.
        let one_row_a_write =
            (self.config.worker.strategy()).is_some_and(|s| !s.unique_key() && !s.checkpoints());
        if !one_row_a_write || self.config.batch > 1 || !loss_rows.is_empty() {
            return None;
        }
        let nth = (self.config.items + 1).checked_sub(base)?;
        let mut writes = Vec::with_capacity(self.attempts.len());
        for (slot, a) in self.attempts.iter().enumerate() {
            let live = self.slots.get(slot).is_some_and(Slot::is_live);
            let on_it = self.on_schedule(slot) && a.paced() && !a.working();
            if !on_it || a.base_writes() > 0 || (!live && a.granted > a.writes) {
                return None;
            }
            writes.push(Writes {
                attempt: a,
                after: 0,
                // A live worker makes each write it was granted at that write's moment.
                count: if live {
                    a.granted.max(a.writes)
                } else {
                    a.writes
                },
            });
        }
        nth_moment(&writes, nth)
    }

    /// The moment of a restarted worker's first write while the rows have not shown it yet
    /// (whether it began at task-000 again is read from them), if that worker runs on.
    #[must_use]
    pub(in crate::engine) fn first_write_unread(&self) -> Option<f64> {
        let slot = self.read.first_write_unread()?;
        let running = self.slots[slot].is_live() && self.slots[slot].state() == SlotState::Running;
        // Not in a long item's work (its first write comes when the work ends).
        let attempt = &self.attempts[slot];
        (running && attempt.paced() && !attempt.working()).then(|| attempt.first_write())
    }
}

/// Writes of one attempt in moment order: those after its `after`th, `count` of them.
#[derive(Clone, Copy)]
struct Writes<'a> {
    attempt: &'a Attempt,
    after: u64,
    count: u64,
}

impl Writes<'_> {
    /// The moment of the `k`th of these writes (from 1).
    fn at(&self, k: u64) -> f64 {
        self.attempt.done_at(self.after.saturating_add(k))
    }

    /// How many of these writes fall at or before `moment` (their moments never go back).
    fn made_by(&self, moment: f64) -> u64 {
        first_where(self.count, |k| self.at(k).total_cmp(&moment).is_gt()) - 1
    }
}

/// The moment of the `nth` write in moment order of `writes`, ties in either order, as sorting
/// every moment would say; `None` if they make fewer. Found by halving, not by walking or
/// sorting them: a claim night's lane asked for the 3,000th of eight workers' moments on every
/// poll, and sorting them took most of the supervisor's time.
fn nth_moment(writes: &[Writes], nth: u64) -> Option<f64> {
    let made = writes
        .iter()
        .map(|w| w.count)
        .fold(0u64, u64::saturating_add);
    if nth == 0 || nth > made {
        return None;
    }
    let made_by = |moment: f64| {
        (writes.iter())
            .map(|w| w.made_by(moment))
            .fold(0u64, u64::saturating_add)
    };
    // Each attempt's first write by whose moment `nth` writes are made; the earliest of those.
    (writes.iter())
        .filter_map(|w| {
            let k = first_where(w.count, |k| made_by(w.at(k)) >= nth);
            (k <= w.count).then(|| w.at(k))
        })
        .min_by(f64::total_cmp)
}

/// The first `k` in `1..=count` where `holds` holds (`count + 1` if none), for a `holds` that,
/// once it holds, holds for every greater `k`.
fn first_where(count: u64, holds: impl Fn(u64) -> bool) -> u64 {
    let (mut low, mut high) = (1, count.saturating_add(1));
    while low < high {
        let mid = low + (high - low) / 2;
        if holds(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    low
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pace::Pace;

    #[test]
    fn the_nth_write_in_moment_order_is_found_across_attempts() {
        // Three workers from 02:00:00 at 6.3 s a write, as the claim scenario's naive lane:
        // 120 rows at 40 writes each, the 121st row at the 41st write's moment.
        let start = 7200.0;
        let a = Attempt::new(start, Pace::per_item(6.3));
        let from_first = |attempt, count| Writes {
            attempt,
            after: 0,
            count,
        };
        let three = [
            from_first(&a, 120),
            from_first(&a, 120),
            from_first(&a, 120),
        ];
        let at = nth_moment(&three, 121).unwrap();
        assert!((at - (start + 41.0 * 6.3)).abs() < 1e-9, "{at}");
        assert!((nth_moment(&three, 120).unwrap() - (start + 40.0 * 6.3)).abs() < 1e-9);
        // One that began later and goes faster: its writes fall among the others'.
        let late = Attempt::new(start + 10.0, Pace::per_item(1.0));
        let two = [from_first(&a, 5), from_first(&late, 5)];
        let expected = [
            7206.3, 7211.0, 7212.0, 7212.6, 7213.0, 7214.0, 7215.0, 7218.9, 7225.2, 7231.5,
        ];
        for (n, want) in (1..).zip(expected) {
            let at = nth_moment(&two, n).unwrap();
            assert!((at - want).abs() < 1e-9, "write {n}: {at}, not {want}");
        }
        // Fewer writes than asked for, or none asked for: no moment.
        assert_eq!(nth_moment(&two, 11), None);
        assert_eq!(nth_moment(&two, 0), None);
    }

    #[test]
    fn the_nth_write_is_the_one_sorting_every_moment_finds() {
        // Attempts of different starts and paces, one rebased (its writes before the base all
        // at the base's moment), with ties among them, read from different writes.
        let mut rebased = Attempt::new(7300.0, Pace::per_item(2.5));
        rebased.writes = 4;
        rebased.rebase(7320.0);
        let attempts = [
            Attempt::new(7200.0, Pace::per_item(6.3)),
            Attempt::new(7200.0, Pace::per_item(6.3)),
            Attempt::new(7210.5, Pace::per_item(0.7)),
            Attempt::new(7250.0, Pace::per_item(0.0)),
            rebased,
        ];
        for (after, count) in [(0, 0), (0, 1), (3, 7), (2, 40), (0, 250)] {
            let writes: Vec<Writes> = (attempts.iter().enumerate())
                .map(|(i, attempt)| Writes {
                    attempt,
                    after: after + i as u64 % 3,
                    count: count + i as u64,
                })
                .collect();
            let mut sorted: Vec<f64> = (writes.iter())
                .flat_map(|w| (1..=w.count).map(|k| w.at(k)))
                .collect();
            sorted.sort_by(f64::total_cmp);
            for nth in 0..=sorted.len() as u64 + 1 {
                let want = nth
                    .checked_sub(1)
                    .and_then(|i| sorted.get(i as usize))
                    .copied();
                assert_eq!(
                    nth_moment(&writes, nth),
                    want,
                    "{after} {count}: write {nth}"
                );
            }
        }
    }
}
