//! `reclaim vendor` and `reclaim relay`: the third party and the outbox's courier, each a
//! process of its own (the supervisor spawns both for a night that needs them).

use std::io;

use crate::base::exit::OK;
use crate::cli::{RelayArgs, VendorArgs};
use crate::error::{Context as _, Error};
use crate::fake_vendor::{self, VendorModes};
use crate::worker::relay::{self, RelayConfig};

pub(super) fn run(args: &VendorArgs) -> Result<u8, Error> {
    crate::base::signals::install().context(|| "cannot install signal handlers".into())?;
    let modes = VendorModes {
        keys: args.keys,
        drop_responses: args.drop_responses,
        seed: args.seed,
        hold_at: args.hold_at,
    };
    let db = crate::base::paths::file_or_new(&args.db, "--db")?;
    // A new database with a log already beside it: SQLite would take that log for its own
    // (replay it into the new file, or empty it). Left alone and refused, as for a warehouse.
    if !db.exists() {
        for suffix in ["-wal", "-shm", "-journal"] {
            let companion = crate::base::paths::with_suffix(&db, suffix);
            if !matches!(
                crate::base::paths::look(&companion),
                Ok(crate::base::paths::PathKind::Missing)
            ) {
                return Err(Error::Refused(format!(
                    "{} already exists beside the new vendor database {}; reclaim leaves it untouched, give --db a new path",
                    crate::base::paths::shown(&companion),
                    crate::base::paths::shown(&db)
                )));
            }
        }
    }
    fake_vendor::serve(&db, modes)?;
    Ok(OK)
}

pub(super) fn relay(args: &RelayArgs) -> Result<u8, Error> {
    if let Some(crash) = args.crash_at {
        crate::task::check_in_queue("--crash-at", crash.task, args.items)?;
        if crash.point != crate::worker::CrashPoint::AfterRelaySend {
            return Err(Error::Refused(format!(
                "--crash-at {crash}: the relay's only crash point is after-relay-send (delivered, not marked sent)"
            )));
        }
    }
    // A device, a FIFO or a folder is refused at once (on /dev/null it waited out its 60 s).
    let db = crate::base::paths::file_or_new(&args.db, "--db")?;
    // Handed by the supervisor that spawned this relay, read once here.
    let warehouse = crate::warehouse::Warehouse::from_env();
    if warehouse.has_rows_and_no_outbox(&db) {
        return Err(Error::Refused(format!(
            "--db {}: its records have no outbox beside them (not a warehouse of --strategy outbox), so the relay has nothing to deliver; it is left as it was",
            crate::base::paths::shown(&db)
        )));
    }
    let config = RelayConfig {
        db,
        vendor: args.vendor,
        items: args.items,
        crash_at: args.crash_at,
        idle_limit: std::time::Duration::from_secs(args.idle_secs),
        warehouse,
    };
    relay::run(&config, &mut io::stdout().lock())?;
    Ok(OK)
}
