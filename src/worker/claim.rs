//! `claim`: N workers on one queue, each taking the next item with a lease. A worker claims an
//! item (its run id, a lease's end and the lease's number on the item's queue row), does it, and
//! commits the row, its checkpoint and the item's done mark in one transaction; a killed worker's
//! lease ends and another worker takes the item. The commit trusts the lease: a worker stopped
//! (SIGSTOP, a long GC pause) past its lease's end wakes believing the item is still its own and
//! commits it after the worker that took it over did: a lease is not a lock. `fenced` is this
//! loop with the lease's number checked in the commit's transaction. On PostgreSQL the claim is
//! `SELECT ... FOR UPDATE SKIP LOCKED` (`warehouse::postgres`); SQLite has no SKIP LOCKED, so
//! there the claim is its own `BEGIN IMMEDIATE` transaction (`warehouse::sqlite`).
//!
//! On a paced night the lease is in the night's time: a worker claims once it is granted its
//! write, at the moment the grant names, and its lease ends `LEASE_SECS` of the night later.
//! The supervisor grants the writes of one moment one worker at a time, in slot order, so which
//! worker takes which item is the night's doing, not the scheduler's. While every item left is
//! leased by another worker, the worker says `idle` and asks to be woken when the first lease
//! ends (`wake`): its schedule goes on from that moment, and the clock waits for its next write
//! as for any. Without a pace (`--delay-ms 0`,
//! every write granted at once) the night has no moments to give: the lease and the wait are
//! real time, as a fleet's are.

use std::time::Duration;

use super::{CrashPoint, Ctx, Row, WorkerError};
use crate::warehouse::claim::{Fence, Lease, LeaseClock, MAX_CLAIMS, Next};
use crate::worker::protocol::WorkerLine;

/// How long a claim holds an item without a word from its worker, in the night's seconds.
pub const LEASE_SECS: f64 = 30.0;
/// The same, in real time, for a night without a pace (it has no moments): far longer than an
/// item takes, as a real queue's lease is. At 300 ms eight workers at full speed on two cores
/// wrote items twice with no fault at all (a worker waiting its turn for SQLite's write lock,
/// or for a core, past its lease: 2 to 4 nights in 4, 10,000 items, 2026-12-05).
const LEASE: Duration = Duration::from_secs(5);
/// How often a worker looks at the queue again when an item is being claimed or committed by
/// another worker right now (no lease to wait for: real time, a transaction's length).
const POLL: Duration = Duration::from_millis(20);

/// A claim's lease: at the night's moment `at`, for `LEASE_SECS` of it; without one, now and
/// for `LEASE` of real time. The long item's lease is longer by its work (in the night's time
/// on a paced night), so the worker doing it holds it until it commits: sized by the item's
/// announced length, where a lease of an ordinary item's would end mid-work and let a second
/// worker take the item and do it again.
fn lease_clock(ctx: &Ctx<'_>, at: Option<f64>) -> LeaseClock {
    let long = ctx.config.long_item.map(|long| {
        let work = long.work.as_secs_f64();
        (
            long.task,
            if at.is_some() {
                work * ctx.config.scale
            } else {
                work
            },
        )
    });
    LeaseClock {
        at,
        secs: if at.is_some() {
            LEASE_SECS
        } else {
            LEASE.as_secs_f64()
        },
        long,
    }
}

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    work(ctx, |_| Fence::Trusted)
}

/// Claims, works and commits until the queue is done; `fence` says what the commit of a lease
/// checks (`claim` trusts it, `fenced` checks its number).
pub(super) fn work(ctx: &mut Ctx<'_>, fence: fn(Lease) -> Fence) -> Result<(), WorkerError> {
    ctx.db.prepare_claims()?;
    let mut idle = false;
    // The moment a lease ends that this worker asked to be woken at.
    let mut wake = None;
    loop {
        // INVARIANT: the claim comes after the grant of the write it is for, at the moment the
        // grant names: the supervisor hands out the grants of one moment in slot order.
        let granted = ctx.await_grant(ctx.writes + 1, wake);
        let at = match (granted, wake.take()) {
            (Some(at), Some(w)) => Some(at.max(w)),
            (at, _) => at,
        };
        let clock = lease_clock(ctx, at);
        match next(ctx, clock)? {
            Next::Item(lease) => {
                let index = lease.index;
                ctx.lease = Some(lease.number);
                idle = false;
                let started = std::time::Instant::now();
                let row = Row::new(index);
                // INVARIANT: a kill from here to the commit leaves the item leased, not done:
                // its lease ends and another worker takes it.
                ctx.crash_if(&[index], CrashPoint::BeforeWrite);
                ctx.before_write(&[&row])?;
                if commit(ctx, &row, (lease, fence(lease)))? {
                    ctx.after_write(&[&row], 1, 1);
                    ctx.committed(&[index], started);
                } else {
                    ctx.say(&WorkerLine::Lost { task: index });
                }
            }
            Next::Wait(left) => {
                if !idle {
                    idle = true;
                    ctx.say(&WorkerLine::idle(at.map(|at| at + left)));
                }
                match at {
                    // Woken by the supervisor's grant of its write after the lease's end.
                    Some(at) if left > 0.0 => wake = Some(at + left),
                    // An item is being claimed or committed right now (or the night has no
                    // moments): looked at again shortly, at the same moment.
                    _ => std::thread::sleep(Duration::from_secs_f64(left.max(0.001)).min(POLL)),
                }
            }
            Next::Finished => return Ok(()),
            Next::Left(items) => {
                let named: Vec<String> = items.iter().map(|&i| crate::task::task_id(i)).collect();
                ctx.say(&WorkerLine::Other(format!(
                    "left {}: claimed {MAX_CLAIMS} times and never done, so no worker takes it again (its worker died every time, or its work outlived every lease)",
                    named.join(", ")
                )));
                return Ok(());
            }
        }
    }
}

/// Claims the next item: the first not done whose lease (if any) has ended.
fn next(ctx: &mut Ctx<'_>, clock: LeaseClock) -> Result<Next, WorkerError> {
    let items = ctx.config.items;
    let me = ctx.run_id.clone();
    Ok(ctx.db.claim_next(&me, items, clock)?)
}

/// Commits `row`, its checkpoint and its item's done mark in one transaction, if the fence
/// holds; whether it did.
fn commit(ctx: &mut Ctx<'_>, row: &Row, claimed: (Lease, Fence)) -> Result<bool, WorkerError> {
    let me = ctx.run_id.clone();
    ctx.retrying(&row.task_id, |ctx| ctx.db.claim_commit(claimed, &me, row))
}
