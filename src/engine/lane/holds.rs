//! Where a lane holds the clock and the grants so a night's moments are the scenario's, not the
//! machine's: the write a planned crash falls in, two workers going write for write, the write
//! that takes the rows past the queue, a restarted worker's first write, and whether the rows
//! read show the clock's moment.

use super::Lane;
use crate::supervisor::slot::SlotState;

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
        let mut moments: Vec<f64> = Vec::new();
        for (slot, attempt) in self.attempts.iter().enumerate() {
            // A long item's work: its write comes when the work ends.
            if !self.scheduled(slot) || attempt.working() {
                continue;
            }
            let read =
                (self.read.observed_writes(slot)).map_or(attempt.writes, |w| w.min(attempt.writes));
            moments.extend((1..=needed).map(|k| attempt.done_at(read + k)));
        }
        moments.sort_by(f64::total_cmp);
        moments.get(usize::try_from(needed).ok()? - 1).copied()
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
