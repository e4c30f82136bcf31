//! `reclaim worker`: one worker process, as the supervisor spawns it (or a user by hand).

use std::io;

use crate::base::exit::OK;
use crate::base::paths;
use crate::cli::WorkerArgs;
use crate::error::Error;
use crate::heartbeat;
use crate::worker::{self, WorkerConfig};

pub(super) fn run(args: &WorkerArgs) -> Result<u8, Error> {
    if let Some(crash) = args.crash_at {
        crate::task::check_in_queue("--crash-at", crash.task, args.items)?;
        if crash.point == crate::worker::CrashPoint::AfterRelaySend {
            return Err(Error::Refused(format!(
                "--crash-at {crash} is the relay's crash point; give it to `reclaim relay`"
            )));
        }
        if !crash
            .point
            .reached_by(args.strategy, args.side_effect.is_some())
        {
            return Err(Error::Refused(format!(
                "--crash-at {crash}: nothing is sent without --side-effect email (or --strategy outbox)"
            )));
        }
    }
    if let Some(long) = args.long.long_item {
        crate::task::check_in_queue("--long-item", long.task, args.items)?;
    }
    // Both paths resolved once, before anything is opened: the heartbeat is renamed onto its
    // path after every commit, so it must never be the warehouse or one of its companions.
    let db = paths::file_or_new(&args.db, "--db")?;
    let heartbeat = match &args.heartbeat {
        Some(path) => paths::file_or_new(path, "--heartbeat")?,
        None => paths::file_or_new(&heartbeat::default_path(&db), "the heartbeat file")?,
    };
    paths::refuse_companion(&heartbeat, "--heartbeat", &db, Some(".heartbeat"))?;
    if !heartbeat::replaceable(&heartbeat).unwrap_or(false) {
        return Err(Error::Refused(format!(
            "--heartbeat {} is not a heartbeat file (a worker replaces it after every commit); give a new path or one a worker wrote before",
            paths::shown(&heartbeat)
        )));
    }
    let config = WorkerConfig {
        db,
        heartbeat,
        // Handed by the supervisor that spawned this worker (none: SQLite), read once here.
        warehouse: crate::warehouse::Warehouse::from_env(),
        ..args.to_config()
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    worker::run(&config, &mut out)?;
    Ok(OK)
}
