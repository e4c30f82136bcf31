//! Waiting between ticks on the workers' pipes rather than on a clock: a driver sleeps until
//! its next tick unless a worker says something the night must act on at once (its pipe
//! closing as it dies, its `done`, a write it waits to be granted, a job's crash point), so a
//! death is reaped, a restart spawned and a grant sent without waiting out the tick. A night
//! where nothing is said may wait longer than one where lines come (`Engine::wait`).

use std::time::{Duration, Instant};

use super::Engine;
use crate::supervisor::slot::Output;
use crate::worker::protocol::WorkerLine;

/// How soon to look again at a worker whose pipes have closed but whose exit the kernel has
/// not posted yet (the pipes close a moment before the process can be reaped).
const EXIT_SOON: Duration = Duration::from_micros(200);

impl Engine {
    /// Waits for the next tick: up to `quiet` while no worker says anything, up to `heard`
    /// (from the start of the wait, never past `quiet`) once one has, and no longer when a
    /// worker's output needs an answer now. What arrives meanwhile is kept for the tick, in
    /// order.
    pub fn wait(&mut self, quiet: Duration, heard: Duration) {
        let start = Instant::now();
        let limit = if self.exit_soon() {
            quiet.min(EXIT_SOON)
        } else {
            quiet
        };
        let mut deadline = start + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            let Ok(output) = self.output_rx.recv_timeout(left) else {
                return;
            };
            let urgent = self.urgent(&output);
            self.early.push(output);
            if urgent {
                return;
            }
            deadline = deadline.min(start + heard);
        }
    }

    /// A worker whose pipes have all closed and who is not reaped yet: it is dying.
    fn exit_soon(&self) -> bool {
        (self.lanes.iter())
            .flat_map(|l| l.slots().iter())
            .any(crate::supervisor::slot::Slot::pipes_closed)
    }

    /// Whether a line calls for a tick now rather than at the next one.
    fn urgent(&self, output: &Output) -> bool {
        let Some(text) = output.line.as_deref() else {
            // A pipe closed: its worker is dying.
            return true;
        };
        let Some(lane) = self.lanes.get(output.lane) else {
            return true;
        };
        // Someone else's job says little, and a crash point it names waits for the host.
        if lane.config().worker.job().is_some() || output.stderr {
            return true;
        }
        match text.parse::<WorkerLine>() {
            Ok(WorkerLine::Wait { need }) => lane
                .attempts()
                .get(output.slot)
                .is_none_or(|a| need > a.granted),
            Ok(WorkerLine::Wrote { .. }) => false,
            _ => true,
        }
    }
}
