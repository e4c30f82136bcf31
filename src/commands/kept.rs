//! `reclaim kept`: the nights reclaim kept, listed with their size, age and verdict, and
//! removed on request; and the glue every night-making command uses to make its folder and
//! say what became of it (`base::kept` does the work).

use std::io::Write;
use std::time::SystemTime;

use crate::base::kept::{self, Keep, Listed, NightDir};
use crate::base::text::escape_controls;
use crate::cli::KeptArgs;
use crate::error::Error;

/// A new night folder for `command` (`reclaim run`) running `what`, under `policy`.
pub(super) fn night(command: &str, what: &str, policy: Option<Keep>) -> Result<NightDir, Error> {
    Ok(NightDir::create(
        command,
        what,
        policy.unwrap_or_default(),
        SystemTime::now(),
    )?)
}

/// The night ended in `error`: its folder settled as a failed night's (kept unless `never`),
/// and what became of it said on the error's own line.
pub(super) fn ended_in(night: Option<NightDir>, error: Error) -> Error {
    let Some(night) = night else {
        return error;
    };
    let verdict = format!(
        "ended in an error: {}",
        crate::base::text::shorten(&escape_controls(&error.to_string()), 120)
    );
    let settled = night.settle(true, &verdict, SystemTime::now());
    let folder = if settled.kept {
        format!("{} {}", shown(&settled.path), settled.said())
    } else {
        settled.said()
    };
    Error::NightEnded {
        error: Box::new(error),
        folder,
    }
}

/// `--keep` beside `--db`: the warehouse is the user's, never removed, so a policy for it
/// would say something untrue.
pub(super) fn refuse_with_db(keep: Option<Keep>, db: bool) -> Result<(), Error> {
    match keep {
        Some(policy) if db => Err(Error::Refused(format!(
            "--keep {policy} decides what becomes of the folder reclaim makes for a night; with --db the warehouse is yours and always stays: drop --keep or --db"
        ))),
        _ => Ok(()),
    }
}

/// A path on a line: control characters escaped.
pub(super) fn shown(path: &std::path::Path) -> String {
    escape_controls(&path.display().to_string())
}

/// Runs `reclaim kept`.
pub(super) fn run(args: &KeptArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let home = kept::home();
    if args.clean || !args.remove.is_empty() {
        return remove(args, &home, out);
    }
    let nights = kept::list(&home);
    let now = unix_now();
    if args.json {
        let value = serde_json::json!({
            "home": home.display().to_string(),
            "bound": kept::BOUND,
            "nights": nights.iter().map(|n| serde_json::json!({
                "name": n.name,
                "path": n.path.display().to_string(),
                "bytes": n.bytes,
                "in_use": n.in_use,
                "reclaims": n.marker.is_some(),
                "command": n.marker.as_ref().map(|m| m.command.clone()),
                "what": n.marker.as_ref().map(|m| m.what.clone()),
                "started": n.marker.as_ref().map(|m| m.started),
                "policy": n.marker.as_ref().map(|m| m.policy),
                "failed": n.marker.as_ref().and_then(|m| m.failed),
                "verdict": n.verdict(),
            })).collect::<Vec<_>>(),
        });
        let _ = writeln!(out, "{value}");
        return Ok(crate::base::exit::OK);
    }
    let total: u64 = nights.iter().map(|n| n.bytes).sum();
    let _ = writeln!(
        out,
        "reclaim kept  {}  {}, {}  (--keep failed keeps the newest {}; --keep always until removed)",
        shown(&home),
        crate::base::text::count(nights.len() as u64, "night", "nights"),
        kept::size(total),
        kept::BOUND
    );
    if nights.is_empty() {
        return Ok(crate::base::exit::OK);
    }
    let width = nights
        .iter()
        .map(|n| n.name.chars().count())
        .max()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "{:<width$}  {:>9}  {:>4}  {:<6}  VERDICT",
        "NIGHT", "SIZE", "AGE", "KEEP"
    );
    for night in &nights {
        let _ = writeln!(out, "{}", row(night, now, width));
    }
    let _ = writeln!(
        out,
        "remove one with `reclaim kept --remove NAME`, all with `reclaim kept --clean`"
    );
    Ok(crate::base::exit::OK)
}

/// One night's line of the list.
fn row(night: &Listed, now: u64, width: usize) -> String {
    let (age, policy) = night.marker.as_ref().map_or(("-".into(), "-"), |m| {
        (kept::age(now.saturating_sub(m.started)), m.policy.name())
    });
    format!(
        "{:<width$}  {:>9}  {age:>4}  {policy:<6}  {}",
        escape_controls(&night.name),
        kept::size(night.bytes),
        escape_controls(&night.verdict())
    )
}

/// `--remove NAME...` and `--clean`: each night removed said on a line; one that cannot be
/// (not reclaim's, in use) said too, and the exit code is 2.
fn remove(args: &KeptArgs, home: &std::path::Path, out: &mut dyn Write) -> Result<u8, Error> {
    let names: Vec<String> = if args.clean {
        // Only reclaim's own, and only finished: a running night is left to its reclaim.
        kept::list(home)
            .into_iter()
            .filter(|n| n.marker.is_some() && !n.in_use)
            .map(|n| n.name)
            .collect()
    } else {
        args.remove.clone()
    };
    let mut refused = Vec::new();
    let mut freed = 0;
    for name in &names {
        let bytes = kept::list(home)
            .iter()
            .find(|n| n.name == *name)
            .map_or(0, |n| n.bytes);
        match kept::remove(home, name) {
            Ok(path) => {
                freed += bytes;
                let _ = writeln!(out, "removed  {}", shown(&path));
            }
            Err(e) => refused.push(e.to_string()),
        }
    }
    kept::remove_if_empty(home);
    if args.clean {
        let _ = writeln!(
            out,
            "reclaim kept --clean: {} removed, {} freed",
            crate::base::text::count(
                names.len().saturating_sub(refused.len()) as u64,
                "night",
                "nights"
            ),
            kept::size(freed)
        );
    }
    match refused.as_slice() {
        [] => Ok(crate::base::exit::OK),
        [one] => Err(Error::Refused(one.clone())),
        [first, rest @ ..] => Err(Error::Refused(format!(
            "{first} (and {} more)",
            crate::base::text::count(rest.len() as u64, "other", "others")
        ))),
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
