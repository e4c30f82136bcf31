//! `--compare` in the commands: what refuses it, what `run` says before its nights, and `run`'s
//! night judged against the undisturbed night (`harness::compare::Oracle`, which `prove` and
//! `map --exec` share). The comparison joins the night's account.

use std::io::Write;
use std::path::Path;

use crate::cli::CompareArgs;
use crate::engine::EngineConfig;
use crate::error::Error;
use crate::harness::compare::{Oracle, Scope};

/// What `run --compare` says before its nights.
pub(super) const HEADER: &str = "compare      the undisturbed night first: the job run to its end twice without a fault (night-reference-1, -2 in the night's folder); its tables' final state is the reference";

/// What `args` compares, as the oracle takes it.
#[must_use]
pub(super) fn scope(args: &CompareArgs) -> Scope {
    Scope {
        tables: args.tables.clone(),
        ignored: args.ignored(),
    }
}

/// `--compare` where it cannot work: without `--exec` (reclaim's own workers are judged by
/// their rows), or with `--db` (the undisturbed nights need a folder of reclaim's own).
pub(super) fn refuse(args: &CompareArgs, exec: bool, db: Option<&Path>) -> Result<(), Error> {
    if args.compare && !exec {
        return Err(Error::Refused(
            "--compare judges your --exec job by its tables; reclaim's own strategies are judged by their rows".into(),
        ));
    }
    if args.compare && db.is_some() {
        return Err(Error::Refused(
            "--compare runs the undisturbed nights in the night's own folder; drop --db (the folder's path is printed, and kept with --keep)".into(),
        ));
    }
    Ok(())
}

/// The night driven, its timeline printed; with `--compare`, the undisturbed night first
/// (twice, in the night's folder `dir`), and the tables on `db` compared with it at the end.
pub(super) fn drive_run(
    args: &crate::cli::RunArgs,
    config: EngineConfig,
    (dir, db): (Option<&Path>, &Path),
    record: Option<(&Path, String)>,
    out: &mut dyn Write,
) -> Result<crate::harness::RunReport, Error> {
    if args.compare.compare && !args.json {
        let _ = writeln!(out, "{HEADER}");
    }
    let oracle = (dir.filter(|_| args.compare.compare))
        .map(|dir| Oracle::undisturbed(&config, dir, scope(&args.compare)))
        .transpose()?;
    let mut report = crate::harness::drive_recorded(config, record, |line| {
        if !args.json {
            let _ = writeln!(out, "{line}");
        }
    })?;
    if let Some(oracle) = &oracle {
        report.state = Some(oracle.judge(db)?);
    }
    Ok(report)
}
