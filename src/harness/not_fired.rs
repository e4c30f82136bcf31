//! What was planned and did not happen, said: each planned kill that never fired (by task, by
//! message, by rows, replayed, random) and an own job's crash point it never reached.

/// A planned action that did not happen, said; and whether that leaves the night untested.
/// Random kills are "at most N": some of them finding the job finished is the plan kept, said
/// as a figure, not a gap (none of them firing is one).
pub(super) struct Unfired {
    pub said: String,
    pub leaves_untested: bool,
}

impl From<String> for Unfired {
    fn from(said: String) -> Self {
        Self {
            said,
            leaves_untested: true,
        }
    }
}

/// Each planned kill that never fired, said (the plan watches the first lane), and what came
/// first: the job's end, or the night's (`completed` false: given up on, out of restarts).
pub(super) fn not_fired(
    fired: crate::engine::triggers::Fired,
    queue: &crate::queue::Queue,
    rows: u64,
    completed: bool,
) -> Vec<Unfired> {
    let first = if completed {
        "the job finished first"
    } else {
        "the night ended first, the job never completed"
    };
    let mut said = Vec::new();
    if let Some((task, false)) = fired.kill_at_task {
        said.push(format!(
            "the kill at {} never fired: its row was never written while the job ran",
            crate::base::text::escape_controls(&queue.key(task))
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
    let mut said: Vec<Unfired> = said.into_iter().map(Unfired::from).collect();
    let (planned, fired_random) = fired.random;
    if fired_random < planned {
        said.push(Unfired {
            said: format!(
                "{} of {planned} random kills never fired: {first}",
                planned - fired_random
            ),
            leaves_untested: fired_random == 0 || !completed,
        });
    }
    said
}

/// An external job's planned crash that never happened: the job never announced that point in
/// that unit of work (or no such point at all).
pub(super) fn crash_not_fired(lane: &crate::engine::Lane) -> Option<String> {
    let plan = lane.config().worker.job()?.crash_at.as_ref()?;
    lane.points().not_fired(plan)
}
