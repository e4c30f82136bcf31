//! Recordings made before a line carried what it says as data (`Event::fact`): there the fact is
//! read back from the line's words. This is the only place reclaim reads a timeline sentence, and
//! only for those files: every recording made since has the fact beside the words.

use crate::engine::{Committed, DIED_ON_ITS_OWN, Fact, HUNG, Kind, Mark, RESUMED};
use crate::task::parse_task_id;

/// What an old line's words say, for the lines something reads back: an `item` line's
/// committed task or key, a notice of a hang or a resume, a death on its own.
pub(super) fn fact(kind: Kind, mark: Option<Mark>, text: &str) -> Option<Fact> {
    match (kind, mark) {
        (Kind::Item, _) => committed(text).map(Fact::Committed),
        (_, Some(Mark::Kill)) if text.starts_with(DIED_ON_ITS_OWN) => Some(Fact::DiedOnItsOwn),
        (Kind::Notice, None) if text.starts_with(HUNG) => Some(Fact::Hung),
        (Kind::Notice, None) if text.starts_with(RESUMED) => Some(Fact::Resumed),
        _ => None,
    }
}

/// What an old `item` event's words say had committed: `task-112  in flight, not committed
/// (last committed: task-111)`, `task-199  committed, the last of the queue`, a bare `task-111`
/// (the oldest recordings), or someone else's job's `ord-00012  the newest row committed before
/// the kill (...)`. `None` for words that say none of that.
fn committed(text: &str) -> Option<Committed> {
    if let Some(task) = parse_task_id(text.trim()) {
        return Some(Committed::Task(Some(task)));
    }
    if let Some((_, rest)) = text.split_once("last committed: ") {
        // `none`: nothing had committed.
        return Some(Committed::Task(parse_task_id(
            rest.trim_end_matches(')').trim(),
        )));
    }
    if text.contains("committed, the last") {
        let task = text.split_whitespace().next().and_then(parse_task_id);
        return task.map(|task| Committed::Task(Some(task)));
    }
    if text.contains("the newest row committed before the kill") {
        let key = text.split_whitespace().next().map(ToOwned::to_owned);
        return key.map(|key| Committed::Key(Some(key)));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::{Event, SessionLine};
    use super::*;

    /// Item events as reclaim wrote them before the fact was recorded (copied from recordings
    /// of the incident, of an `--exec` job, and of a two-commit crash between its commits).
    fn old_lines() -> [(&'static str, Committed); 6] {
        [
            (
                r#"{"type":"event","real_ms":7167,"sim":7907.0,"lane":0,"source":"worker","kind":"item","text":"task-112  in flight, not committed (last committed: task-111)"}"#,
                Committed::Task(Some(111)),
            ),
            (
                r#"{"type":"event","real_ms":12,"sim":7203.0,"lane":0,"source":"worker","kind":"item","text":"task-000  in flight, not committed (last committed: none)"}"#,
                Committed::Task(None),
            ),
            (
                r#"{"type":"event","real_ms":900,"sim":7906.0,"lane":0,"source":"worker","kind":"item","text":"task-111  its row committed, its checkpoint not: killed between the two commits (last committed: task-111)"}"#,
                Committed::Task(Some(111)),
            ),
            (
                r#"{"type":"event","real_ms":900,"sim":8460.0,"lane":0,"source":"worker","kind":"item","text":"task-199  committed, the last of the queue"}"#,
                Committed::Task(Some(199)),
            ),
            (
                r#"{"type":"event","real_ms":1,"sim":7907.0,"lane":0,"source":"worker","kind":"item","text":"task-111"}"#,
                Committed::Task(Some(111)),
            ),
            (
                r#"{"type":"event","real_ms":440,"sim":7464.406186800011,"lane":0,"source":"worker","kind":"item","text":"task-050  the newest row committed before the kill (which item was in flight, the job does not say)"}"#,
                Committed::Key(Some("task-050".into())),
            ),
        ]
    }

    fn event(line: &str) -> Event {
        match serde_json::from_str::<SessionLine>(line) {
            Ok(SessionLine::Event(event)) => event,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn an_old_item_event_says_what_had_committed_in_its_words() {
        for (line, committed) in old_lines() {
            let event = event(line);
            assert_eq!(event.fact, None, "{line}");
            assert_eq!(event.last_committed(), Some(committed), "{line}");
        }
        let cannot_tell = r#"{"type":"event","real_ms":1,"sim":7907.0,"lane":0,"source":"worker","kind":"item","text":"no row committed before the kill"}"#;
        assert_eq!(event(cannot_tell).last_committed(), None);
    }

    #[test]
    fn a_new_item_event_carries_the_fact_and_its_words_are_not_read() {
        let line = r#"{"type":"event","real_ms":7167,"sim":7907.0,"lane":0,"source":"worker","kind":"item","text":"words that say nothing (last committed: task-005)","fact":{"committed":{"task":111}}}"#;
        assert_eq!(
            event(line).last_committed(),
            Some(Committed::Task(Some(111)))
        );
        let key = r#"{"type":"event","real_ms":1,"sim":7907.0,"lane":0,"source":"worker","kind":"item","text":"ord 7  the newest row committed before the kill","fact":{"committed":{"key":"ord 7"}}}"#;
        assert_eq!(
            event(key).last_committed(),
            Some(Committed::Key(Some("ord 7".into())))
        );
        let none = r#"{"type":"event","real_ms":1,"sim":7907.0,"lane":0,"source":"worker","kind":"item","text":"x","fact":{"committed":{"task":null}}}"#;
        assert_eq!(event(none).last_committed(), Some(Committed::Task(None)));
        // Only an item event says what had committed.
        let notice = r#"{"type":"event","real_ms":1,"sim":7907.0,"lane":0,"source":"runner","kind":"notice","text":"task-111"}"#;
        assert_eq!(event(notice).last_committed(), None);
    }

    #[test]
    fn an_old_notice_says_a_hang_a_resume_or_a_death_on_its_own_in_its_words() {
        let line = |kind: &str, mark: &str, text: &str| {
            format!(
                r#"{{"type":"event","real_ms":1,"sim":7300.0,"lane":0,"source":"runner","kind":"{kind}","text":"{text}"{mark}}}"#
            )
        };
        let kill = r#","mark":"kill""#;
        for (line, fact) in [
            (
                line(
                    "notice",
                    "",
                    "worker hung (SIGSTOP, pid 7): alive, no progress",
                ),
                Some(Fact::Hung),
            ),
            (
                line("notice", "", "worker resumed (SIGCONT, pid 7)"),
                Some(Fact::Resumed),
            ),
            (
                line(
                    "notice",
                    kill,
                    "worker died on its own  (exit status 1, pid 7); restarted as after a kill",
                ),
                Some(Fact::DiedOnItsOwn),
            ),
            (
                line(
                    "notice",
                    kill,
                    "instance reclaimed by host  (SIGKILL, pid 7)",
                ),
                None,
            ),
            (line("stderr", "", "worker hung somewhere"), None),
        ] {
            assert_eq!(event(&line).fact(), fact, "{line}");
        }
        // A recorded fact is taken as it is: the words are not read.
        let new = r#"{"type":"event","real_ms":1,"sim":7300.0,"lane":0,"source":"runner","kind":"notice","text":"worker resumed","fact":"hung"}"#;
        assert_eq!(event(new).fact(), Some(Fact::Hung));
    }
}
