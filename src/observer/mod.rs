//! The observer: counts what the workers wrote, read incrementally by the warehouse's
//! followers (`warehouse::backend::Follower`, `JobFollower`): each read brings only what is new
//! since the last one, so a poll costs what is new, not the size of the table. What is counted
//! here (writers, the restart at item zero, duplicates, checkpoints) is the same whatever the
//! engine; someone else's job's reads are counted by `job`.

mod job;

use std::path::Path;

use crate::queue::Queue;
use crate::task::TaskBits;
use crate::warehouse::backend::{CheckpointRead, Follower, JobFollower, LaneRead};
use crate::warehouse::{RowSource, StoreError, Warehouse};

/// What one poll found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Poll {
    pub new_rows: u64,
    /// A new writer (run_id) appeared and its first row was task-000 although task-000 was
    /// already written: the postmortem's "worker restarts at item zero".
    pub restarted_at_zero: bool,
}

/// Running totals over a warehouse's rows and checkpoints.
#[derive(Debug)]
pub struct Observer {
    /// The keys rows are matched to: `task-NNN`, or an external job's own.
    queue: Queue,
    /// What reads the lane: reclaim's own rows, or an external job's table (`run --exec`).
    reader: Reader,
    seen: TaskBits,
    duplicated_bits: TaskBits,
    checkpointed: TaskBits,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated: u64,
    /// Rows whose task id is outside the queue.
    pub unexpected: u64,
    pub checkpoints: u64,
    /// Checkpoint rows whose key is not a key of the queue. A table of those alone is no
    /// checkpoint per key (a cursor: `progress(job, last_done)`), and cannot place a kill.
    pub checkpoints_outside: u64,
    /// The task of the newest row of the queue.
    pub last_task: Option<u64>,
    /// The key of the newest row, whatever it is (an external job's row may be outside the
    /// queue); `None` before any row, or when the rows are only counted.
    pub last_key: Option<String>,
    /// The external job's checkpoint table has been seen (its checkpoints are read from it).
    pub checkpoints_seen: bool,
    /// Whether the rows are read key by key, or only counted (`--count-sql`, a table without
    /// rowids), which names no key.
    follows: job::Follows,
    /// The first key seen with a checkpoint and no row, in one read of both: the job commits
    /// a checkpoint before its row, and a kill between the two loses that item on a resume
    /// that trusts the checkpoint.
    pub checkpoint_before_row: Option<String>,
    /// The first key seen with its row and no checkpoint, in one read of both, once the
    /// checkpoint table holds keys of the queue: the job commits a row before its checkpoint,
    /// so `after-row-commit` is a window of this job (a kill there redoes the item).
    pub row_before_checkpoint: Option<String>,
    /// The external job's table has been seen: a night that ends without it had it dropped,
    /// not never made.
    pub table_seen: bool,
    last_run: Option<String>,
    /// Rows of the newest writer since its first, in a row: in a lane of one worker, the rows
    /// of its newest attempt that wrote.
    pub last_run_rows: u64,
    /// Distinct writers seen, in order of their first row.
    pub writers: u32,
    pub restarted_at_zero: bool,
}

/// The follower an observer reads through.
#[derive(Debug)]
enum Reader {
    Lane(Box<dyn Follower>),
    Job(Box<dyn JobFollower>),
}

impl Observer {
    /// An observer of reclaim's own lane `db`, in `warehouse`.
    #[must_use]
    pub fn new(warehouse: &Warehouse, db: &Path, items: u64) -> Self {
        Self::reading(Reader::Lane(warehouse.follow(db)), Queue::tasks(items))
    }

    /// An observer of an external job's rows, wherever `source` says they land in `warehouse`,
    /// matched to the job's `queue`.
    #[must_use]
    pub fn of_job(warehouse: &Warehouse, db: &Path, queue: Queue, source: &RowSource) -> Self {
        Self::reading(Reader::Job(warehouse.follow_job(db, source)), queue)
    }

    fn reading(reader: Reader, queue: Queue) -> Self {
        let items = queue.len();
        Self {
            queue,
            reader,
            seen: TaskBits::with_len(items),
            duplicated_bits: TaskBits::with_len(items),
            checkpointed: TaskBits::with_len(items),
            rows: 0,
            distinct: 0,
            duplicated: 0,
            unexpected: 0,
            checkpoints: 0,
            checkpoints_outside: 0,
            table_seen: false,
            last_task: None,
            last_key: None,
            checkpoints_seen: false,
            follows: job::Follows::Keys,
            checkpoint_before_row: None,
            row_before_checkpoint: None,
            last_run: None,
            last_run_rows: 0,
            writers: 0,
            restarted_at_zero: false,
        }
    }

    /// The key at `index` of the queue the rows are matched to.
    #[must_use]
    pub fn key(&self, index: u64) -> String {
        self.queue.key(index)
    }

    /// Whether the row for task `index` has been seen.
    #[must_use]
    pub fn has_task(&self, index: u64) -> bool {
        self.seen.get(index)
    }

    /// Whether task `index` has a checkpoint.
    #[must_use]
    pub fn has_checkpoint(&self, index: u64) -> bool {
        self.checkpointed.get(index)
    }

    /// The keys of the queue with a checkpoint and no row: each committed its checkpoint first,
    /// and its row has not come.
    #[must_use]
    pub fn checkpoints_without_row(&self) -> crate::task::TaskBits {
        self.checkpointed.without(&self.seen)
    }

    /// Whether the checkpoint table read so far holds keys, none of them a key of the queue:
    /// not a checkpoint per key (a cursor, a job's name), so it places no kill.
    #[must_use]
    pub fn checkpoints_not_keyed(&self) -> bool {
        self.checkpoints == 0 && self.checkpoints_outside > 0
    }

    /// Whether the newest row's item has its checkpoint: the newest row's, when the rows say
    /// which is newest; where a job's table is read whole (no order of arrival: on PostgreSQL),
    /// whether every item with a row has one, so a row whose checkpoint never came is seen.
    #[must_use]
    pub fn newest_checkpointed(&self) -> bool {
        match self.last_task {
            Some(task) => self.has_checkpoint(task),
            None => {
                matches!(&self.reader, Reader::Job(job) if !job.in_arrival_order())
                    && self.rows > 0
                    && self.seen.within(&self.checkpointed)
            }
        }
    }

    /// Lets go of the reader's connection (the next poll opens one again), once a writer has
    /// died: on SQLite, a writer killed inside its commit may leave a log only the next opener
    /// recovers (`warehouse::sqlite::follow`).
    pub fn release(&mut self) {
        match &mut self.reader {
            Reader::Lane(lane) => lane.release(),
            Reader::Job(job) => job.release(),
        }
    }

    /// Reads everything there is, now: no shortcut that skips a read is taken (on SQLite, a
    /// commit in the same kernel tick as the last read leaves a job's file stamps as they were),
    /// so what a killed job left is all counted.
    pub fn poll_to_the_end(&mut self) {
        loop {
            match &mut self.reader {
                Reader::Lane(lane) => lane.read_all_next(),
                Reader::Job(job) => job.read_all_next(),
            }
            if !self.poll().is_ok_and(|p| p.new_rows > 0) {
                break;
            }
        }
    }

    /// Reads what is new. A lane with nothing to read yet (no worker has started) is not an
    /// error: there is simply nothing to see.
    pub fn poll(&mut self) -> Result<Poll, StoreError> {
        match &mut self.reader {
            Reader::Lane(lane) => {
                let read = lane.read()?;
                Ok(read.map_or_else(Poll::default, |read| self.count_lane(read)))
            }
            Reader::Job(job) => {
                let read = job.read()?;
                Ok(read.map_or_else(Poll::default, |read| self.apply_job(read)))
            }
        }
    }

    /// Counts one read of reclaim's own lane: its new rows, then its checkpoints.
    fn count_lane(&mut self, read: LaneRead) -> Poll {
        let poll = self.count_rows(read.rows);
        if let Some(checkpoints) = read.checkpoints {
            self.apply_checkpoints(checkpoints);
        }
        poll
    }

    /// Counts one row of task `index` (`None`: a key outside the queue).
    fn count_key(&mut self, index: Option<u64>) {
        let Some(index) = index else {
            self.unexpected += 1;
            return;
        };
        self.last_task = Some(index);
        if self.seen.set(index) {
            if !self.duplicated_bits.set(index) {
                self.duplicated += 1;
            }
        } else {
            self.distinct += 1;
        }
    }

    /// Counts new rows (task, run), in the order they were written: writers, the restart at
    /// item zero, duplicates.
    fn count_rows(&mut self, new_rows: Vec<(String, String)>) -> Poll {
        let mut poll = Poll::default();
        for (task, run) in new_rows {
            self.rows += 1;
            poll.new_rows += 1;
            let index = self.queue.index_of(&task);
            if self.last_run.as_deref() != Some(run.as_str()) {
                self.writers += 1;
                self.last_run_rows = 0;
                if index == Some(0) && self.seen.get(0) {
                    self.restarted_at_zero = true;
                    poll.restarted_at_zero = true;
                }
                self.last_run = Some(run);
            }
            self.last_run_rows += 1;
            self.count_key(index);
        }
        poll
    }

    /// Counts what a poll read of the checkpoints; returns the items checkpointed in it.
    fn apply_checkpoints(&mut self, read: CheckpointRead) -> Vec<u64> {
        if read.wiped {
            self.clear_checkpoints();
        }
        let mut new = Vec::new();
        for task in read.keys {
            match self.queue.index_of(&task) {
                Some(index) if !self.checkpointed.set(index) => {
                    self.checkpoints += 1;
                    new.push(index);
                }
                Some(_) => {}
                None => self.checkpoints_outside += 1,
            }
        }
        new
    }

    /// Forgets the checkpoint totals, for after a wipe that this process made itself: the
    /// reader reads the checkpoints again from the start.
    pub fn reset_checkpoints(&mut self) {
        self.clear_checkpoints();
        match &mut self.reader {
            Reader::Lane(lane) => lane.forget_checkpoints(),
            Reader::Job(job) => job.forget_checkpoints(),
        }
    }

    fn clear_checkpoints(&mut self) {
        self.checkpointed.clear();
        self.checkpoints = 0;
        self.checkpoints_outside = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        (pairs.iter())
            .map(|(task, run)| ((*task).to_string(), (*run).to_string()))
            .collect()
    }

    #[test]
    fn the_newest_writers_rows_are_counted_from_its_first() {
        let nowhere = Path::new("/nonexistent/reclaim-observer-tests/night.db");
        let mut observer = Observer::new(&Warehouse::Sqlite, nowhere, 3);
        observer.count_rows(rows(&[("task-000", "a"), ("task-001", "a")]));
        assert_eq!((observer.rows, observer.last_run_rows), (2, 2));
        // Read in two polls or one, a new writer's rows count from its own first.
        let poll = observer.count_rows(rows(&[("task-000", "b")]));
        assert!(poll.restarted_at_zero);
        observer.count_rows(rows(&[("task-001", "b"), ("task-002", "b")]));
        assert_eq!((observer.rows, observer.last_run_rows), (5, 3));
        assert_eq!(observer.writers, 2);
    }
}
