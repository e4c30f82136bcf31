//! What `reclaim map --exec` prints once its nights are in: one JSON object, a CSV line per
//! cell, or the bands of marks and the summary; `run` in `map_exec.rs` fills the `Legend`.

use std::io::Write;

use serde::Serialize;

use crate::cli::MapArgs;
use crate::error::Error;
use crate::map::Tally;
use crate::map::exec::{CellState, ExecCell, ExecKill};

/// `--json`: one object. The keys are stable.
#[derive(Debug, Serialize)]
struct ExecMapReport<'a> {
    command: &'a str,
    queue: String,
    /// The points the job announced on its undisturbed night (empty: kills at row counts).
    points: &'a [String],
    nights: usize,
    cells: &'a [ExecCell],
    all_right: bool,
    /// Cells whose kill never fired: never right; failures only with `--strict`.
    not_tested: usize,
    /// Wrong cells whose kill never fired: their night went wrong without it.
    wrong_unfired: usize,
    /// What the map saw go wrong that its cells may not show (a checkpoint committed before its
    /// row), as the text's `wrong` line says it: a failure with or without `--strict`.
    seen_wrong: &'a [String],
    /// What the map left untested, in sentences (`judgement` has them with their kinds).
    untested: Vec<String>,
    /// `pass`, `fail` or `untested`: the one rule on the whole map.
    outcome: String,
    judgement: &'a crate::verdict::account::Judgement,
    /// The undisturbed night's verdict: a job already wrong without a kill is wrong everywhere.
    undisturbed: String,
    /// `--compare`: the undisturbed night the cells' tables were compared with, in a line.
    #[serde(skip_serializing_if = "Option::is_none")]
    reference: Option<&'a str>,
    elapsed_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    kept: Option<String>,
}

/// What the printed map says beside its cells.
pub(super) struct Legend<'a> {
    /// `--compare`: the undisturbed night the cells' tables were compared with, in a line.
    pub(super) reference: Option<&'a str>,
    pub(super) command: &'a str,
    pub(super) queue: String,
    pub(super) points: &'a [String],
    pub(super) undisturbed: &'a str,
    /// What the map saw go wrong beside its cells (`checkpoint_first_seen`).
    pub(super) seen_wrong: &'a [String],
    /// The one rule on the whole map.
    pub(super) judged: &'a crate::verdict::account::Judgement,
    pub(super) elapsed: f64,
    pub(super) kept: Option<String>,
    pub(super) first: u64,
    /// Nights that never ran: the user left the screen before the map finished.
    pub(super) left: Option<usize>,
    /// The map's bands: a point each (or `rows`), and `message` with a vendor.
    pub(super) bands: &'a [String],
    /// The cells were shown on the screen: only the summary is printed after it.
    pub(super) interactive: bool,
}

/// The finished map on stdout: JSON, CSV, or the bands and a summary.
pub(super) fn print(
    args: &MapArgs,
    facts: &Legend<'_>,
    cells: &[ExecCell],
    all_right: bool,
    out: &mut dyn Write,
) -> Result<(), Error> {
    if args.json {
        let report = ExecMapReport {
            command: facts.command,
            queue: facts.queue.clone(),
            points: facts.points,
            nights: cells.len(),
            cells,
            all_right,
            not_tested: Tally::of(cells.iter().map(ExecCell::tested)).untested,
            wrong_unfired: wrong_unfired(cells),
            seen_wrong: facts.seen_wrong,
            untested: (facts.judged.untested.iter())
                .map(|e| e.said.clone())
                .collect(),
            outcome: facts.judged.outcome.mark().to_lowercase(),
            judgement: facts.judged,
            undisturbed: facts.undisturbed.to_string(),
            reference: facts.reference,
            elapsed_s: (facts.elapsed * 1000.0).round() / 1000.0,
            kept: facts.kept.clone(),
        };
        let text = serde_json::to_string(&report).map_err(Error::json("the map"))?;
        let _ = writeln!(out, "{text}");
    } else if args.csv {
        print_csv(cells, facts.reference.is_some(), out);
    } else {
        let _ = writeln!(
            out,
            "reclaim map --exec {:?}\nqueue        {}\nundisturbed  {}",
            facts.command, facts.queue, facts.undisturbed
        );
        let _ = writeln!(
            out,
            "points       {}",
            if facts.points.is_empty() {
                "none announced: a kill after every row count instead (see examples/reclaim_point.py)".to_string()
            } else {
                facts.points.join(", ")
            }
        );
        if let Some(reference) = facts.reference {
            let _ = writeln!(
                out,
                "compare      each night's tables against the undisturbed night's (run twice): {reference}"
            );
        }
        if facts
            .bands
            .iter()
            .any(|b| b == crate::map::exec::MESSAGE_BAND)
        {
            let _ = writeln!(
                out,
                "messages     a kill at each message too (--vendor): the vendor holds message N unanswered and the host kills the job there, after its send"
            );
        }
        let Tally { wrong, untested } = Tally::of(cells.iter().map(ExecCell::tested));
        for why in facts.seen_wrong {
            let _ = writeln!(out, "wrong        {why}");
        }
        if !facts.interactive {
            print_bands(
                facts.bands,
                cells,
                (facts.first, facts.reference.is_some()),
                out,
            );
        }
        let unfired = match wrong_unfired(cells) {
            0 => String::new(),
            n => format!(
                " ({n} of them without their kill, which never fired: those nights went wrong undisturbed)"
            ),
        };
        let _ = writeln!(
            out,
            "reclaim map: {} nights in {:.1} s; {wrong} cells wrong{unfired}{}",
            cells.len(),
            facts.elapsed,
            crate::map::not_tested_note(untested, "kill")
        );
        if let Some(left) = facts.left {
            let _ = writeln!(
                out,
                "  the map was left before it finished: {left} nights never ran"
            );
        }
        if let Some(dir) = &facts.kept {
            let why = crate::map::kept_why(std::path::Path::new(dir), args.keeps_all());
            let _ = writeln!(out, "databases kept in {dir} ({why})");
        }
        let _ = writeln!(out, "outcome: {}", facts.judged.line());
    }
    Ok(())
}

/// `--csv`: a line per cell; `--compare` (`state`) adds the cell's state as a last column.
fn print_csv(cells: &[ExecCell], state: bool, out: &mut dyn Write) {
    let _ = writeln!(
        out,
        "band,at,rows,distinct,duplicated_task_ids,missing,derived_status,killed{}",
        if state { ",state" } else { "" }
    );
    for c in cells {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{}",
            crate::export::csv::field(&c.band),
            crate::export::csv::field(&c.at),
            c.rows,
            c.distinct,
            c.duplicated_task_ids,
            c.missing,
            c.derived_status.label(),
            c.killed
        );
        let said = match &c.state {
            _ if !state => String::new(),
            None => ",".into(),
            Some(CellState::Same) => ",same".into(),
            Some(CellState::Differs { tables, .. }) => {
                format!(
                    ",{}",
                    crate::export::csv::field(&format!("differs: {tables}"))
                )
            }
        };
        let _ = writeln!(out, "{said}");
    }
}

/// One band a point (and one of messages): a mark a night, 50 to a line, each line headed by
/// its first column.
fn print_bands(
    bands: &[String],
    cells: &[ExecCell],
    (first, compared): (u64, bool),
    out: &mut dyn Write,
) {
    let _ = writeln!(
        out,
        "· right  1-9 keys duplicated (# 10+)  ! missing  {}? wrong or the kill never fired",
        if compared { "≠ state differs  " } else { "" }
    );
    for band in bands {
        let mine: Vec<&ExecCell> = cells.iter().filter(|c| &c.band == band).collect();
        let right = mine.iter().filter(|c| c.is_right()).count();
        let _ = writeln!(out, "{band}: {right} of {} right", mine.len());
        for chunk in mine.chunks(50) {
            // Numbered as the cells are: a key's index, or a row count from 1.
            let start = chunk.first().map_or(first, |c| match c.kill {
                ExecKill::Rows(rows) | ExecKill::Message(rows) => rows,
                ExecKill::Point { index, .. } => index,
            });
            let marks: String = chunk.iter().map(|c| c.mark()).collect();
            let _ = writeln!(out, "  {start:>6}  {marks}");
        }
        for cell in mine.iter().filter(|c| !c.is_right()).take(3) {
            let _ = writeln!(
                out,
                "          {}: {} rows, {} distinct, {} duplicated, {} missing: {}",
                cell.at,
                cell.rows,
                cell.distinct,
                cell.duplicated_task_ids,
                cell.missing,
                cell.verdict()
            );
            if let Some(CellState::Differs { said, .. }) = &cell.state {
                let _ = writeln!(out, "            {said}");
            }
        }
        let late: Vec<String> = (mine.iter())
            .filter_map(|c| match (&c.kill, c.landed_at_rows) {
                (ExecKill::Rows(rows), Some(landed)) if landed != *rows => {
                    Some(format!("{rows}->{landed}"))
                }
                _ => None,
            })
            .collect();
        if !late.is_empty() {
            let _ = writeln!(
                out,
                "          {} landed past their planned row count (planned->landed): {}{}",
                crate::base::text::count(late.len() as u64, "kill", "kills"),
                late.iter().take(20).cloned().collect::<Vec<_>>().join(", "),
                if late.len() > 20 { ", ..." } else { "" }
            );
        }
    }
}

/// The wrong cells whose kill never fired: wrong, but not because of their kill.
fn wrong_unfired(cells: &[ExecCell]) -> usize {
    (cells.iter())
        .filter(|c| !c.killed && c.tested() == crate::map::Tested::Wrong)
        .count()
}
