//! `reclaim worker`: one worker process, as the supervisor spawns it (or a user by hand).

use std::io;
use std::path::Path;

use crate::base::exit::OK;
use crate::base::paths;
use crate::cli::WorkerArgs;
use crate::error::Error;
use crate::heartbeat;
use crate::warehouse::postgres::{RESTART_WAIT, catalogue, check_server, claim};
use crate::warehouse::{Server, Spec, StoreError, Warehouse};
use crate::worker::{self, WorkerConfig};

/// The night a worker joins on a server from any host (`--warehouse URL --night NAME`): one
/// line and exit 2 unless the night is there, running, of one lane (its schema is NAME), and
/// this worker's strategy shares its queue. Checked before anything is written.
fn joined(args: &WorkerArgs) -> Result<Option<Server>, Error> {
    let Some(night) = &args.night else {
        return Ok(None);
    };
    let Some(Spec::Server(url)) = &args.warehouse else {
        return Err(Error::Refused(
            "--night joins a night on a PostgreSQL server: give --warehouse postgres://USER@HOST/DB (a private cluster is its own reclaim's)".into(),
        ));
    };
    if !args.strategy.claims_items() {
        return Err(Error::Refused(format!(
            "--night: {} workers do not share a queue; workers on other hosts join a claim or fenced night",
            args.strategy.name()
        )));
    }
    let server = Server {
        conninfo: url.clone(),
        prefix: night.clone(),
        wait: RESTART_WAIT,
        restarter: None,
    };
    check_server(&server).map_err(StoreError::from)?;
    let nights = catalogue::list(&server).map_err(StoreError::from)?;
    let start = format!(
        "`reclaim run --strategy claim --delay-ms 0 --warehouse URL --pg-schema {night}` starts one"
    );
    match nights.iter().find(|n| &n.night == night) {
        None => Err(Error::Refused(format!(
            "no night named {night} on {}: {start}",
            server.target()
        ))),
        Some(found) if !found.running => Err(Error::Refused(format!(
            "the night {night} on {} is not running (`reclaim schemas` lists it): join a night while it runs",
            server.target()
        ))),
        Some(found) if !found.schemas.contains(night) => Err(Error::Refused(format!(
            "the night {night} on {} has lanes of its own ({}): join a night of one lane, as {start}",
            server.target(),
            found.schemas.join(", ")
        ))),
        Some(_) => match claim::leases_in_server_clock(&server, night) {
            Ok(Some(true)) => Ok(Some(server)),
            Ok(Some(false)) => Err(Error::Refused(format!(
                "the night {night} is paced: its leases are in the night's own time, which a worker outside it cannot keep; join a night run at full speed ({start})"
            ))),
            Ok(None) | Err(_) => Err(Error::Refused(format!(
                "the night {night} has no claim made yet (its leases say which clock they keep): join it once its workers have started"
            ))),
        },
    }
}

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
    let joined = joined(args)?;
    // Both paths resolved once, before anything is opened: the heartbeat is renamed onto its
    // path after every commit, so it must never be the warehouse or one of its companions.
    let db = paths::file_or_new(&args.db_or_night(), "--db")?;
    let heartbeat = match (&args.heartbeat, &args.night) {
        (Some(path), _) => paths::file_or_new(path, "--heartbeat")?,
        (None, Some(night)) => paths::file_or_new(
            Path::new(&format!("{night}.heartbeat")),
            "the heartbeat file",
        )?,
        (None, None) => paths::file_or_new(&heartbeat::default_path(&db), "the heartbeat file")?,
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
        // The night joined (`--night`), else the one handed by the supervisor that spawned
        // this worker (none: SQLite), read once here.
        warehouse: joined.map_or_else(Warehouse::from_env, Warehouse::Postgres),
        ..args.to_config()
    };
    let stdout = io::stdout();
    let mut out = stdout.lock();
    worker::run(&config, &mut out)?;
    Ok(OK)
}
