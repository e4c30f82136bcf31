//! Where a night's rows go: SQLite files (the default, `sqlite`) or PostgreSQL (`postgres`:
//! `--warehouse postgres`, a private cluster reclaim starts and removes; `--warehouse
//! postgres://...`, a server someone else runs, where reclaim works only in schemas it creates
//! for the night). What both engines share is here: the errors (`error`), the facts a verdict
//! is derived from (`inspection`), a job's table as named (`source`) and the tables a strategy
//! needs (`schema`).
//!
//! The seam is a value, `Warehouse`: the command that opens the night's warehouse makes it,
//! the night's configuration carries it to every lane and worker, and each of its operations
//! (`backend::Backend`) is its engine's, in its engine's folder. Every lane keeps its SQLite
//! path as its name (heartbeat, folder, recordings); on PostgreSQL that path only names the
//! lane's schema (`Server::schema_for`).

pub mod backend;
pub mod batch;
pub mod claim;
pub mod error;
pub mod inspection;
pub mod postgres;
pub mod schema;
pub mod source;
pub mod sqlite;

pub use backend::{Said, ServerWatch, WriterSpec};
pub use batch::{Batch, Row};
pub use error::{KeysError, LOST, StoreError, TrialError, WarehouseError, is_lost_reason};
pub use inspection::{DuplicatedId, Inspection, Judged};
pub use postgres::{Conninfo, Night, Server, check_schema_name};
pub use schema::{SchemaFacts, SchemaNeeds};
pub use source::{Checkpoints, DEFAULT_KEY, DEFAULT_TABLE, RowSource};
pub use sqlite::SyncMode;

use std::ops::Deref;
use std::process::Command;
use std::str::FromStr;

use self::backend::Backend;

/// The flags that choose the warehouse (`run`, `prove`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WarehouseArgs {
    /// Where the rows go: sqlite (a file per lane), postgres (a private PostgreSQL cluster for
    /// the night, removed after it), or postgres://USER@HOST/DB (your server: reclaim works in
    /// schemas it creates, and drops them as --keep says)
    #[arg(long, value_name = "sqlite|postgres|URL", default_value = "sqlite", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<Spec>()))]
    pub warehouse: Spec,
    /// On PostgreSQL: the night's schema (each lane's is NAME or NAME_LANE); it must not exist
    #[arg(long, value_name = "NAME", value_parser = check_schema_name)]
    pub pg_schema: Option<String>,
    /// What becomes of the night's folder when it ends: always kept, kept when the night
    /// failed (the newest 20), or never [default: failed]; `--keep` alone is `always`, which
    /// with --warehouse postgres also keeps the private cluster's folder (stopped) and prints
    /// how to start it and look with psql
    #[arg(long, value_name = "always|failed|never", num_args = 0..=1, default_missing_value = "always", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::base::kept::Keep>()))]
    pub keep: Option<crate::base::kept::Keep>,
    /// On PostgreSQL: how long, in seconds, the workers wait for a server that went away (a
    /// restart, an outage) before they give up and the night ends; the night's clock waits too
    #[arg(long, value_name = "SECS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub server_wait: u64,
}

impl WarehouseArgs {
    /// These flags for a scenario whose file names its warehouse: a PostgreSQL one given on
    /// the command line wins; otherwise the file's (`warehouse = "postgres"`).
    #[must_use]
    pub fn for_scenario(&self, file: &Spec) -> Self {
        let mut args = self.clone();
        if !self.warehouse.is_postgres() {
            args.warehouse = file.clone();
        }
        args
    }

    /// What the dashboard's header and a recording say of the warehouse.
    #[must_use]
    pub fn describe(&self) -> String {
        match &self.warehouse {
            Spec::Sqlite => "sqlite".into(),
            Spec::Private => "postgres (private cluster)".into(),
            Spec::Server(url) => url.to_string(),
        }
    }

    /// Opens the night's warehouse as the flags say (`Night::open`); `None` for SQLite. The
    /// PostgreSQL-only flags without PostgreSQL are refused.
    pub fn open(&self) -> Result<Option<Night>, WarehouseError> {
        if !self.warehouse.is_postgres() {
            if self.pg_schema.is_some() {
                return Err(WarehouseError::Flags(
                    "--pg-schema applies to a PostgreSQL warehouse: add --warehouse postgres (or postgres://...)".into(),
                ));
            }
            return Ok(None);
        }
        // `--keep always` keeps the private cluster too; on a server the night's schemas go as
        // its folder goes (`Night::keep_with`).
        let keep_cluster = self.keep == Some(crate::base::kept::Keep::Always);
        let wait = std::time::Duration::from_secs(self.server_wait);
        Night::open(
            &self.warehouse,
            self.pg_schema.as_deref(),
            keep_cluster,
            wait,
        )
    }
}

/// The night is over: its folder settled as the policy says (`NightDir::settle`), with the
/// night's private PostgreSQL cluster, if any, kept beside it when the folder is kept (a failed
/// night's rows are what there is to look at) and removed with it by `reclaim kept`.
#[must_use]
pub fn settle(
    mut folder: crate::base::kept::NightDir,
    night: Option<&mut Night>,
    failed: bool,
    verdict: &str,
) -> crate::base::kept::Settled {
    if let Some(dir) = night.as_ref().and_then(|n| n.cluster_dir()) {
        folder.attach(dir);
    }
    let settled = folder.settle(failed, verdict, std::time::SystemTime::now());
    if let Some(night) = night {
        night.keep_with(&settled, verdict);
    }
    settled
}

/// Ends the night's PostgreSQL, if any (`Night::close`), and prints its closing lines (and
/// `note`) on `out`, or on stderr beside `--json`.
pub fn close(night: Option<Night>, json: bool, note: Option<&str>, out: &mut dyn std::io::Write) {
    let Some(night) = night else { return };
    let mut lines = night.close();
    lines.extend(note.map(str::to_string));
    for line in lines {
        if json {
            eprintln!("reclaim: {line}");
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// A map's `close`: on a server its nights' schemas are kept only with `--keep`
/// (`Night::decide`).
pub fn close_map(mut night: Option<Night>, keep: bool, json: bool, out: &mut dyn std::io::Write) {
    if let Some(night) = night.as_mut() {
        night.decide(keep);
    }
    close(night, json, None, out);
}

/// What `--warehouse` names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Spec {
    /// A SQLite file per lane (the default).
    #[default]
    Sqlite,
    /// A private PostgreSQL cluster, started for the night and removed after it.
    Private,
    /// An existing PostgreSQL server, by URL (`postgres://` or `postgresql://`).
    Server(Conninfo),
}

impl FromStr for Spec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "sqlite" => Ok(Self::Sqlite),
            "postgres" | "postgresql" => Ok(Self::Private),
            url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                let url = Conninfo::new(url);
                url.config()
                    .map_err(|e| format!("not a PostgreSQL URL reclaim can use: {e}"))?;
                Ok(Self::Server(url))
            }
            other => Err(format!(
                "{} is not a warehouse: give sqlite, postgres (a private cluster) or postgres://USER@HOST/DB",
                crate::base::text::escape_controls(other)
            )),
        }
    }
}

impl Spec {
    #[must_use]
    pub fn is_postgres(&self) -> bool {
        !matches!(self, Self::Sqlite)
    }
}

/// Where a night's rows go, as a value: carried in the night's configuration (each lane's,
/// `engine::LaneConfig`) and in each worker's (`worker::WorkerConfig`), handed to a child process
/// through its environment (`pass_to`) and read back once at its start (`from_env`). Its
/// operations are its engine's (`Backend`, through `Deref`): nothing above this folder asks
/// which engine it is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Warehouse {
    /// A SQLite file per lane (the default).
    #[default]
    Sqlite,
    /// A schema per lane on a PostgreSQL server.
    Postgres(Server),
}

impl Deref for Warehouse {
    type Target = dyn Backend;

    /// The one place an engine is chosen.
    fn deref(&self) -> &Self::Target {
        match self {
            Self::Sqlite => &sqlite::Sqlite,
            Self::Postgres(server) => server,
        }
    }
}

impl Warehouse {
    /// The warehouse of a night a command opened (`WarehouseArgs::open`): its server's, or
    /// SQLite files when it holds none.
    #[must_use]
    pub fn of(night: Option<&Night>) -> Self {
        night.map_or(Self::Sqlite, |night| Self::Postgres(night.server.clone()))
    }

    /// What restarting the night's server takes, when reclaim started it (a private cluster).
    #[must_use]
    pub fn restarter(&self) -> Option<&postgres::restart::Restarter> {
        match self {
            Self::Postgres(server) => server.restarter.as_ref(),
            Self::Sqlite => None,
        }
    }

    /// The warehouse a parent reclaim handed this process (`pass_to`): read once, where a
    /// child process starts (`reclaim worker`, `relay`, `inspect`).
    #[must_use]
    pub fn from_env() -> Self {
        Server::from_env().map_or(Self::Sqlite, Self::Postgres)
    }

    /// Hands this warehouse to a child process reclaim spawns (its worker, relay or
    /// `inspect`): its engine's variables, and none inherited from elsewhere.
    pub fn pass_to(&self, command: &mut Command) {
        for name in postgres::ENV {
            command.env_remove(name);
        }
        command.envs(self.child_env());
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    #[test]
    fn a_child_is_handed_its_warehouse_and_nothing_else() {
        let server = Server {
            conninfo: Conninfo::new("postgres://bob:secret@db.example/x"),
            prefix: "night".into(),
            wait: postgres::RESTART_WAIT,
            restarter: None,
        };
        let mut command = Command::new("true");
        Warehouse::Postgres(server.clone()).pass_to(&mut command);
        let handed: Vec<_> = command.get_envs().collect();
        assert!(handed.contains(&(
            OsStr::new(postgres::ENV_CONNINFO),
            Some(OsStr::new("postgres://bob:secret@db.example/x"))
        )));
        assert!(handed.contains(&(OsStr::new(postgres::ENV_PREFIX), Some(OsStr::new("night")))));
        // On SQLite a server the parent itself inherited is not passed on.
        let mut command = Command::new("true");
        Warehouse::Sqlite.pass_to(&mut command);
        let removed: Vec<_> = command.get_envs().collect();
        assert_eq!(removed.len(), 3);
        assert!(removed.iter().all(|(_, value)| value.is_none()));
        // A configuration printed for debugging never shows the password.
        let shown = format!("{:?}", Warehouse::Postgres(server));
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(Warehouse::default().describe(), None);
    }

    #[test]
    fn the_flag_names_three_warehouses_and_refuses_the_rest() {
        assert_eq!("sqlite".parse::<Spec>(), Ok(Spec::Sqlite));
        assert_eq!("postgres".parse::<Spec>(), Ok(Spec::Private));
        assert!(matches!(
            "postgres://u@localhost/db".parse::<Spec>(),
            Ok(Spec::Server(_))
        ));
        assert!("mysql".parse::<Spec>().is_err());
        assert!(check_schema_name("night_1").is_ok());
        assert!(check_schema_name("Night").is_err());
        assert!(check_schema_name("pg_x").is_err());
    }
}
