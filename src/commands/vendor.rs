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
    fake_vendor::serve(&db, modes, &mut io::stdout().lock())?;
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
    if has_rows_and_no_outbox(&db) {
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
    };
    relay::run(&config, &mut io::stdout().lock())?;
    Ok(OK)
}

/// Whether `db` is a warehouse with rows and no outbox table, read without changing any file
/// (no `-wal` or `-shm` left beside it). The outbox strategy makes its table before its first
/// row, so a night still starting is never taken for one; anything unreadable is left to the
/// relay's own loop.
fn has_rows_and_no_outbox(db: &std::path::Path) -> bool {
    if !db.exists() {
        return false;
    }
    let Ok(snapshot) = crate::warehouse::sqlite::open_snapshot(db) else {
        return false;
    };
    let outbox = crate::warehouse::sqlite::table_exists(&snapshot.conn, "outbox").unwrap_or(true);
    let rows: i64 = snapshot
        .conn
        .query_row(
            "SELECT count(*) FROM (SELECT 1 FROM records LIMIT 1)",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    !outbox && rows > 0
}
