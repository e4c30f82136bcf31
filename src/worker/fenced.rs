//! `fenced`: `claim`, with a fencing token. Each claim of an item raises the item's lease
//! number, and the commit writes the row, its checkpoint and the done mark only if the item's
//! lease still holds the number this worker was given, checked in the row's own transaction. A
//! worker stopped past its lease's end (SIGSTOP, a long GC pause) wakes believing the item is its
//! own; its number is an old one, so its commit changes nothing and it says `lost`. The lease
//! says who should work on the item; the number decides who may write it.

use super::{Ctx, WorkerError};
use crate::warehouse::claim::Fence;

pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    // The one line that makes the difference: the lease's number is checked at the write.
    super::claim::work(ctx, |lease| Fence::Token(lease.number))
}
