//! `reclaim schemas`: reclaim's nights on a PostgreSQL server, listed with their schemas, size,
//! age and verdict, and dropped on request (`warehouse::postgres::catalogue` does the work).

use std::io::Write;
use std::time::SystemTime;

use crate::base::kept::{age, size};
use crate::base::text::{count, escape_controls};
use crate::cli::SchemasArgs;
use crate::error::Error;
use crate::warehouse::postgres::catalogue::{self, Listed};
use crate::warehouse::postgres::check_server;
use crate::warehouse::{Server, Spec, StoreError};

/// Runs `reclaim schemas`.
pub(super) fn run(args: &SchemasArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let Spec::Server(url) = &args.warehouse else {
        return Err(Error::Refused(
            "reclaim schemas lists a server's: give --warehouse postgres://USER@HOST/DB (the private clusters reclaim kept are listed by `reclaim kept`)".into(),
        ));
    };
    let server = Server {
        conninfo: url.clone(),
        prefix: String::new(),
        wait: crate::warehouse::postgres::RESTART_WAIT,
        restarter: None,
    };
    check_server(&server).map_err(StoreError::from)?;
    let nights = catalogue::list(&server).map_err(StoreError::from)?;
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    if !args.drop.is_empty() || args.older_than.is_some() {
        return drop(args, &server, &nights, now, out);
    }
    if args.json {
        let value = serde_json::json!({
            "server": server.target(),
            "nights": nights.iter().map(|n| serde_json::json!({
                "night": n.night,
                "schemas": n.schemas,
                "bytes": n.bytes,
                "made": n.made,
                "running": n.running,
                "verdict": n.verdict,
                "older_reclaim": n.older,
            })).collect::<Vec<_>>(),
        });
        let _ = writeln!(out, "{value}");
        return Ok(crate::base::exit::OK);
    }
    let schemas: usize = nights.iter().map(|n| n.schemas.len()).sum();
    let _ = writeln!(
        out,
        "reclaim schemas  {}  {}, {}, {}",
        server.target(),
        count(nights.len() as u64, "night", "nights"),
        count(schemas as u64, "schema", "schemas"),
        size(nights.iter().map(|n| n.bytes).sum())
    );
    if nights.is_empty() {
        return Ok(crate::base::exit::OK);
    }
    let width = nights
        .iter()
        .map(|n| n.night.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let _ = writeln!(
        out,
        "{:<width$}  {:>7}  {:>9}  {:>4}  VERDICT",
        "NIGHT", "SCHEMAS", "SIZE", "AGE"
    );
    for night in &nights {
        let _ = writeln!(out, "{}", row(night, now, width));
    }
    let _ = writeln!(
        out,
        "drop one with `reclaim schemas --warehouse URL --drop NIGHT`, the old ones with `--older-than 7d`"
    );
    Ok(crate::base::exit::OK)
}

/// One night's line of the list.
fn row(night: &Listed, now: u64, width: usize) -> String {
    let made = night
        .made
        .map_or_else(|| "-".into(), |made| age(now.saturating_sub(made)));
    let verdict = if night.running {
        "running now".to_string()
    } else if let Some(verdict) = &night.verdict {
        escape_controls(verdict)
    } else if night.older {
        "none (made by an older reclaim, which wrote none)".into()
    } else {
        "none written (kept without one, or its reclaim ended before it could write one)".into()
    };
    format!(
        "{:<width$}  {:>7}  {:>9}  {made:>4}  {verdict}",
        escape_controls(&night.night),
        night.schemas.len(),
        size(night.bytes),
    )
}

/// `--drop NIGHT...` and `--older-than AGE`: every night named must be listed and not running,
/// or nothing is dropped (exit 2); then each is dropped and said on a line.
fn drop(
    args: &SchemasArgs,
    server: &Server,
    nights: &[Listed],
    now: u64,
    out: &mut dyn Write,
) -> Result<u8, Error> {
    let mut chosen: Vec<&Listed> = Vec::new();
    for name in &args.drop {
        let Some(night) = nights.iter().find(|n| n.night == *name) else {
            return Err(Error::Refused(format!(
                "no night of reclaim's is named {} on {}: `reclaim schemas --warehouse URL` lists them; nothing was dropped",
                escape_controls(name),
                server.target()
            )));
        };
        if night.running {
            return Err(Error::Refused(format!(
                "night {} is running now (a reclaim holds it); nothing was dropped",
                escape_controls(name)
            )));
        }
        if !chosen.contains(&night) {
            chosen.push(night);
        }
    }
    let (mut unknown, mut running) = (0, 0);
    if let Some(older) = args.older_than {
        for night in nights {
            match night.made {
                Some(made) if now.saturating_sub(made) > older => {
                    if night.running {
                        running += 1;
                    } else if !chosen.contains(&night) {
                        chosen.push(night);
                    }
                }
                None if !args.drop.contains(&night.night) => unknown += 1,
                _ => {}
            }
        }
    }
    let mut client = server.connect(None).map_err(StoreError::from)?;
    let mut freed = 0;
    for night in &chosen {
        catalogue::drop_night(&mut client, night).map_err(StoreError::from)?;
        freed += night.bytes;
        let _ = writeln!(
            out,
            "dropped  {}  ({}, {})",
            escape_controls(&night.night),
            count(night.schemas.len() as u64, "schema", "schemas"),
            size(night.bytes)
        );
    }
    let _ = writeln!(
        out,
        "reclaim schemas: {} dropped, {} freed",
        count(chosen.len() as u64, "night", "nights"),
        size(freed)
    );
    if running > 0 {
        let _ = writeln!(
            out,
            "{} that old left: a reclaim holds {} now",
            count(running, "running night", "running nights"),
            if running == 1 { "it" } else { "them" }
        );
    }
    if unknown > 0 {
        let _ = writeln!(
            out,
            "{} of unknown age left (not made by reclaim's newer marks, nor named by a stamp): drop them by name",
            count(unknown, "night", "nights")
        );
    }
    Ok(crate::base::exit::OK)
}
