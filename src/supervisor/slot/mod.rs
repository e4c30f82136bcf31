//! One worker position across its attempts: the process of the current attempt, its output pipes,
//! reaping, how an exit is classified, the restart policy, and what may be signalled.
//!
//! The engine owns the slots and decides what happens to a lane; a slot only knows its process.

use std::io::{Read, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::Sender;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::Serialize;

use crate::supervisor::process;
use crate::worker::CrashAt;

/// How long a reaped worker's pipes may stay open before the supervisor stops waiting for its
/// last lines (a grandchild holding them, say).
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// What a worker process is doing, as the supervisor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotState {
    Running,
    /// Stopped by SIGSTOP: alive, making no progress.
    Hung,
    /// Dead (killed or crashed); the supervisor restarts it when `due` comes.
    Restarting,
    /// Exited 0 after its `done` line.
    Done,
    /// Exited with an error; not restarted.
    Failed,
    /// Out of restarts (`max_restarts`).
    GaveUp,
}

/// A line a worker printed, stamped when it was read.
#[derive(Debug)]
pub struct Output {
    pub lane: usize,
    pub slot: usize,
    /// Which attempt of the slot printed it (an old attempt's pipe may close late).
    pub attempt: u32,
    pub stderr: bool,
    /// `None` when the pipe reached its end.
    pub line: Option<String>,
    pub at: Instant,
}

/// How a reaped worker ended, as the supervisor classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Exited 0: the job is done as far as this worker is concerned.
    Done,
    /// Died of a signal: the host's own SIGKILL (`by_host`), the worker's crash point, or
    /// something outside reclaim. Restarted.
    Killed { signal: i32, by_host: bool },
    /// Exited with an error (its last stderr line, if any): not restarted.
    Failed { reason: String, code: i32 },
}

/// Whether the process `pid` (a child not yet reaped) has exited; it stays a zombie.
fn leader_exited(pid: i32) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    if pid <= 0 {
        return false;
    }
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(
        waitid(Id::Pid(nix::unistd::Pid::from_raw(pid)), flags),
        Ok(WaitStatus::StillAlive) | Err(_)
    )
}

/// When a dead worker comes back, and how many times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RestartPolicy {
    /// Sim seconds the supervisor waits before restarting a dead worker.
    pub delay: f64,
    /// Restarts per lane before the supervisor gives up, so a job that never finishes ends.
    pub max: u32,
}

/// One worker position in a lane, across its attempts.
#[derive(Debug)]
pub struct Slot {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    pid: i32,
    state: SlotState,
    attempt: u32,
    /// The sim time of the restart.
    restart_due: Option<f64>,
    /// Set when the supervisor itself sent the SIGKILL now being reaped.
    killed_by_host: bool,
    last_error: Option<String>,
    /// Output pipes of the current attempt not yet read to their end.
    open_pipes: u8,
    /// A reaped exit waiting for the last of its output.
    exited: Option<(ExitStatus, Instant)>,
    /// When the current attempt's first process was seen to exit, not yet reaped (see
    /// `try_reap`).
    leader_gone: Option<Instant>,
    /// The crash point this attempt said it was dying at.
    crash: Option<CrashAt>,
}

impl Default for Slot {
    fn default() -> Self {
        Self::new()
    }
}

impl Slot {
    /// A slot whose first attempt has not started yet.
    #[must_use]
    pub fn new() -> Self {
        Self {
            open_pipes: 0,
            exited: None,
            leader_gone: None,
            child: None,
            stdin: None,
            pid: 0,
            state: SlotState::Restarting,
            attempt: 0,
            restart_due: None,
            killed_by_host: false,
            last_error: None,
            crash: None,
        }
    }

    #[must_use]
    pub fn state(&self) -> SlotState {
        self.state
    }

    /// The pid of the current (or last) attempt.
    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The current (or last) attempt, from 1.
    #[must_use]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Reaped, with its exit waiting for the last of its output.
    #[must_use]
    pub fn exit_pending(&self) -> bool {
        self.exited.is_some() || self.leader_gone.is_some()
    }

    /// Every output pipe of the current attempt has closed and its process is not reaped yet:
    /// it has exited, or is about to.
    #[must_use]
    pub fn pipes_closed(&self) -> bool {
        self.child.is_some() && self.open_pipes == 0
    }

    /// A process exists for this slot (running or hung), not yet reaped.
    #[must_use]
    pub fn is_live(&self) -> bool {
        self.child.is_some()
    }

    /// Starts the next attempt with `command` (stdio is piped here), its output lines sent to
    /// `tx` tagged with `lane` and `slot`. A night that is paused stops the new worker at once.
    /// `paced`: the worker reads pace commands on its stdin (reclaim's own); anyone else's gets
    /// an empty stdin, since a pipe it never reads would fill and block the supervisor.
    pub fn spawn(
        &mut self,
        mut command: Command,
        (lane, slot): (usize, usize),
        tx: &Sender<Output>,
        (paused, paced): (bool, bool),
    ) -> std::io::Result<()> {
        let attempt = self.attempt + 1;
        command
            .stdin(if paced { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = process::spawn(command)?;
        let pid = process::child_pid(&child);
        let mut pipes = 0;
        let streams: [(Option<Box<dyn Read + Send>>, bool); 2] = [
            (child.stdout.take().map(|s| Box::new(s) as _), false),
            (child.stderr.take().map(|s| Box::new(s) as _), true),
        ];
        for (stream, stderr) in streams {
            let Some(stream) = stream else { continue };
            let tx = tx.clone();
            // Each reader ends when the worker's pipe closes, that is when the worker dies.
            let _ = thread::Builder::new()
                .name(format!("reclaim-out-{pid}"))
                .spawn(move || {
                    let output = |line| Output {
                        lane,
                        slot,
                        attempt,
                        stderr,
                        line,
                        at: Instant::now(),
                    };
                    for read in super::lines::CappedLines::new(stream) {
                        let Ok(text) = read else { break };
                        if tx.send(output(Some(text))).is_err() {
                            return;
                        }
                    }
                    let _ = tx.send(output(None));
                });
            pipes += 1;
        }
        self.stdin = child.stdin.take();
        self.child = Some(child);
        self.open_pipes = pipes;
        self.exited = None;
        self.leader_gone = None;
        self.pid = pid;
        self.state = SlotState::Running;
        self.attempt = attempt;
        self.restart_due = None;
        self.killed_by_host = false;
        self.crash = None;
        if paused {
            let _ = process::signal_group(pid, Signal::SIGSTOP);
        }
        Ok(())
    }

    /// Notes one line of output (a stderr line is kept as the reason a failure gives) or the end
    /// of a pipe of `attempt`.
    pub fn heard(&mut self, attempt: u32, stderr: bool, line: Option<&str>) {
        match line {
            None if self.attempt == attempt => self.open_pipes = self.open_pipes.saturating_sub(1),
            Some(text) if stderr => self.last_error = Some(text.to_string()),
            _ => {}
        }
    }

    /// The worker said it is about to kill itself at `at` (its `crash` line).
    pub fn crashing_at(&mut self, at: CrashAt) {
        self.crash = Some(at);
    }

    /// The next attempt, begun with no process: for tests of what a lane makes of its lines
    /// and exits.
    #[cfg(test)]
    pub(crate) fn begin_without_a_process(&mut self) {
        self.attempt += 1;
        self.state = SlotState::Running;
    }

    /// The attempt begun with no process ends its night (exit 0): for the same tests.
    #[cfg(test)]
    pub(crate) fn done_without_a_process(&mut self) {
        self.state = SlotState::Done;
    }

    /// The crash point the current attempt said it died at, if it said so.
    #[must_use]
    pub fn crashed_at(&self) -> Option<CrashAt> {
        self.crash
    }

    /// Reaps the process once it has exited and its output has been read to the end (or its
    /// pipes outlived `PIPE_GRACE`: a grandchild holding them); its exit is then handed out by
    /// `ready_exit`.
    ///
    /// The group dies with its leader: whatever it started (an external job's children, a
    /// background `&` in `sh -c`) would otherwise outlive it as an orphan. But a process of the
    /// group may still be passing on the leader's last lines, so the SIGKILL waits for the pipes.
    /// Meanwhile the leader stays a zombie (looked at with `WNOWAIT`), so its pid, the group's
    /// id, cannot be reused before the SIGKILL lands.
    pub fn try_reap(&mut self, now: Instant) {
        if self.child.is_none() {
            return;
        }
        if self.leader_gone.is_none() && leader_exited(self.pid) {
            self.leader_gone = Some(now);
        }
        let Some(gone) = self.leader_gone else {
            return;
        };
        if self.open_pipes > 0 && now.saturating_duration_since(gone) < PIPE_GRACE {
            return;
        }
        // INVARIANT: the leader is exited but not reaped: its group id is still ours.
        let _ = process::signal_group(self.pid, Signal::SIGKILL);
        if let Some(child) = self.child.as_mut()
            && let Ok(Some(status)) = child.try_wait()
        {
            self.release();
            self.leader_gone = None;
            self.exited = Some((status, gone));
        }
    }

    /// A reaped exit whose last lines are in (or whose pipes outlived `PIPE_GRACE`), classified;
    /// the slot's state follows it, and a killed worker is due for a restart after `policy`'s
    /// delay.
    /// `sim` is the moment of the death on the night's clock.
    pub fn ready_exit(&mut self, now: Instant, sim: f64, policy: RestartPolicy) -> Option<Exit> {
        let (status, at) = self.exited?;
        if self.open_pipes > 0 && now.saturating_duration_since(at) < PIPE_GRACE {
            return None;
        }
        self.exited = None;
        Some(self.classify(status, sim, policy))
    }

    fn classify(&mut self, status: ExitStatus, sim: f64, policy: RestartPolicy) -> Exit {
        self.release();
        let by_host = std::mem::take(&mut self.killed_by_host);
        if status.success() {
            self.state = SlotState::Done;
            return Exit::Done;
        }
        // A resource limit's kill (`ulimit -f`, `ulimit -t`) is the worker's own failure, said
        // as that: never the host reclaiming the instance, never counted as a kill.
        if let Some(limit) = (status.signal())
            .filter(|_| !by_host)
            .and_then(crate::base::signals::limit_named)
        {
            let code = 128 + status.signal().unwrap_or(0);
            self.state = SlotState::Failed;
            return Exit::Failed {
                code,
                reason: format!("killed by {limit}"),
            };
        }
        if let Some(signal) = status.signal() {
            self.state = SlotState::Restarting;
            self.restart_due = Some(sim + policy.delay);
            return Exit::Killed { signal, by_host };
        }
        let code = status.code().unwrap_or(-1);
        self.state = SlotState::Failed;
        Exit::Failed {
            code,
            reason: self.last_error.as_deref().map_or_else(
                || format!("worker exited with code {code}"),
                |line| crate::worker::protocol::error_reason(line).to_string(),
            ),
        }
    }

    /// The host's SIGKILL, waited for at once so nothing restarts what is still being killed.
    /// `Some(exit)` when it died of it; `None` when there was nothing to kill or it had already
    /// finished on its own (that exit is then handled as an ordinary one, once its last lines
    /// are read).
    pub fn host_kill(&mut self, now: Instant, sim: f64, policy: RestartPolicy) -> Option<Exit> {
        let child = self.child.as_mut()?;
        // INVARIANT: only a child not yet reaped is signalled (its pid cannot be reused).
        let _ = process::signal_group(self.pid, Signal::SIGKILL);
        let status = child.wait().ok()?;
        if status.signal() == Some(Signal::SIGKILL as i32) {
            self.killed_by_host = true;
            Some(self.classify(status, sim, policy))
        } else {
            self.release();
            self.exited = Some((status, now));
            None
        }
    }

    /// Whether a restart is due at sim time `sim`.
    #[must_use]
    pub fn restart_is_due(&self, sim: f64) -> bool {
        self.state == SlotState::Restarting && self.restart_due.is_some_and(|due| sim >= due)
    }

    /// The sim time of a pending restart.
    #[must_use]
    pub fn restart_due(&self) -> Option<f64> {
        (self.state == SlotState::Restarting)
            .then_some(self.restart_due)
            .flatten()
    }

    /// A worker that failed on its own (an external job's `database is locked`, say) is
    /// restarted as after a kill, after the policy's delay.
    /// `sim` is the moment of the death on the night's clock.
    pub fn restart_after_failure(&mut self, sim: f64, policy: RestartPolicy) {
        self.state = SlotState::Restarting;
        self.restart_due = Some(sim + policy.delay);
    }

    /// The supervisor has run out of restarts for this slot.
    pub fn give_up(&mut self) {
        self.state = SlotState::GaveUp;
    }

    /// SIGSTOP (alive, no progress); true when there was a running worker to stop.
    pub fn hang(&mut self) -> bool {
        if self.child.is_some() && self.state == SlotState::Running {
            let _ = process::signal_group(self.pid, Signal::SIGSTOP);
            self.state = SlotState::Hung;
            return true;
        }
        false
    }

    /// Undoes `hang`; the SIGCONT is held back while the whole night is paused. True when there
    /// was a hung worker.
    pub fn unhang(&mut self, paused: bool) -> bool {
        if self.child.is_some() && self.state == SlotState::Hung {
            if !paused {
                let _ = process::signal_group(self.pid, Signal::SIGCONT);
            }
            self.state = SlotState::Running;
            return true;
        }
        false
    }

    /// Sends `signal` to a live worker's group (pause and resume of the whole night).
    pub fn signal(&self, signal: Signal) {
        if self.child.is_some() {
            let _ = process::signal_group(self.pid, signal);
        }
    }

    /// Continues a live worker that is not hung (resume of the whole night).
    pub fn continue_running(&self) {
        if self.state == SlotState::Running {
            self.signal(Signal::SIGCONT);
        }
    }

    /// Writes one line to the worker's stdin (a pace command); ignored when it is gone.
    pub fn tell(&mut self, line: &str) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = writeln!(stdin, "{line}");
            let _ = stdin.flush();
        }
    }

    /// Kills and reaps a live worker (shutdown).
    pub fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = process::signal_group(self.pid, Signal::SIGKILL);
            let _ = child.wait();
            self.release();
        }
    }

    /// Forgets a reaped (or about to be reaped) child: its pid must never be signalled again.
    fn release(&mut self) {
        if self.child.take().is_some() {
            process::forget(self.pid);
        }
        self.stdin = None;
        self.leader_gone = None;
    }
}

#[cfg(test)]
mod tests;
