//! Crash points in someone else's job: the contract, language-neutral, with no library.
//!
//! A job announces reaching a point in its unit of work by printing one line on its standard
//! output, `reclaim-point NAME KEY` (`reclaim-point after-row-commit ord-00042`). reclaim counts
//! the points announced (so a windows line can say where each kill landed) and, when the night
//! plans a crash there (`--crash-at KEY:NAME`), SIGKILLs the job's group the moment it reads the
//! line: the kill comes from outside, as the host's would. The job is told the plan in
//! `RECLAIM_CRASH_AT=KEY:NAME` on the attempt that is to die, and waits at that point (a
//! helper's few lines: `examples/reclaim_point.py`, `examples/reclaim_point.sh`), so the kill
//! lands exactly there and nowhere later.

use std::fmt;

/// The first word of a point's line.
pub const WORD: &str = "reclaim-point";
/// The environment variable naming the point to die at (`KEY:NAME`), on that attempt only.
pub const CRASH_ENV: &str = "RECLAIM_CRASH_AT";
/// A point's name is short: letters, digits and `-`, `_`, `.`.
pub const MAX_NAME: usize = 40;
/// At most this many distinct point names are counted in a night (a job printing a new name
/// per item would otherwise grow the report without bound).
pub const MAX_NAMES: usize = 32;

/// A point reached: its name, and the key of the unit of work it was reached in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    pub name: String,
    pub key: String,
}

/// A `--crash-at KEY:POINT` (or a scenario's `crash_at`) that names no point a job can announce;
/// each holds the text as given, control characters escaped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("--crash-at {0} is not KEY:POINT (ord-00042:after-row-commit)")]
    NotKeyPoint(String),
    #[error(
        "--crash-at {0}: a point's name is letters, digits, '-', '_' and '.', at most {MAX_NAME} of them"
    )]
    BadName(String),
}

/// Where to die: a point in the unit of work of a key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CrashPlan {
    pub key: String,
    pub point: String,
}

impl CrashPlan {
    /// `KEY:NAME` (the last `:` splits, so a key may hold one); the name checked, the key's
    /// place in the queue checked by the caller.
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        let shown = || crate::base::text::escape_controls(text);
        let (key, point) = text
            .rsplit_once(':')
            .ok_or_else(|| PlanError::NotKeyPoint(shown()))?;
        if !is_name(point) {
            return Err(PlanError::BadName(shown()));
        }
        Ok(Self {
            key: key.to_string(),
            point: point.to_string(),
        })
    }

    /// Whether `point` is where this plan dies.
    #[must_use]
    pub fn is(&self, point: &Point) -> bool {
        self.key == point.key && self.point == point.name
    }
}

impl fmt::Display for CrashPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}",
            crate::base::text::escape_controls(&self.key),
            self.point
        )
    }
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A point's line, or `None` for any other line (which stays the job's own output).
#[must_use]
pub fn parse(line: &str) -> Option<Point> {
    let rest = line.strip_prefix(WORD)?.strip_prefix(' ')?;
    let (name, key) = rest.split_once(' ')?;
    let key = key.trim_end_matches('\r');
    (is_name(name) && !key.is_empty() && key.len() <= crate::queue::MAX_KEY_BYTES).then(|| Point {
        name: name.to_string(),
        key: key.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_line_names_its_point_and_key() {
        assert_eq!(
            parse("reclaim-point after-row-commit ord-00042"),
            Some(Point {
                name: "after-row-commit".into(),
                key: "ord-00042".into()
            })
        );
        assert_eq!(
            parse("reclaim-point after-send key with spaces").map(|p| p.key),
            Some("key with spaces".into())
        );
        for other in [
            "reclaim-point",
            "reclaim-point after-send",
            "reclaim-pointafter x",
            "reclaim-point bad/name x",
            "done status=ok",
            " reclaim-point a b",
        ] {
            assert_eq!(parse(other), None, "{other}");
        }
    }

    #[test]
    fn a_crash_plan_is_key_colon_point() {
        let plan = CrashPlan::parse("ord-00042:after-row-commit").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (plan.key.as_str(), plan.point.as_str()),
            ("ord-00042", "after-row-commit")
        );
        assert_eq!(
            CrashPlan::parse("a:b:c").map(|p| (p.key, p.point)),
            Ok(("a:b".into(), "c".into()))
        );
        assert!(CrashPlan::parse("no-colon").is_err());
        assert!(CrashPlan::parse("k:bad name").is_err());
        assert!(plan.is(&Point {
            name: "after-row-commit".into(),
            key: "ord-00042".into()
        }));
    }
}
