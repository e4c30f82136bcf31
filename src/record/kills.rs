//! What a recording's host did, as a replay repeats it: the moments it killed, each placed after
//! what had committed in the first lane (`Event::last_committed`), so a replay onto another
//! strategy or pace kills at the same task.

use super::{Event, Recording};
use crate::engine::{Committed, Kind, Mark};
use crate::supervisor::schedule::KillMoment;

impl Recording {
    /// The moments the host reclaimed the instance, as a replay repeats them: after the task
    /// the first lane had committed (the place, so a replay onto another strategy or pace kills
    /// at the same task), or at the sim time when no task had been committed.
    #[must_use]
    pub fn kill_moments(&self) -> Vec<KillMoment> {
        self.kill_moments_keyed(|_| None)
    }

    /// `kill_moments`, an external job's kills placed by its own keys: its item line names the
    /// newest row committed before the kill (`ord-00012`), found in its queue by `index_of`.
    #[must_use]
    pub fn kill_moments_keyed(&self, index_of: impl Fn(&str) -> Option<u64>) -> Vec<KillMoment> {
        let mut moments: Vec<KillMoment> = Vec::new();
        let mut last_sim = f64::NEG_INFINITY;
        let first_lane = self.events.iter().filter_map(|e| e.lane).min();
        for (i, event) in self.events.iter().enumerate() {
            if event.mark != Some(Mark::Kill) {
                continue;
            }
            // Lanes killed in the same instant are one kill of the host.
            if (event.sim - last_sim).abs() < 1e-6 {
                continue;
            }
            last_sim = event.sim;
            // The item event just before a kill says what had committed in that lane; the
            // first lane's is the one a kill at a task counts.
            let committed = self.events[..i]
                .iter()
                .rev()
                .take_while(|e| (e.sim - event.sim).abs() < 1e-6)
                .find(|e| e.kind == Kind::Item && e.lane == first_lane)
                .and_then(Event::last_committed)
                .and_then(|committed| match committed {
                    Committed::Task(task) => task,
                    Committed::Key(key) => key.as_deref().and_then(&index_of),
                });
            moments.push(committed.map_or(
                KillMoment::At(event.sim - crate::base::clock::NIGHT_START),
                KillMoment::AfterTask,
            ));
        }
        moments
    }

    /// The sim times (seconds after 02:00:00) at which the host reclaimed the instance.
    #[must_use]
    pub fn kill_times(&self) -> Vec<f64> {
        let mut times: Vec<f64> = Vec::new();
        for event in self.events.iter().filter(|e| e.mark == Some(Mark::Kill)) {
            let at = event.sim - crate::base::clock::NIGHT_START;
            if times.last().is_none_or(|last| (at - last).abs() > 1e-6) {
                times.push(at);
            }
        }
        times
    }
}

#[cfg(test)]
mod tests {
    use super::super::read::tests::{header_line, parse};
    use super::*;

    /// A kill is replayed after what had committed: the recorded fact, or an old recording's
    /// words; someone else's job's key found in the new night's queue.
    #[test]
    fn kills_are_placed_after_what_had_committed_old_recordings_too() {
        let item = |fact: &str, text: &str| {
            format!(
                "{{\"type\":\"event\",\"real_ms\":1,\"sim\":7907.0,\"lane\":0,\"source\":\"worker\",\"kind\":\"item\",\"text\":\"{text}\"{fact}}}"
            )
        };
        let kill = "{\"type\":\"event\",\"real_ms\":1,\"sim\":7907.0,\"lane\":0,\"source\":\"runner\",\"kind\":\"notice\",\"text\":\"instance reclaimed by host\",\"mark\":\"kill\"}";
        let cases = [
            (
                item(
                    "",
                    "task-112  in flight, not committed (last committed: task-111)",
                ),
                KillMoment::AfterTask(111),
            ),
            (
                item(
                    ",\"fact\":{\"committed\":{\"task\":111}}",
                    "task-112  in flight",
                ),
                KillMoment::AfterTask(111),
            ),
            (
                item(
                    ",\"fact\":{\"committed\":{\"task\":null}}",
                    "task-000  in flight",
                ),
                KillMoment::At(707.0),
            ),
            (
                item("", "ord-7  the newest row committed before the kill (...)"),
                KillMoment::AfterTask(7),
            ),
            (
                item(
                    ",\"fact\":{\"committed\":{\"key\":\"ord-7\"}}",
                    "ord-7  the newest row",
                ),
                KillMoment::AfterTask(7),
            ),
            (
                item(
                    ",\"fact\":{\"committed\":{\"key\":\"not-queued\"}}",
                    "not-queued",
                ),
                KillMoment::At(707.0),
            ),
        ];
        let index_of = |key: &str| key.strip_prefix("ord-").and_then(|n| n.parse().ok());
        for (item, moment) in cases {
            let recording = parse(&format!("{}\n{item}\n{kill}", header_line()))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(recording.kill_moments_keyed(index_of), [moment], "{item}");
        }
    }
}
