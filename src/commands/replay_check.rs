//! `reclaim replay --check`: a recording is evidence, not only a movie. Each lane's verdict is
//! derived again from the recorded history, by the same rule as from the rows, and set beside
//! the verdict the recording's own end line gives.

use std::io::Write;

use serde::Serialize;

use crate::base::exit;
use crate::cli::ReplayArgs;
use crate::error::Error;
use crate::record::Recording;
use crate::verdict::Status;

/// One lane's verdict, re-derived from a recording.
#[derive(Debug, Serialize)]
pub struct CheckedLane {
    pub name: String,
    pub strategy: String,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    pub claimed_status: String,
    /// From the recorded history (the last sample's figures).
    pub derived_status: Status,
    pub derived: String,
    /// What the recording's own end line says, if it has one.
    pub recorded_derived_status: Option<Status>,
    /// Set when the end line's verdict and the history's differ: the check then fails, since
    /// one of the two is wrong and reclaim cannot tell which.
    pub contradiction: Option<String>,
    pub completed: bool,
    /// Messages at the vendor in the last sample, for a lane whose items left the database.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messages: Option<crate::fake_vendor::Counts>,
    /// The verdict `derived_status` and `derived` spell.
    #[serde(skip)]
    pub verdict: crate::verdict::Derived,
}

/// `reclaim replay --check`: the verdict re-derived from the recorded history; 0 when every lane
/// holds every task exactly once and completed, 1 otherwise.
pub fn run(args: &ReplayArgs, out: &mut dyn Write) -> Result<u8, Error> {
    let recording = Recording::load(&args.file)?;
    let shown = crate::base::text::escape_controls(&args.file.display().to_string());
    if let Some(refused) = recording.vendor_unrecorded(&shown) {
        return Err(refused.into());
    }
    if recording.truncated {
        eprintln!(
            "reclaim: warning: {}: the last line was cut short; checking the rest",
            args.file.display()
        );
    }
    let lanes = checked_lanes(&recording);
    let ok = !lanes.is_empty()
        && lanes.iter().all(|l| {
            l.completed
                && l.verdict.is_ok()
                && l.contradiction.is_none()
                && l.messages.is_none_or(|m| m.holds())
        });
    if args.json {
        let value = serde_json::json!({
            "file": args.file,
            "scenario": recording.header.scenario,
            "seed": recording.header.seed,
            "truncated": recording.truncated,
            "ended": recording.end.is_some(),
            "lanes": lanes,
            "ok": ok,
        });
        let _ = writeln!(out, "{value}");
    } else {
        let h = &recording.header;
        let _ = writeln!(
            out,
            "replay check  {}  (reclaim {}, {}, seed {})",
            args.file.display(),
            h.reclaim,
            h.scenario,
            h.seed
        );
        if recording.end.is_none() {
            let _ = writeln!(
                out,
                "the recording stops before the night ended: the job never completed on record"
            );
        }
        for lane in &lanes {
            if let Some(contradiction) = &lane.contradiction {
                let _ = writeln!(out, "{}: {contradiction}: the check fails", lane.name);
            }
            if recording.end.is_some() && !lane.completed {
                let _ = writeln!(
                    out,
                    "{}: the job never completed (the supervisor gave up)",
                    lane.name
                );
            }
            let _ = writeln!(
                out,
                "{:<10}  {}  rows={} duplicated_task_ids={}",
                lane.name,
                crate::verdict::claim_line(Some(&lane.claimed_status), lane.verdict),
                lane.rows,
                lane.duplicated_task_ids
            );
            if let Some(m) = &lane.messages {
                let judged = crate::verdict::messages_verdict(m.duplicated, m.missing, m.outside)
                    .unwrap_or_else(|| "messages ok".into());
                let _ = writeln!(
                    out,
                    "{:<10}  {judged}  received={} duplicated={} missing={}",
                    "", m.received, m.duplicated, m.missing
                );
            }
        }
    }
    Ok(if ok { exit::OK } else { exit::DATA_WRONG })
}

/// Each lane's verdict, re-derived from the latest recorded sample, beside the recording's own.
fn checked_lanes(recording: &Recording) -> Vec<CheckedLane> {
    // INVARIANT: `Recording::load` refuses samples out of time order, so the last is the latest.
    let last = recording.samples.last();
    let mut lanes = Vec::new();
    for (i, info) in recording.header.lanes.iter().enumerate() {
        let snap = last.and_then(|s| s.lanes.get(i));
        let recorded = recording.end.as_ref().and_then(|e| e.lanes.get(i));
        let completed = recorded.is_some_and(|e| e.completed);
        let derived = crate::record::sample_verdict(snap, info.items);
        let derived = if completed {
            derived.once_ended()
        } else {
            derived
        };
        let rows = snap.map_or(0, |s| s.rows);
        let distinct = snap.map_or(0, |s| s.distinct);
        let duplicated = snap.map_or(0, |s| s.duplicated);
        let missing = info.items.saturating_sub(distinct);
        let contradiction = recorded
            .filter(|end| end.derived_status != derived.status())
            .map(|end| {
                format!(
                    "the recording's own verdict says {}; its history says {}",
                    end.derived_status,
                    derived.label()
                )
            });
        lanes.push(CheckedLane {
            name: info.name.clone(),
            strategy: info.strategy.to_string(),
            items: info.items,
            rows,
            distinct,
            duplicated_task_ids: duplicated,
            missing,
            claimed_status: snap
                .and_then(|s| s.claimed.as_ref())
                .map_or_else(|| "none".into(), |c| c.status.clone()),
            derived_status: derived.status(),
            derived: derived.to_string(),
            recorded_derived_status: recorded.map(|e| e.derived_status),
            contradiction,
            completed,
            messages: snap.and_then(|s| s.messages),
            verdict: derived,
        });
    }
    lanes
}
