//! `reclaim vendor` and `reclaim relay`: the third party and the outbox's courier, each a
//! process of its own (the supervisor spawns both for a night that needs them).

use std::io;

use crate::cli::{RelayArgs, VendorArgs};
use crate::error::{Context as _, Error};
use crate::exit::OK;
use crate::vendor::{self, VendorModes};
use crate::worker::relay::{self, RelayConfig};

pub(super) fn run(args: &VendorArgs) -> Result<u8, Error> {
    crate::signals::install().context(|| "cannot install signal handlers".into())?;
    let modes = VendorModes {
        keys: args.keys,
        drop_responses: args.drop_responses,
        seed: args.seed,
        hold_at: args.hold_at,
    };
    let db = crate::paths::file_or_new(&args.db, "--db")?;
    vendor::serve(&db, modes, &mut io::stdout().lock())?;
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
    let config = RelayConfig {
        db: args.db.clone(),
        vendor: args.vendor,
        items: args.items,
        crash_at: args.crash_at,
        idle_limit: std::time::Duration::from_secs(args.idle_secs),
    };
    relay::run(&config, &mut io::stdout().lock())?;
    Ok(OK)
}
