//! `reclaim worker`: one worker process, as the supervisor spawns it (or a user by hand).

use std::io;

use crate::cli::WorkerArgs;
use crate::exit::OK;
use crate::heartbeat;
use crate::paths;
use crate::worker::{self, WorkerConfig};

pub(super) fn run(args: &WorkerArgs) -> Result<u8, String> {
    if let Some(crash) = args.crash_at {
        crate::task::check_in_queue("--crash-at", crash.task, args.items)?;
    }
    // Both paths resolved once, before anything is opened: the heartbeat is renamed onto its
    // path after every commit, so it must never be the warehouse or one of its companions.
    let db = paths::file_or_new(&args.db, "--db").map_err(|e| e.to_string())?;
    let heartbeat = match &args.heartbeat {
        Some(path) => paths::file_or_new(path, "--heartbeat").map_err(|e| e.to_string())?,
        None => paths::file_or_new(&heartbeat::default_path(&db), "the heartbeat file")
            .map_err(|e| e.to_string())?,
    };
    paths::refuse_companion(&heartbeat, "--heartbeat", &db, Some(".heartbeat"))
        .map_err(|e| e.to_string())?;
    let config = WorkerConfig {
        db,
        heartbeat,
        ..args.to_config()
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    worker::run(&config, &mut out).map_err(|e| e.to_string())?;
    Ok(OK)
}
