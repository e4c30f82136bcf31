//! What was planned and did not happen, said: each planned kill that never fired (by task, by
//! message, by rows, replayed, random) and an own job's crash point it never reached.

/// Each planned kill that never fired, said (the plan watches the first lane), and what came
/// first: the job's end, or the night's (`completed` false: given up on, out of restarts).
pub(super) fn not_fired(
    fired: crate::engine::triggers::Fired,
    queue: &crate::queue::Queue,
    rows: u64,
    completed: bool,
) -> Vec<String> {
    let first = if completed {
        "the job finished first"
    } else {
        "the night ended first, the job never completed"
    };
    let mut said = Vec::new();
    if let Some((task, false)) = fired.kill_at_task {
        said.push(format!(
            "the kill at {} never fired: its row was never written while the job ran",
            crate::text::escape_controls(&queue.key(task))
        ));
    }
    if let Some((n, false)) = fired.kill_at_message {
        said.push(format!(
            "the kill at message {n} never fired: the vendor never received that many"
        ));
    }
    if let Some((n, false)) = fired.kill_at_rows {
        said.push(format!(
            "the kill at {n} rows never fired: the table held {rows} rows at the end"
        ));
    }
    let (planned, fired_replayed) = fired.replayed;
    if fired_replayed < planned {
        said.push(format!(
            "{} of {planned} replayed kills never fired: {first}",
            planned - fired_replayed
        ));
    }
    let (planned, fired_random) = fired.random;
    if fired_random < planned {
        said.push(format!(
            "{} of {planned} random kills never fired: {first}",
            planned - fired_random
        ));
    }
    said
}

/// An external job's planned crash that never happened: the job never announced that point in
/// that unit of work (or no such point at all).
pub(super) fn crash_not_fired(lane: &crate::engine::Lane) -> Option<String> {
    let plan = lane.config.worker.job()?.crash_at.as_ref()?;
    lane.points.not_fired(plan)
}
