//! A report as `--json` writes it: its figures and the sentences made from them, under the keys
//! it has always had (scripts read them; a key renamed or dropped breaks them).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Serialize, Serializer};

use super::RunReport;
use crate::engine::{KillWindows, RowsLandings};
use crate::verdict::{Status, Symptom};
use crate::warehouse::Judged;

/// The stable keys, in the order they were first written.
#[derive(Serialize)]
struct Json<'a> {
    /// The strategy's name, or `exec` for the user's own job.
    strategy: &'a str,
    seed: u64,
    items: u64,
    rows: u64,
    distinct: u64,
    duplicated_task_ids: u64,
    missing: u64,
    outside: u64,
    kills: u32,
    kills_in_window: KillWindows,
    /// With a pause planned or made: how many landed, how many past a claim worker's lease.
    #[serde(skip_serializing_if = "Option::is_none")]
    pauses: Option<crate::engine::Pauses>,
    /// With answers to lose planned: those lost, each with its rows and keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    answers_lost: Option<Vec<crate::warehouse::postgres::answers::LostAnswer>>,
    restarts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<u64>,
    started_before_first_done: u64,
    completed: bool,
    claimed_status: &'a str,
    claimed_rows_written: Option<u64>,
    derived_status: Status,
    verdict: String,
    symptoms: Vec<Symptom>,
    lessons: Vec<String>,
    never_completed: Option<String>,
    kill_delays_ms: &'a [u64],
    kills_planned: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    kill_rows_planned: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kill_rows_landed: Option<&'a RowsLandings>,
    not_fired: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    points_announced: &'a BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    kills_after_points: &'a BTreeMap<String, u32>,
    queue_notes: Vec<String>,
    judged: Judged,
    kill_sent_at_rows: Option<u64>,
    kill_landed_at_rows: Option<u64>,
    messages_received: Option<u64>,
    messages_distinct: Option<u64>,
    messages_duplicated: Option<u64>,
    messages_missing: Option<u64>,
    messages_outside: Option<u64>,
    messages_requests: Option<u64>,
    messages_verdict: Option<String>,
    elapsed_ms: u64,
    scale: f64,
    db: &'a Path,
    timeline: Vec<String>,
    timeline_left_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a crate::verdict::compare::Comparison>,
}

impl Serialize for RunReport {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let rows = &self.inspection;
        let messages = self.messages;
        Json {
            strategy: self
                .strategy
                .map_or(crate::engine::EXEC_LABEL, crate::worker::Strategy::name),
            seed: self.seed,
            items: rows.items,
            rows: rows.rows,
            distinct: rows.distinct,
            duplicated_task_ids: rows.duplicated_task_ids,
            missing: rows.missing,
            outside: rows.unexpected,
            kills: self.kills,
            kills_in_window: self.kills_in_window,
            pauses: (self.pause_planned.is_some()
                || self.pause_rows_planned.is_some()
                || self.pauses.landed > 0)
                .then_some(self.pauses),
            answers_lost: self
                .answers_were_planned()
                .then(|| self.answers_lost.clone()),
            restarts: self.restarts,
            runs: self.runs(),
            started_before_first_done: self.started_before_first_done,
            completed: self.completed,
            claimed_status: self.claimed_status(),
            claimed_rows_written: self.claimed_rows_written,
            derived_status: self.derived_status(),
            verdict: self.verdict(),
            symptoms: self.symptoms(),
            lessons: self.lessons(),
            never_completed: self.never_completed(),
            kill_delays_ms: &self.kill_delays_ms,
            kills_planned: self.kills_planned,
            kill_rows_planned: self.kill_rows_planned.as_deref(),
            kill_rows_landed: self.kill_rows_landed.as_ref(),
            not_fired: self.not_fired(),
            points_announced: &self.points_announced,
            kills_after_points: &self.kills_after_points,
            queue_notes: self.queue_notes(),
            judged: rows.judged,
            kill_sent_at_rows: self.kill_at_rows.map(|(sent, _)| sent),
            kill_landed_at_rows: self.kill_at_rows.map(|(_, landed)| landed),
            messages_received: messages.map(|m| m.received),
            messages_distinct: messages.map(|m| m.distinct),
            messages_duplicated: messages.map(|m| m.duplicated),
            messages_missing: messages.map(|m| m.missing),
            messages_outside: messages.map(|m| m.outside),
            messages_requests: messages.map(|m| m.requests),
            messages_verdict: self.messages_verdict(),
            elapsed_ms: self.elapsed_ms,
            scale: self.scale,
            db: &rows.db,
            timeline: self.timeline_lines(),
            timeline_left_out: self.timeline_left_out,
            state: self.state.as_ref(),
        }
        .serialize(serializer)
    }
}
