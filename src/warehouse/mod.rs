//! Where a night's rows go: SQLite files (the default) or PostgreSQL (`--warehouse postgres`, a
//! private cluster reclaim starts and removes; `--warehouse postgres://...`, a server someone
//! else runs, where reclaim works only in schemas it creates for the night).
//!
//! The seam is one process-wide setting, `active()`: the command that opens the warehouse sets
//! it before the night starts, every process it spawns inherits it through two variables
//! (`pass_to`), and the worker, the observer and the verdict each ask it once which engine they
//! speak. Every lane keeps its SQLite path as its name (heartbeat, folder, recordings); on
//! PostgreSQL that path only names the lane's schema (`Server::schema_for`).

pub mod cluster;
pub mod follow;
mod night;
pub mod pg;
pub mod pg_claim;
pub mod pg_inspect;
pub mod pg_job;
pub mod session;
pub mod watch;

pub use night::{Night, list_schemas};
pub use session::{
    LOST, application_name, application_name_of, connect_with, is_lost, is_lost_line,
};

use std::path::Path;
use std::process::Command;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

use thiserror::Error;

/// The oldest server reclaim speaks to: `pg_current_snapshot()` (the observer's in-flight
/// check) arrived in PostgreSQL 13.
pub const MIN_SERVER_VERSION: i32 = 130_000;
/// How long a connection attempt may take, to any server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(4);
/// The longest any one statement may run (`statement_timeout`).
pub const STATEMENT_TIMEOUT_MS: u32 = 10_000;
/// The longest a statement waits for another connection's lock (`lock_timeout`), as SQLite's
/// busy timeout bounds it.
pub const LOCK_TIMEOUT_MS: u32 = 5_000;
/// How long a worker waits for a server that is restarting (`Server::connect_patiently`).
pub const RESTART_WAIT: Duration = Duration::from_secs(30);

/// The variable that carries the connection string to reclaim's own child processes.
pub const ENV_CONNINFO: &str = "RECLAIM_PG_CONNINFO";
/// The variable that carries the night's schema prefix.
pub const ENV_PREFIX: &str = "RECLAIM_PG_PREFIX";

/// The flags that choose the warehouse (`run`, `prove`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WarehouseArgs {
    /// Where the rows go: sqlite (a file per lane), postgres (a private PostgreSQL cluster for
    /// the night, removed after it), or postgres://USER@HOST/DB (your server: reclaim works in
    /// schemas it creates and never drops)
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
            Spec::Server(url) => target_of(url),
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
        // `--keep always` keeps the private cluster too; on a server reclaim never drops what
        // it made anyway.
        let keep_cluster = self.keep == Some(crate::base::kept::Keep::Always);
        Night::open(&self.warehouse, self.pg_schema.as_deref(), keep_cluster)
    }
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

/// What `--warehouse` names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Spec {
    /// A SQLite file per lane (the default).
    #[default]
    Sqlite,
    /// A private PostgreSQL cluster, started for the night and removed after it.
    Private,
    /// An existing PostgreSQL server, by URL (`postgres://` or `postgresql://`).
    Server(String),
}

impl FromStr for Spec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "sqlite" => Ok(Self::Sqlite),
            "postgres" | "postgresql" => Ok(Self::Private),
            url if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                url.parse::<postgres::Config>()
                    .map_err(|e| format!("not a PostgreSQL URL reclaim can use: {e}"))?;
                Ok(Self::Server(url.to_string()))
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

#[derive(Debug, Error)]
pub enum WarehouseError {
    #[error("PostgreSQL at {target}: {detail}")]
    Connect { target: String, detail: String },
    #[error(
        "PostgreSQL at {target} is version {found}; reclaim needs 13 or later (pg_current_snapshot)"
    )]
    TooOld { target: String, found: String },
    #[error(
        "schema {schema} already exists on {target}{holding}; reclaim works only in schemas it creates for the night, so it leaves it untouched: give another --pg-schema"
    )]
    SchemaExists {
        target: String,
        schema: String,
        holding: &'static str,
    },
    #[error("PostgreSQL ({what}): {detail}")]
    Query { what: String, detail: String },
    /// A job's table without the column it was said to have (`flag`): the same on every read.
    #[error("PostgreSQL: table {table} has no column {key} ({flag}); its columns are {columns}")]
    NoColumn {
        table: String,
        key: String,
        flag: &'static str,
        columns: String,
    },
    /// The session ended under a statement: the server restarted or went away. Its text
    /// starts with `LOST`, which the engine reads in a worker's last line (`is_lost_line`).
    #[error("{LOST} ({what}): {detail}")]
    Lost { what: String, detail: String },
    #[error("the private PostgreSQL cluster: {0}")]
    Cluster(String),
    #[error("{0}")]
    Flags(String),
    #[error(
        "{task}: PostgreSQL refused the row ({detail}); this warehouse has a constraint the {strategy} strategy does not expect"
    )]
    Refused {
        task: String,
        strategy: &'static str,
        detail: String,
    },
}

impl WarehouseError {
    /// A failed statement, with what reclaim was doing; the server's own message when it sent
    /// one (the driver's `Display` says only "db error").
    #[must_use]
    pub fn query(what: &str, error: &postgres::Error) -> Self {
        let (what, detail) = (what.to_string(), describe(error));
        if is_lost(error) {
            Self::Lost { what, detail }
        } else {
            Self::Query { what, detail }
        }
    }
}

/// The server's message when there is one, else the driver's.
#[must_use]
pub fn describe(error: &postgres::Error) -> String {
    let text = error.as_db_error().map_or_else(
        || {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(inner) = source {
                text = format!("{text}: {inner}");
                source = inner.source();
            }
            text
        },
        |db| db.message().to_string(),
    );
    crate::base::text::escape_controls(&text)
}

/// A PostgreSQL server a night writes to: how to reach it, and the prefix of the schemas this
/// night creates there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// A URL or `key=value` connection string (libpq's forms; the `postgres` crate parses both).
    pub conninfo: String,
    /// Every lane's schema starts with this.
    pub prefix: String,
}

static ACTIVE: OnceLock<Option<Server>> = OnceLock::new();

/// The PostgreSQL server of this night, if the night runs on one: set by the command that
/// opened it (`activate`), or inherited from the process that spawned this one.
pub fn active() -> Option<&'static Server> {
    ACTIVE
        .get_or_init(|| {
            let conninfo = std::env::var(ENV_CONNINFO).ok()?;
            let prefix = std::env::var(ENV_PREFIX).ok()?;
            Some(Server { conninfo, prefix })
        })
        .as_ref()
}

/// Makes `server` this process's warehouse; refused once the engine has been asked already.
pub fn activate(server: Server) -> Result<(), WarehouseError> {
    ACTIVE
        .set(Some(server))
        .map_err(|_| WarehouseError::Cluster("the warehouse was chosen twice".into()))
}

/// What the dashboard's header and a recording say of this process's warehouse: `None` on
/// SQLite; the private cluster (its connection string is `key=value`) or the server's URL
/// without its password.
#[must_use]
pub fn describe_active() -> Option<String> {
    active().map(|server| {
        if server.conninfo.contains("://") {
            server.target()
        } else {
            "postgres (private cluster)".to_string()
        }
    })
}

/// Hands the night's server to a child process reclaim spawns (its worker, relay or job).
pub fn pass_to(command: &mut Command) {
    if let Some(server) = active() {
        command
            .env(ENV_CONNINFO, &server.conninfo)
            .env(ENV_PREFIX, &server.prefix);
    }
}

impl Server {
    /// The schema of the lane whose SQLite path would be `db`: the night's prefix, then the
    /// lane's file name (`night1-1-naive.db` -> `_night1_1_naive`); a lane in a night's folder
    /// of its own (`night2-3-exec/`, `night01-kill-test/`, `night-00042/`: an `--exec` job's,
    /// whatever its `--db-name`) is named by that folder; a lane named only `warehouse.db`
    /// elsewhere is the night's single lane.
    #[must_use]
    pub fn schema_for(&self, db: &Path) -> String {
        let stem = db.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let folder = db
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let own_folder = folder
            .strip_prefix("night")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '-'));
        let lane = if own_folder {
            folder
        } else if stem != "warehouse" {
            stem
        } else {
            ""
        };
        let mut schema = self.prefix.clone();
        if !lane.is_empty() {
            schema.push('_');
            schema.extend(lane.chars().map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            }));
        }
        // PostgreSQL truncates identifiers at 63 bytes; cut here so the name reported is the
        // name the server uses (every character is ASCII by now).
        schema.truncate(63);
        schema
    }

    /// What errors call this server: the URL without its password, or the socket's folder.
    #[must_use]
    pub fn target(&self) -> String {
        target_of(&self.conninfo)
    }
}

/// A connection string as errors may show it: a URL without its password, a `key=value` string
/// without `password=...`.
#[must_use]
pub fn target_of(conninfo: &str) -> String {
    let shown = if let Some((scheme, rest)) = conninfo.split_once("://") {
        match rest.split_once('@') {
            Some((user, host)) => {
                let user = user.split_once(':').map_or(user, |(u, _)| u);
                format!("{scheme}://{user}@{host}")
            }
            None => conninfo.to_string(),
        }
    } else {
        conninfo
            .split_whitespace()
            .filter(|kv| !kv.starts_with("password="))
            .collect::<Vec<_>>()
            .join(" ")
    };
    crate::base::text::escape_controls(&shown)
}

/// An identifier quoted for SQL (`"a""b"`).
#[must_use]
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Checks a server before anything is created on it: reachable with these credentials, recent
/// enough. Returns its version as it names itself.
pub fn check_server(server: &Server) -> Result<String, WarehouseError> {
    let mut client = server.connect(None)?;
    let row = client
        .query_one(
            "SELECT current_setting('server_version_num')::int, current_setting('server_version')",
            &[],
        )
        .map_err(|e| WarehouseError::query("reading the server's version", &e))?;
    let version: String = row.get(1);
    refuse_old(&server.target(), row.get(0), &version)?;
    Ok(version)
}

/// A server older than `MIN_SERVER_VERSION` (by its `server_version_num`), refused by name.
fn refuse_old(target: &str, num: i32, version: &str) -> Result<(), WarehouseError> {
    if num < MIN_SERVER_VERSION {
        return Err(WarehouseError::TooOld {
            target: target.to_string(),
            found: crate::base::text::escape_controls(version),
        });
    }
    Ok(())
}

/// Checks a `--pg-schema` name: a plain lower-case identifier, so it needs no quoting in psql.
pub fn check_schema_name(name: &str) -> Result<String, String> {
    let ok = !name.is_empty()
        && name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with("pg_");
    if ok {
        Ok(name.to_string())
    } else {
        Err(format!(
            "{} is not a schema name reclaim uses: lower-case letters, digits and _, at most 40, not starting with pg_",
            crate::base::text::escape_controls(name)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_schema_comes_from_its_file_or_its_night_folder() {
        let server = Server {
            conninfo: String::new(),
            prefix: "night".into(),
        };
        assert_eq!(
            server.schema_for(Path::new("/tmp/x/night1-1-naive.db")),
            "night_night1_1_naive"
        );
        assert_eq!(server.schema_for(Path::new("/tmp/x/warehouse.db")), "night");
        assert_eq!(
            server.schema_for(Path::new("/tmp/x/night2-3-exec/warehouse.db")),
            "night_night2_3_exec"
        );
        // Every night of prove or map --exec in a schema of its own, whatever the file's name.
        assert_eq!(
            server.schema_for(Path::new("/tmp/x/night01-kill-test/orders.db")),
            "night_night01_kill_test"
        );
        assert_eq!(
            server.schema_for(Path::new("/tmp/x/night-00042/warehouse.db")),
            "night_night_00042"
        );
        assert_eq!(
            server.schema_for(Path::new("/srv/nightly/warehouse.db")),
            "night"
        );
    }

    #[test]
    fn many_schemas_are_named_by_the_first_few_and_their_number() {
        let names = |n: usize| (0..n).map(|i| format!("s{i}")).collect::<Vec<_>>();
        assert_eq!(list_schemas(&[]), "none");
        assert_eq!(list_schemas(&names(2)), "s0, s1");
        assert_eq!(
            list_schemas(&names(9)),
            "s0, s1, s2, s3, s4, s5, ... (9 in all)"
        );
    }

    #[test]
    fn a_password_never_reaches_a_message() {
        assert_eq!(
            target_of("postgres://bob:secret@db.example/x"),
            "postgres://bob@db.example/x"
        );
        assert_eq!(
            target_of("host=/tmp/s user=bob password=secret"),
            "host=/tmp/s user=bob"
        );
    }

    #[test]
    fn a_server_older_than_13_is_refused_by_its_version_number() {
        // No such server is installed here: the check is tested on the numbers servers send.
        let err = refuse_old("db", 120_015, "12.15 (Debian 12.15-1)")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "PostgreSQL at db is version 12.15 (Debian 12.15-1); reclaim needs 13 or later (pg_current_snapshot)"
            )
        );
        assert!(refuse_old("db", 96_024, "9.6.24").is_err());
        assert!(refuse_old("db", 130_000, "13.0").is_ok());
        assert!(refuse_old("db", 150_004, "15.4").is_ok());
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
