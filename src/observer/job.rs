//! The observer on someone else's job (`run --exec`): what its table's reads bring (new rows
//! in order of arrival, the table counted whole, or read whole by key) and its checkpoint
//! table's, counted against the job's own queue; and the orders of commit a read of both shows
//! (a checkpoint before its row, a row before its checkpoint).

use super::{Observer, Poll, Reader};
use crate::warehouse::backend::{JobRead, JobRows};

/// How a job's rows are read: key by key, or only counted (no key to look up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Follows {
    Keys,
    Counts,
}

impl Observer {
    /// Whether the row of `key` has been seen; `None` when reclaim cannot tell: the key is
    /// outside the queue, or the rows are only counted (`JobRows::Counted`, `Whole`).
    #[must_use]
    pub fn has_key(&self, key: &str) -> Option<bool> {
        let index = (self.queue.index_of(key)).filter(|_| self.follows == Follows::Keys)?;
        Some(self.has_task(index))
    }

    /// What reclaim can say beside a line of the job's naming a lock on its database
    /// (`JobFollower::lock_said`); `None` for reclaim's own workers.
    #[must_use]
    pub fn lock_said(&self, line: &str) -> Option<&'static str> {
        match &self.reader {
            Reader::Job(job) => job.lock_said(line),
            Reader::Lane(_) => None,
        }
    }

    /// Counts what one read of a job's table found.
    pub(super) fn apply_job(&mut self, read: JobRead) -> Poll {
        let mut poll = Poll::default();
        self.table_seen |= read.rows != JobRows::NoTable;
        let with_checkpoints = read.checkpoints.is_some();
        let checkpointed_now = match read.checkpoints {
            Some(checkpoints) => {
                self.checkpoints_seen = true;
                self.apply_checkpoints(checkpoints)
            }
            None => Vec::new(),
        };
        match read.rows {
            JobRows::NoTable => {}
            JobRows::Whole(rows, distinct, duplicated) => {
                self.follows = Follows::Counts;
                self.set_totals(&mut poll, (rows, distinct, duplicated));
            }
            JobRows::Counted(rows, distinct) => {
                self.follows = Follows::Counts;
                self.set_totals(&mut poll, (rows, distinct, rows.saturating_sub(distinct)));
                self.unexpected = 0;
            }
            JobRows::Keys(groups) => {
                // The whole table: the totals start again from what it holds now.
                self.seen.clear();
                self.duplicated_bits.clear();
                let (mut rows, mut distinct, mut duplicated, mut outside) = (0, 0, 0, 0u64);
                for (key, count) in groups {
                    rows += count;
                    match key.as_deref().and_then(|k| self.queue.index_of(k)) {
                        Some(index) => {
                            self.seen.set(index);
                            distinct += 1;
                            if count > 1 {
                                self.duplicated_bits.set(index);
                                duplicated += 1;
                            }
                        }
                        None => outside += count,
                    }
                }
                self.set_totals(&mut poll, (rows, distinct, duplicated));
                self.unexpected = outside;
            }
            JobRows::New(keys) => {
                let new_indexes = self.count_new_keys(&mut poll, keys);
                // Rows and checkpoints were read in one snapshot: a checkpoint whose row is not
                // there was committed first.
                if read.complete && self.checkpoint_before_row.is_none() {
                    self.checkpoint_before_row = checkpointed_now
                        .into_iter()
                        .find(|&index| !self.seen.get(index))
                        .map(|index| self.queue.key(index));
                }
                // And a new row whose checkpoint is not there was committed first; only once
                // the table holds keys of the queue (a cursor's row names none).
                if read.complete
                    && with_checkpoints
                    && self.checkpoints > 0
                    && self.row_before_checkpoint.is_none()
                {
                    self.row_before_checkpoint = (new_indexes.into_iter())
                        .find(|&index| !self.checkpointed.get(index))
                        .map(|index| self.queue.key(index));
                }
            }
        }
        poll
    }

    /// Totals read whole: `(rows, distinct, duplicated)`, and the new rows since the last.
    fn set_totals(&mut self, poll: &mut Poll, (rows, distinct, duplicated): (u64, u64, u64)) {
        poll.new_rows = rows.saturating_sub(self.rows);
        self.rows = rows;
        self.distinct = distinct;
        self.duplicated = duplicated;
    }

    /// Counts a job's new rows, each by its key, in the order they arrived; returns the
    /// queue's items among them.
    fn count_new_keys(&mut self, poll: &mut Poll, keys: Vec<Option<String>>) -> Vec<u64> {
        let mut new_indexes = Vec::new();
        for key in keys {
            self.rows += 1;
            poll.new_rows += 1;
            let index = key.as_deref().and_then(|k| self.queue.index_of(k));
            new_indexes.extend(index);
            self.last_key.clone_from(&key);
            // Without a run id, a second row for the first key, once the job had gone past it,
            // is the restart at item zero (a kill at the first key, redone, is not).
            if index == Some(0) && self.seen.get(0) && self.distinct > 1 && !self.restarted_at_zero
            {
                self.restarted_at_zero = true;
                poll.restarted_at_zero = true;
            }
            self.count_key(index);
        }
        new_indexes
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use rusqlite::Connection;

    use crate::observer::{Observer, Poll};
    use crate::queue::Queue;
    use crate::warehouse::sqlite::job::STAMP_TICK;
    use crate::warehouse::{RowSource, Warehouse};

    fn db_with(sql: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("warehouse.db");
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        conn.execute_batch(sql).unwrap_or_else(|e| panic!("{e}"));
        (dir, db)
    }

    fn source(table: &str, key: &str) -> RowSource {
        RowSource {
            table: table.into(),
            key: key.into(),
            count_sql: None,
            checkpoints: None,
        }
    }

    #[test]
    fn a_job_table_is_followed_by_its_key_until_it_exists_and_after() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let db = dir.path().join("warehouse.db");
        let mut observer = Observer::of_job(
            &Warehouse::Sqlite,
            &db,
            Queue::tasks(10),
            &source("jobs", "id"),
        );
        // No database yet, then no table yet: nothing to see, and no error.
        assert_eq!(observer.poll().ok(), Some(Poll::default()));
        let conn = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(observer.poll().ok(), Some(Poll::default()));
        conn.execute_batch(
            "CREATE TABLE jobs(id TEXT); INSERT INTO jobs VALUES ('task-000'), ('task-001'), ('task-000');",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let poll = observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(poll.new_rows, 3);
        assert!(poll.restarted_at_zero, "task-000 came back");
        assert_eq!(
            (observer.rows, observer.distinct, observer.duplicated),
            (3, 2, 1)
        );
        assert!(observer.has_task(1));
    }

    #[test]
    fn a_rollback_journal_database_is_read_without_a_lock_and_never_beside_a_live_journal() {
        let (_dir, db) = db_with(
            "CREATE TABLE jobs(id TEXT UNIQUE); INSERT INTO jobs VALUES ('task-000'), ('task-001');",
        );
        let mut observer = Observer::of_job(
            &Warehouse::Sqlite,
            &db,
            Queue::tasks(10),
            &source("jobs", "id"),
        );
        // A journal left live (a job killed inside its commit): the file may hold half a
        // transaction, so nothing is read and no mark moves.
        let journal = crate::base::paths::with_suffix(&db, "-journal");
        std::fs::write(&journal, [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(observer.poll().ok(), Some(Poll::default()));
        assert_eq!(observer.rows, 0);
        std::fs::remove_file(&journal).unwrap_or_else(|e| panic!("{e}"));
        let poll = observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((poll.new_rows, observer.rows), (2, 2));
        // A commit while reclaim watches needs no busy timeout at all.
        let writer = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
        writer
            .execute("INSERT INTO jobs VALUES ('task-002')", [])
            .unwrap_or_else(|e| panic!("{e}"));
        observer.poll_to_the_end();
        assert_eq!((observer.rows, observer.distinct), (3, 3));
        let said = observer.lock_said("Error: stepping, database is locked (5)");
        assert!(
            said.is_some_and(|s| s.starts_with("reclaim held no lock")),
            "{said:?}"
        );
        assert_eq!(observer.lock_said("Error: no such table: jobs"), None);
    }

    #[test]
    fn a_table_without_rowids_or_a_count_query_is_counted_whole() {
        let (_dir, db) = db_with(
            "CREATE TABLE jobs(id TEXT, n INT, PRIMARY KEY (id, n)) WITHOUT ROWID;
             INSERT INTO jobs VALUES ('a', 1), ('a', 2), ('b', 1);",
        );
        let mut observer = Observer::of_job(
            &Warehouse::Sqlite,
            &db,
            Queue::tasks(10),
            &source("jobs", "id"),
        );
        observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (observer.rows, observer.distinct, observer.duplicated),
            (3, 2, 1)
        );
        let counted = RowSource {
            count_sql: Some("SELECT count(*), count(DISTINCT n) FROM jobs".into()),
            ..source("jobs", "id")
        };
        let mut observer = Observer::of_job(&Warehouse::Sqlite, &db, Queue::tasks(10), &counted);
        observer.poll().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (observer.rows, observer.distinct, observer.duplicated),
            (3, 2, 1)
        );
    }

    #[test]
    fn a_job_table_of_another_shape_is_an_error_naming_its_columns() {
        let (_dir, db) = db_with("CREATE TABLE records(id TEXT, body TEXT);");
        let mut observer = Observer::of_job(
            &Warehouse::Sqlite,
            &db,
            Queue::tasks(10),
            &RowSource::default(),
        );
        let error = observer
            .poll()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error.contains("no column task_id (--key); its columns are id, body"),
            "{error}"
        );
    }

    /// What a poll of a job's database costs, one new row each time, on 10k and 1M rows: a
    /// rollback journal read lock-free (a fresh connection per read) beside WAL (one connection
    /// kept). BENCHMARKS.md has the figures; run it with
    /// `cargo test --release -j 1 --lib -- --ignored poll_cost --nocapture`.
    #[test]
    #[ignore = "a measurement, run by hand"]
    fn poll_cost_of_one_new_row_stays_flat_from_10k_to_1m_rows() {
        use std::time::Instant;
        for journal in ["DELETE", "WAL"] {
            let mut medians = Vec::new();
            for size in [10_000u64, 1_000_000] {
                let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
                let db = dir.path().join("job.db");
                let writer = Connection::open(&db).unwrap_or_else(|e| panic!("{e}"));
                writer
                    .execute_batch(&format!(
                        "PRAGMA journal_mode={journal}; CREATE TABLE jobs(id TEXT UNIQUE, payload TEXT);
                         WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < {size} - 1)
                         INSERT INTO jobs SELECT printf('k-%08d', i), 'payload payload payload' FROM n;"
                    ))
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut observer = Observer::of_job(
                    &Warehouse::Sqlite,
                    &db,
                    Queue::tasks(10),
                    &source("jobs", "id"),
                );
                observer.poll_to_the_end();
                assert_eq!(observer.rows, size);
                let mut times = Vec::new();
                for i in 0..300 {
                    writer
                        .execute("INSERT INTO jobs VALUES (?1, 'p')", [format!("new-{i}")])
                        .unwrap_or_else(|e| panic!("{e}"));
                    // Past the file times' tick, so the poll reads rather than skips.
                    std::thread::sleep(STAMP_TICK + std::time::Duration::from_millis(2));
                    let t = Instant::now();
                    let poll = observer.poll().unwrap_or_else(|e| panic!("{e}"));
                    times.push(t.elapsed());
                    assert_eq!(poll.new_rows, 1, "{journal} {size} {i}");
                }
                times.sort();
                eprintln!(
                    "poll cost: journal={journal} rows={size} poll median={:?} p90={:?} min={:?}",
                    times[times.len() / 2],
                    times[times.len() * 9 / 10],
                    times[0]
                );
                medians.push(times[times.len() / 2]);
            }
            // The cost follows what is new, not the table: a read starts at the high-water mark.
            assert!(medians[1] < medians[0] * 2, "{journal}: {medians:?}");
        }
    }
}
