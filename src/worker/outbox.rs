//! `outbox`: guarded, and the message leaves through an outbox. Each row commits with its
//! checkpoint and an outbox entry in one transaction, and nothing is sent inside it; the relay
//! (`reclaim relay`, `worker::relay`) delivers the pending entries with the row's idempotency
//! key and marks them sent. A kill anywhere leaves either the row with its entry or neither, and
//! a kill in the relay leaves an entry delivered but unmarked, which the next relay delivers
//! again: whether the customer sees it twice is now the vendor's key store's decision.

use super::{Ctx, WorkerError, guarded};

/// The outbox is made beside the rows when the warehouse is opened for this strategy
/// (`WriterSpec::outbox`), and each row's entry is written in its transaction
/// (`batch::write_in`); the rest is guarded's loop.
pub(super) fn run(ctx: &mut Ctx<'_>) -> Result<(), WorkerError> {
    guarded::run(ctx)
}
