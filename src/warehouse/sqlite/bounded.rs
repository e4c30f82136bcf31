//! The queries reclaim runs on a user's behalf (`--count-sql`, `--setup-sql` and its trial on
//! an empty database): each has a time limit and stops on a caught signal, through SQLite's
//! progress handler, and the trial can reach no file (no ATTACH), so a query that never ends
//! or one aimed at another database costs one line, not a hung night or someone's data.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};

use crate::warehouse::error::QueryError;

/// How long `--setup-sql` may take on the new database, and its trial in memory.
pub const SETUP_LIMIT: Duration = Duration::from_secs(30);
pub const TRIAL_LIMIT: Duration = Duration::from_secs(5);

/// SQLite instructions between two looks at the clock and the signals.
const LOOK_EVERY: i32 = 10_000;

const RUNNING: u8 = 0;
const TOO_LONG: u8 = 1;
const SIGNALLED: u8 = 2;

/// Runs `query` on `conn`, interrupted after `limit` or when a signal is caught; an interrupted
/// query names `what` (the flag and its SQL), any other error is SQLite's own.
pub fn limited<T>(
    conn: &Connection,
    what: &str,
    limit: Duration,
    query: impl FnOnce() -> rusqlite::Result<T>,
) -> Result<T, QueryError> {
    let deadline = Instant::now() + limit;
    let why = Arc::new(AtomicU8::new(RUNNING));
    let seen = Arc::clone(&why);
    conn.progress_handler(
        LOOK_EVERY,
        Some(move || {
            let stop = if crate::base::signals::received().is_some() {
                SIGNALLED
            } else if Instant::now() > deadline {
                TOO_LONG
            } else {
                return false;
            };
            seen.store(stop, Ordering::Relaxed);
            true
        }),
    );
    let result = query();
    conn.progress_handler(0, None::<fn() -> bool>);
    let what = crate::base::text::escape_controls(&crate::base::text::shorten(what, 80));
    result.map_err(|e| match why.load(Ordering::Relaxed) {
        TOO_LONG => QueryError::TooLong { what, limit },
        SIGNALLED => QueryError::Signalled { what },
        _ => QueryError::Sqlite(e),
    })
}

/// Confines `conn` to its own database: ATTACH is refused (by the authorizer and by a limit of
/// no attached database), so SQL run on it cannot open, change or create another file.
pub fn confine(conn: &Connection) {
    conn.authorizer(Some(|context: AuthContext<'_>| match context.action {
        AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
        _ => Authorization::Allow,
    }));
    let _ = conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_ATTACHED, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_query_is_stopped_at_its_limit_with_its_name() {
        let conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        let sql =
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n) SELECT max(i) FROM n";
        let err = limited(
            &conn,
            "--count-sql \"WITH RECURSIVE\"",
            Duration::ZERO,
            || conn.query_row(sql, [], |r| r.get::<_, i64>(0)),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(
            err.starts_with("--count-sql \"WITH RECURSIVE\" was stopped after 0 s"),
            "{err}"
        );
    }

    #[test]
    fn a_confined_connection_cannot_attach_another_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let other = dir.path().join("other.db");
        let conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        confine(&conn);
        let sql = format!("ATTACH '{}' AS v; CREATE TABLE v.t(x);", other.display());
        assert!(conn.execute_batch(&sql).is_err());
        assert!(!other.exists());
        let vacuum = format!("VACUUM INTO '{}'", other.display());
        let _ = conn.execute_batch(&vacuum);
        assert!(!other.exists(), "VACUUM INTO wrote a file");
    }
}
