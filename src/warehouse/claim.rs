//! The claim strategy's queue, in words both engines speak: when a claim is made and how long
//! its lease lasts (`LeaseClock`), what a claim found (`Next`), and how the queue grows
//! (`CHUNK`). Each engine claims its own way (`sqlite::claim`, `postgres::claim`).

/// Items added to the queue at a time, as the workers reach its end: a queue of millions is
/// never written up front.
pub const CHUNK: u64 = 4096;

/// Claims of one item before no worker takes it again: an item whose every lease ends before
/// its commit (its worker killed each time, or its work outliving every lease) is left, and
/// said, rather than passed from worker to worker without end.
pub const MAX_CLAIMS: u64 = 10;

/// When a claim is made and how long its lease lasts: at a moment of the night, for that many
/// of its seconds; or, on a night without moments, now and for that many real seconds, on the
/// clock of the database's host (the server's, on PostgreSQL, so every worker's agree).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeaseClock {
    /// The night's moment; `None`: real time.
    pub at: Option<f64>,
    pub secs: f64,
    /// The long item's index and how much longer its lease is (its announced work, in the
    /// same time as `secs`): its worker holds it while it works, and no other takes it over.
    pub long: Option<(u64, f64)>,
}

impl LeaseClock {
    /// How long a claim of the item `index` lasts.
    #[must_use]
    pub fn secs_for(&self, index: u64) -> f64 {
        match self.long {
            Some((long, extra)) if long == index => self.secs + extra,
            _ => self.secs,
        }
    }
}

/// A claim made: the item's index and the lease's number, one more than the item's last lease
/// (the fencing token: a later claim of the item always holds a higher number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    pub index: u64,
    pub number: u64,
}

/// What the commit of a claimed item checks in the row's transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence {
    /// Nothing: the worker trusts the lease it took (`claim`). A worker stopped past its lease
    /// still commits, after the worker that took the item over did.
    Trusted,
    /// The item's lease is still this number (`fenced`): a worker whose lease was taken over
    /// commits nothing.
    Token(u64),
}

/// What a claim found.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// This item, now leased to the worker.
    Item(Lease),
    /// Every item left is leased by another worker; the first lease ends in this many seconds
    /// (0 when one is being claimed right now).
    Wait(f64),
    /// Every item is done.
    Finished,
    /// Every item is done but these (at most `LEFT_LISTED` of them), each claimed
    /// `MAX_CLAIMS` times and never done: no worker takes them again.
    Left(Vec<u64>),
}

/// At most this many items left are named.
pub const LEFT_LISTED: u64 = 10;

impl Next {
    /// Nothing claimable: `open` items not done, the first lease ending in `left` seconds.
    #[must_use]
    pub fn after(open: u64, left: Option<f64>) -> Self {
        if open == 0 {
            Self::Finished
        } else {
            Self::Wait(left.unwrap_or(0.0).max(0.0))
        }
    }
}
