//! The two promises reclaim exists for, written once for every engine: a checkpoint commits
//! with its row, and an outbox entry commits with its row. An engine opens a transaction, hands
//! its statements to `write_in`, and commits; what goes in the transaction is decided here.

use crate::heartbeat::unix_now;
use crate::task::{idem_key, payload, task_id};

/// One row, ready to insert: the task, its deterministic payload, and its idempotency key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub task_id: String,
    pub payload: String,
    pub idem_key: String,
}

impl Row {
    /// The row of the queue's item `index`.
    #[must_use]
    pub fn new(index: u64) -> Self {
        let task_id = task_id(index);
        let payload = payload(index);
        let idem_key = idem_key(&task_id, &payload);
        Self {
            task_id,
            payload,
            idem_key,
        }
    }
}

/// The rows of one transaction, and what commits with each of them.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a> {
    pub rows: &'a [&'a Row],
    /// The process writing them (`records.run_id`).
    pub run_id: &'a str,
    /// The unique key refuses a duplicate silently (`ON CONFLICT DO NOTHING`).
    pub ignore_conflicts: bool,
    /// Each row's checkpoint, in the same transaction.
    pub checkpoint: bool,
    /// Each row's outbox entry (the message's body, one per row), in the same transaction.
    pub outbox: Option<&'a [String]>,
}

/// The statements of one open transaction, as an engine prepared them for a batch (its run id,
/// and `ON CONFLICT DO NOTHING` when the batch ignores conflicts).
pub trait Statements {
    type Error;
    /// Inserts `row`; the rows inserted.
    fn insert(&mut self, row: &Row, now: f64) -> Result<u64, Self::Error>;
    /// Records that `task` is done (an upsert: a task has one checkpoint).
    fn checkpoint(&mut self, task: &str, now: f64) -> Result<(), Self::Error>;
    /// Queues `row`'s message, `body`, for the relay (once per task).
    fn outbox_entry(&mut self, row: &Row, body: &str, now: f64) -> Result<(), Self::Error>;
}

/// Runs `batch`'s statements inside the caller's open transaction, which the caller commits
/// (or drops, and nothing of it is written); returns the rows inserted.
pub fn write_in<S: Statements>(tx: &mut S, batch: &Batch<'_>) -> Result<u64, S::Error> {
    let mut inserted = 0;
    for (i, row) in batch.rows.iter().enumerate() {
        let now = unix_now();
        inserted += tx.insert(row, now)?;
        if batch.checkpoint {
            // INVARIANT: a checkpoint commits with its row: the same transaction, or neither.
            tx.checkpoint(&row.task_id, now)?;
        }
        if let Some(body) = batch.outbox.and_then(|bodies| bodies.get(i)) {
            // INVARIANT: an outbox entry commits with its row, or neither does; nothing is sent
            // inside the transaction (the relay sends what committed).
            tx.outbox_entry(row, body, now)?;
        }
    }
    Ok(inserted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statements that only say what they were asked to do.
    #[derive(Default)]
    struct Said(Vec<String>);

    impl Statements for Said {
        type Error = ();
        fn insert(&mut self, row: &Row, _: f64) -> Result<u64, ()> {
            self.0.push(format!("insert {}", row.task_id));
            Ok(1)
        }
        fn checkpoint(&mut self, task: &str, _: f64) -> Result<(), ()> {
            self.0.push(format!("checkpoint {task}"));
            Ok(())
        }
        fn outbox_entry(&mut self, row: &Row, body: &str, _: f64) -> Result<(), ()> {
            self.0.push(format!("outbox {} {body}", row.task_id));
            Ok(())
        }
    }

    #[test]
    fn each_row_goes_with_its_checkpoint_and_its_outbox_entry() {
        let (a, b) = (Row::new(0), Row::new(1));
        let bodies = ["hello a".to_string(), "hello b".to_string()];
        let batch = Batch {
            rows: &[&a, &b],
            run_id: "run-1",
            ignore_conflicts: true,
            checkpoint: true,
            outbox: Some(&bodies),
        };
        let mut said = Said::default();
        assert_eq!(write_in(&mut said, &batch), Ok(2));
        assert_eq!(
            said.0,
            [
                "insert task-000",
                "checkpoint task-000",
                "outbox task-000 hello a",
                "insert task-001",
                "checkpoint task-001",
                "outbox task-001 hello b",
            ]
        );
        let bare = Batch {
            checkpoint: false,
            outbox: None,
            ..batch
        };
        let mut said = Said::default();
        assert_eq!(write_in(&mut said, &bare), Ok(2));
        assert_eq!(said.0.len(), 2, "{:?}", said.0);
    }
}
