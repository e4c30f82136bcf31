//! The warehouse on PostgreSQL: a server reclaim checks (or a private cluster it starts,
//! `cluster`), one schema per lane claimed before the night (`schema::claim_schema`), the
//! workers' sessions (`session`), the observer's reads (`follow`, `job`), the verdict's
//! (`inspect`), and the night's look at the server itself (`watch`).

pub mod answers;
mod backend;
pub mod catalogue;
pub mod claim;
pub mod cluster;
mod cluster_guard;
pub mod conninfo;
mod cursor;
mod follow;
mod inspect;
mod job;
mod night;
mod outbox;
pub mod restart;
mod schema;
mod server_events;
mod session;
mod state;
pub mod tls;
mod writer;

pub use conninfo::Conninfo;
pub use night::{Night, list_schemas};
pub use session::{application_name, application_name_of, connect_with};

use std::path::Path;
use std::time::Duration;

use super::error::WarehouseError;

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
/// How long a worker waits for a server that went away (`Server::connect_patiently`), unless
/// `--server-wait` says otherwise.
pub const RESTART_WAIT: Duration = Duration::from_secs(30);

/// The variable that carries the connection string to reclaim's own child processes.
pub const ENV_CONNINFO: &str = "RECLAIM_PG_CONNINFO";
/// The variable that carries the night's schema prefix.
pub const ENV_PREFIX: &str = "RECLAIM_PG_PREFIX";
/// The variable that carries the wait for a server that went away, in seconds.
pub const ENV_WAIT: &str = "RECLAIM_PG_WAIT";

/// A PostgreSQL server a night writes to: how to reach it, and the prefix of the schemas this
/// night creates there.
/// `Debug` shows the connection string as `Conninfo` does: without its password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// A URL or `key=value` connection string (libpq's forms), shown without its password.
    pub conninfo: Conninfo,
    /// Every lane's schema starts with this.
    pub prefix: String,
    /// How long a worker waits for the server when it went away (`--server-wait`), and the
    /// night's clock with it.
    pub wait: Duration,
    /// What restarting it takes, when reclaim started it (a private cluster): the host's
    /// server restart (`--restart-server-at-rows`, a scenario's `host.restart_server_at_rows`).
    /// Never handed to a child process.
    pub restarter: Option<restart::Restarter>,
}

impl Server {
    /// Whether a proxy of reclaim's can stand between the workers and this server and read
    /// their answers: not where the connection string insists on TLS.
    #[must_use]
    pub fn answers_readable(&self) -> bool {
        !self.conninfo.insists_on_tls()
    }
}

/// The variables that hand a night's server to reclaim's own child processes.
pub const ENV: [&str; 3] = [ENV_CONNINFO, ENV_PREFIX, ENV_WAIT];

impl Server {
    /// The server a parent reclaim handed this process (`Backend::pass_to`), if any.
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let wait = std::env::var(ENV_WAIT)
            .ok()
            .and_then(|secs| secs.parse::<u64>().ok())
            .map_or(RESTART_WAIT, Duration::from_secs);
        Some(Self {
            conninfo: Conninfo::new(std::env::var(ENV_CONNINFO).ok()?),
            prefix: std::env::var(ENV_PREFIX).ok()?,
            wait,
            restarter: None,
        })
    }

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

    /// What errors call this server: its connection string, the password as `***`.
    #[must_use]
    pub fn target(&self) -> String {
        self.conninfo.to_string()
    }
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
            conninfo: Conninfo::default(),
            prefix: "night".into(),
            wait: RESTART_WAIT,
            restarter: None,
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
}
