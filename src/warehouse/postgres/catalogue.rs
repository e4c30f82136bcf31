//! reclaim's nights on a server, as its catalogue lists them: each schema reclaim makes carries
//! its mark with the night's name and the moment it was made (`mark`), and the verdict when the
//! night kept it; a night holds an advisory lock for as long as it runs (`hold`), so a list can
//! say which nights are running and a drop never takes their schemas from under them.

use std::fmt::Write as _;

use postgres::Client;

use super::{Server, quote_ident};
use crate::warehouse::error::WarehouseError;

/// What reclaim writes on every schema it makes (its start: `mark` adds the night), and reads
/// back before it writes into one.
pub const MARK: &str = "made by reclaim for one night";

/// The first key of every night's advisory lock ("recl"); the second is the night's name hashed
/// by the server (`hashtext`).
const LOCK_KEY: i32 = 0x7265_636c;
/// At most this many schemas dropped in one transaction (each takes a few locks, and a server's
/// lock table is shared by every session).
const DROP_BATCH: usize = 40;

/// What reclaim writes on a schema it makes for the night `night` at `made` (seconds since the
/// epoch).
#[must_use]
pub fn mark(night: &str, made: u64) -> String {
    format!("{MARK}; night {night}; made {made}")
}

/// Whether a schema's comment is reclaim's mark (the bare mark of an older reclaim included).
#[must_use]
pub fn is_mark(comment: &str) -> bool {
    comment == MARK || comment.starts_with(&format!("{MARK}; "))
}

/// A schema's mark, read back.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Marked {
    pub night: Option<String>,
    pub made: Option<u64>,
    pub verdict: Option<String>,
}

/// Reads a mark written by `mark` (and `record_verdict`); `None` if it is not reclaim's.
#[must_use]
pub fn read_mark(comment: &str) -> Option<Marked> {
    if !is_mark(comment) {
        return None;
    }
    let rest = comment.strip_prefix(MARK).unwrap_or("");
    // The verdict is the last field and may hold anything, "; " included.
    let (fields, verdict) = match rest.split_once("; verdict ") {
        Some((fields, verdict)) => (fields, Some(verdict.to_string())),
        None => (rest, None),
    };
    let mut marked = Marked {
        verdict,
        ..Marked::default()
    };
    for field in fields.split("; ") {
        if let Some(night) = field.strip_prefix("night ") {
            marked.night = Some(night.to_string());
        } else if let Some(made) = field.strip_prefix("made ") {
            marked.made = made.parse().ok();
        }
    }
    Some(marked)
}

/// The night an older reclaim's schema belongs to, by its name alone: `reclaim_STAMP_PID` (and
/// its lanes' `reclaim_STAMP_PID_LANE`), with the moment its name was stamped, or a map's night
/// `NIGHT_map_NNNNN_...`, whose moment its name does not say.
fn night_by_name(schema: &str) -> Option<(String, Option<u64>)> {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = schema.strip_prefix("reclaim_") {
        let mut parts = rest.splitn(3, '_');
        if let (Some(stamp), Some(pid)) = (parts.next(), parts.next())
            && digits(stamp)
            && digits(pid)
        {
            return Some((format!("reclaim_{stamp}_{pid}"), stamp.parse().ok()));
        }
    }
    let (night, rest) = schema.split_once("_map_")?;
    let number = rest.get(..5)?;
    (digits(number) && rest[5..].starts_with('_') && !night.is_empty())
        .then(|| (night.to_string(), None))
}

/// Holds the night's advisory lock on its own connection for as long as the value lives: a
/// list says the night is running, and a drop refuses it. `None` if another session holds it
/// (a night of that name is running).
pub fn hold(server: &Server) -> Result<Option<Client>, WarehouseError> {
    let mut client = server.connect(None)?;
    let held: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock($1, hashtext($2))",
            &[&LOCK_KEY, &server.prefix],
        )
        .map_err(|e| WarehouseError::query("taking the night's lock", &e))?
        .get(0);
    Ok(held.then_some(client))
}

/// One of reclaim's nights on a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub night: String,
    pub schemas: Vec<String>,
    /// The tables' size on disk, indexes and TOAST included.
    pub bytes: u64,
    /// When its first schema was made (seconds since the epoch), if its mark or name says.
    pub made: Option<u64>,
    /// The verdict written when the night kept its schemas, if any.
    pub verdict: Option<String>,
    /// Made by a reclaim older than the night's name in the mark (which wrote no verdicts).
    pub older: bool,
    /// Whether a reclaim holds the night now.
    pub running: bool,
}

/// Every night of reclaim's on the server, oldest first (those of unknown age last): schemas
/// that carry reclaim's mark, grouped by the night their mark (or an older reclaim's name) says.
pub fn list(server: &Server) -> Result<Vec<Listed>, WarehouseError> {
    let mut client = server.connect(None)?;
    let rows = client
        .query(
            // Whether the night is running is read in the same statement, so a night that
            // ends while the list is read is not listed as one that ended without a verdict.
            "SELECT n.nspname::text, d.comment,
                    coalesce((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
                              WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'm')), 0)::bigint,
                    EXISTS (SELECT 1 FROM pg_locks l
                            WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                              AND l.database = (SELECT oid FROM pg_database
                                                WHERE datname = current_database())
                              AND l.classid::text::bigint = $2
                              AND l.objid::text::bigint =
                                  (hashtext(substring(d.comment FROM '; night ([a-z0-9_]+)'))::bigint
                                   & 4294967295))
             FROM pg_namespace n, LATERAL (SELECT obj_description(n.oid, 'pg_namespace') AS comment) d
             WHERE d.comment LIKE $1
             ORDER BY 1",
            &[&format!("{MARK}%"), &i64::from(LOCK_KEY)],
        )
        .map_err(|e| WarehouseError::query("listing reclaim's schemas", &e))?;
    let mut nights: Vec<Listed> = Vec::new();
    for row in &rows {
        let schema: String = row.get(0);
        let Some(marked) = row
            .get::<_, Option<String>>(1)
            .as_deref()
            .and_then(read_mark)
        else {
            continue;
        };
        let by_name = night_by_name(&schema);
        let older = marked.night.is_none();
        let night = marked
            .night
            .clone()
            .or_else(|| by_name.as_ref().map(|(n, _)| n.clone()))
            .unwrap_or_else(|| schema.clone());
        let made = marked.made.or(by_name.and_then(|(_, s)| s));
        let bytes = u64::try_from(row.get::<_, i64>(2)).unwrap_or(0);
        let running: bool = row.get(3);
        match nights.iter_mut().find(|n| n.night == night) {
            Some(listed) => {
                listed.schemas.push(schema);
                listed.bytes += bytes;
                listed.made = match (listed.made, made) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                listed.verdict = listed.verdict.take().or(marked.verdict);
                listed.older &= marked.night.is_none();
                listed.running |= running;
            }
            None => nights.push(Listed {
                night,
                schemas: vec![schema],
                bytes,
                made,
                verdict: marked.verdict,
                older,
                running,
            }),
        }
    }
    nights.sort_by_key(|n| (n.made.is_none(), n.made, n.night.clone()));
    Ok(nights)
}

/// Drops a night of the list (`reclaim schemas --drop`): holding its lock while it does, so a
/// night that started running since it was listed is refused, not dropped from under it.
pub fn drop_night(client: &mut Client, night: &Listed) -> Result<(), WarehouseError> {
    let free: bool = client
        .query_one(
            "SELECT pg_try_advisory_lock($1, hashtext($2))",
            &[&LOCK_KEY, &night.night],
        )
        .map_err(|e| WarehouseError::query("taking the night's lock", &e))?
        .get(0);
    if !free {
        return Err(WarehouseError::Query {
            what: format!("night {}", night.night),
            detail: "it is running now (a reclaim holds it); not dropped".into(),
        });
    }
    let dropped = refuse_dependents(client, &night.schemas)
        .and_then(|()| drop_schemas(client, &night.schemas));
    let _ = client.query_one(
        "SELECT pg_advisory_unlock($1, hashtext($2))",
        &[&LOCK_KEY, &night.night],
    );
    dropped
}

/// Of `schemas`, those whose mark names the night `night`: what a night may drop of what its
/// name matches (a schema someone made under that name during the night is not its own).
pub fn marked_for(
    client: &mut Client,
    night: &str,
    schemas: &[String],
) -> Result<Vec<String>, WarehouseError> {
    let rows = client
        .query(
            "SELECT nspname::text, obj_description(oid, 'pg_namespace') FROM pg_namespace
             WHERE nspname = ANY($1) ORDER BY 1",
            &[&schemas],
        )
        .map_err(|e| WarehouseError::query("reading the schemas' marks", &e))?;
    Ok(rows
        .iter()
        .filter(|row| {
            row.get::<_, Option<String>>(1)
                .as_deref()
                .and_then(read_mark)
                .is_some_and(|m| m.night.as_deref() == Some(night))
        })
        .map(|row| row.get(0))
        .collect())
}

/// Refuses to drop schemas that something outside them depends on (a view, a foreign key, a
/// function of someone's on a night's table): `DROP SCHEMA ... CASCADE` would drop it too.
pub fn refuse_dependents(client: &mut Client, schemas: &[String]) -> Result<(), WarehouseError> {
    let outside: i64 = client
        .query_one(
            "WITH ours AS (SELECT oid FROM pg_namespace WHERE nspname = ANY($1)),
                  inside AS (SELECT oid FROM pg_class WHERE relnamespace IN (SELECT oid FROM ours)
                             UNION ALL
                             SELECT oid FROM pg_type WHERE typnamespace IN (SELECT oid FROM ours))
             SELECT count(*) FROM pg_depend d
             WHERE d.refobjid IN (SELECT oid FROM inside) AND d.deptype = 'n'
               AND coalesce(CASE d.classid
                     WHEN 'pg_rewrite'::regclass THEN (SELECT c.relnamespace FROM pg_rewrite r
                          JOIN pg_class c ON c.oid = r.ev_class WHERE r.oid = d.objid)
                     WHEN 'pg_constraint'::regclass THEN (SELECT connamespace FROM pg_constraint
                          WHERE oid = d.objid)
                     WHEN 'pg_class'::regclass THEN (SELECT relnamespace FROM pg_class
                          WHERE oid = d.objid)
                     WHEN 'pg_proc'::regclass THEN (SELECT pronamespace FROM pg_proc
                          WHERE oid = d.objid)
                   END, 0) NOT IN (SELECT oid FROM ours)
               AND d.classid IN ('pg_rewrite'::regclass, 'pg_constraint'::regclass,
                                 'pg_class'::regclass, 'pg_proc'::regclass)",
            &[&schemas],
        )
        .map_err(|e| WarehouseError::query("looking for what depends on the night's tables", &e))?
        .get(0);
    if outside > 0 {
        return Err(WarehouseError::Query {
            what: "the night's schemas".into(),
            detail: format!(
                "{outside} object(s) outside them depend on their tables (a view, a foreign key): not dropped, so as not to drop those too"
            ),
        });
    }
    Ok(())
}

/// Drops schemas, tables and all, a few at a time (the caller holds the night's lock).
pub fn drop_schemas(client: &mut Client, schemas: &[String]) -> Result<(), WarehouseError> {
    for batch in schemas.chunks(DROP_BATCH) {
        let names: Vec<String> = batch.iter().map(|s| quote_ident(s)).collect();
        client
            .batch_execute(&format!(
                "BEGIN; DROP SCHEMA IF EXISTS {} CASCADE; COMMIT",
                names.join(", ")
            ))
            .map_err(|e| WarehouseError::query("dropping the night's schemas", &e))?;
    }
    Ok(())
}

/// Free text (a verdict) as an escape-string literal, read the same whatever the server's
/// `standard_conforming_strings`.
fn escaped_literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

/// Writes the night's verdict on the schemas it keeps (`mark` with `; verdict TEXT`).
pub fn record_verdict(
    client: &mut Client,
    schemas: &[String],
    night: &str,
    made: u64,
    verdict: &str,
) -> Result<(), WarehouseError> {
    let comment = format!("{}; verdict {verdict}", mark(night, made));
    let mut sql = String::from("BEGIN;");
    for schema in schemas {
        let _ = write!(
            sql,
            " COMMENT ON SCHEMA {} IS {};",
            quote_ident(schema),
            escaped_literal(&comment)
        );
    }
    sql.push_str(" COMMIT");
    client
        .batch_execute(&sql)
        .map_err(|e| WarehouseError::query("writing the verdict on the night's schemas", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_reads_back_with_its_night_its_moment_and_any_verdict() {
        let plain = mark("reclaim_1764900000_42", 1_764_900_000);
        assert_eq!(
            read_mark(&plain),
            Some(Marked {
                night: Some("reclaim_1764900000_42".into()),
                made: Some(1_764_900_000),
                verdict: None,
            })
        );
        let judged = format!("{plain}; verdict FAIL: naive: DATA WRONG; 2 runs");
        assert_eq!(
            read_mark(&judged).and_then(|m| m.verdict),
            Some("FAIL: naive: DATA WRONG; 2 runs".into())
        );
        assert_eq!(read_mark(MARK), Some(Marked::default()));
        assert_eq!(read_mark("made by someone else"), None);
        assert_eq!(read_mark(&format!("{MARK}x")), None);
    }

    #[test]
    fn an_older_reclaims_schema_is_placed_by_its_name() {
        assert_eq!(
            night_by_name("reclaim_1764900000_42_night1_1_naive"),
            Some(("reclaim_1764900000_42".into(), Some(1_764_900_000)))
        );
        assert_eq!(
            night_by_name("reclaim_1764900000_42"),
            Some(("reclaim_1764900000_42".into(), Some(1_764_900_000)))
        );
        assert_eq!(
            night_by_name("b46_map_00797_guarded_task_049_after_row_commit"),
            Some(("b46".into(), None))
        );
        assert_eq!(night_by_name("b46_map_7_guarded"), None);
        assert_eq!(night_by_name("reclaim_x_42"), None);
        assert_eq!(night_by_name("nightly"), None);
    }
}
