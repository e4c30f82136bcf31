//! What was planned and did not happen: each planned kill that never fired (by task, by
//! message, by rows, replayed, random) and an own job's crash point it never reached, as
//! figures; the sentence and whether it leaves the night untested are derived from them.

/// A planned action that did not happen, with the figures its sentence is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unfired {
    /// `--kill-at-task`: the key whose row was never written while the job ran.
    KillAtTask { key: String },
    /// `--kill-at-message`: the vendor never received message `n`.
    KillAtMessage { n: u64 },
    /// `--kill-at-rows`: the table never held `n` rows; it held `rows` at the end.
    KillAtRows { n: u64, rows: u64 },
    /// `--restart-server-at-rows`: the table never held `n` rows; it held `rows` at the end.
    ServerRestart { n: u64, rows: u64 },
    /// `--restart-server-at-task`: the key whose commit was to restart the server.
    ServerRestartAtTask { key: String },
    /// Kills replayed from a recording: `planned`, of which `fired` fired before the job
    /// completed (`completed`) or the night ended without it.
    Replayed {
        planned: usize,
        fired: usize,
        completed: bool,
    },
    /// Random kills (`--kills`): `planned`, of which `fired` fired, as for `Replayed`.
    Random {
        planned: u32,
        fired: u32,
        completed: bool,
    },
    /// An own job's planned crash, as the lane's points say why it never happened
    /// (`JobPoints::not_fired`, the sentence the timeline printed at the time).
    Crash { said: String },
}

impl Unfired {
    /// The sentence `run` prints after `not fired`.
    #[must_use]
    pub fn said(&self) -> String {
        let first = |completed: bool| {
            if completed {
                "the job finished first"
            } else {
                "the night ended first, the job never completed"
            }
        };
        match self {
            Self::KillAtTask { key } => format!(
                "the kill at {} never fired: its row was never written while the job ran",
                crate::base::text::escape_controls(key)
            ),
            Self::KillAtMessage { n } => {
                format!("the kill at message {n} never fired: the vendor never received that many")
            }
            Self::KillAtRows { n, rows } => {
                format!("the kill at {n} rows never fired: the table held {rows} rows at the end")
            }
            Self::ServerRestart { n, rows } => format!(
                "the server restart at {n} rows never happened: the table held {rows} rows at the end"
            ),
            Self::ServerRestartAtTask { key } => format!(
                "the server restart after {}'s commit never happened: its row was never written while the job ran, or pg_ctl failed (the timeline says which)",
                crate::base::text::escape_controls(key)
            ),
            Self::Replayed {
                planned,
                fired,
                completed,
            } => format!(
                "{} of {planned} replayed kills never fired: {}",
                planned - fired,
                first(*completed)
            ),
            Self::Random {
                planned,
                fired,
                completed,
            } => format!(
                "{} of {planned} random kills never fired: {}",
                planned - fired,
                first(*completed)
            ),
            Self::Crash { said } => said.clone(),
        }
    }

    /// Whether it leaves the night untested. Random kills are "at most N": some of them
    /// finding the job finished is the plan kept, said as a figure, not a gap (none of them
    /// firing is one, and so is a night that ended before its job did).
    #[must_use]
    pub fn leaves_untested(&self) -> bool {
        match self {
            Self::Random {
                fired, completed, ..
            } => *fired == 0 || !completed,
            _ => true,
        }
    }
}

/// Each planned kill that never fired (the plan watches the first lane), in the order they
/// are said: by task, by message, by rows, replayed, random. `completed` says what came first:
/// the job's end, or the night's (given up on, out of restarts).
pub(super) fn not_fired(
    fired: crate::engine::triggers::Fired,
    queue: &crate::queue::Queue,
    rows: u64,
    completed: bool,
) -> Vec<Unfired> {
    let mut unfired = Vec::new();
    if let Some((task, false)) = fired.kill_at_task {
        unfired.push(Unfired::KillAtTask {
            key: queue.key(task),
        });
    }
    if let Some((n, false)) = fired.kill_at_message {
        unfired.push(Unfired::KillAtMessage { n });
    }
    if let Some((n, false)) = fired.kill_at_rows {
        unfired.push(Unfired::KillAtRows { n, rows });
    }
    if let Some((n, false)) = fired.server_restart {
        unfired.push(Unfired::ServerRestart { n, rows });
    }
    if let Some((task, false)) = fired.server_restart_at_task {
        unfired.push(Unfired::ServerRestartAtTask {
            key: queue.key(task),
        });
    }
    let (planned, fired_replayed) = fired.replayed;
    if fired_replayed < planned {
        unfired.push(Unfired::Replayed {
            planned,
            fired: fired_replayed,
            completed,
        });
    }
    let (planned, fired_random) = fired.random;
    if fired_random < planned {
        unfired.push(Unfired::Random {
            planned,
            fired: fired_random,
            completed,
        });
    }
    unfired
}

/// An external job's planned crash that never happened: the job never announced that point in
/// that unit of work (or no such point at all).
pub(super) fn crash_not_fired(lane: &crate::engine::Lane) -> Option<Unfired> {
    let plan = lane.config().worker.job()?.crash_at.as_ref()?;
    let said = lane.points().not_fired(plan)?;
    Some(Unfired::Crash { said })
}

#[cfg(test)]
mod tests {
    use super::Unfired;

    #[test]
    fn random_kills_some_of_which_fired_are_the_plan_kept() {
        let some = Unfired::Random {
            planned: 3,
            fired: 1,
            completed: true,
        };
        assert_eq!(
            some.said(),
            "2 of 3 random kills never fired: the job finished first"
        );
        assert!(!some.leaves_untested());
        let none = Unfired::Random {
            planned: 3,
            fired: 0,
            completed: true,
        };
        assert!(none.leaves_untested());
        let cut_short = Unfired::Random {
            planned: 3,
            fired: 1,
            completed: false,
        };
        assert!(cut_short.leaves_untested());
        assert_eq!(
            cut_short.said(),
            "2 of 3 random kills never fired: the night ended first, the job never completed"
        );
    }

    #[test]
    fn every_other_kill_not_fired_leaves_the_night_untested() {
        let all = [
            Unfired::KillAtTask {
                key: "ord\n1".into(),
            },
            Unfired::KillAtMessage { n: 4 },
            Unfired::KillAtRows { n: 50, rows: 20 },
            Unfired::Replayed {
                planned: 2,
                fired: 1,
                completed: true,
            },
            Unfired::Crash {
                said: "the crash at k:p never fired: why".into(),
            },
        ];
        assert!(all.iter().all(Unfired::leaves_untested));
        let said: Vec<String> = all.iter().map(Unfired::said).collect();
        assert_eq!(
            said,
            [
                "the kill at ord\\n1 never fired: its row was never written while the job ran",
                "the kill at message 4 never fired: the vendor never received that many",
                "the kill at 50 rows never fired: the table held 20 rows at the end",
                "1 of 2 replayed kills never fired: the job finished first",
                "the crash at k:p never fired: why",
            ]
        );
    }
}
