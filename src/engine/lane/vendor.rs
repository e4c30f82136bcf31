//! A lane's outside world: the vendor its items reach and the relay that feeds it (the outbox
//! strategy), and the messages counted at the vendor. Neither is a reclaim worker: neither is
//! gated, and the clock waits for the relay only at the plan's crash of it and at its end.

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use super::Lane;
use crate::engine::pace::Attempt;
use crate::engine::stall::Wait;
use crate::fake_vendor::Counts;
use crate::supervisor::service::Service;
use crate::supervisor::slot::SlotState;

/// How often a running lane's messages are read from the vendor's database.
const MESSAGES_EVERY: Duration = Duration::from_millis(200);

/// The vendor a lane's items reach, the relay that feeds it, and the messages counted there.
#[derive(Debug)]
pub(super) struct LaneVendor {
    /// The vendor's process, while the night runs (a lane whose items reach one).
    service: Option<Service>,
    /// The slot that runs the relay (outbox), after the workers' slots.
    relay_slot: Option<usize>,
    /// The messages at the vendor, as last read, and when.
    messages: Option<Counts>,
    messages_read_at: Option<Instant>,
    /// The clock's wait on the plan's relay crash (`relay_crash_hold`).
    crash_wait: RelayWait,
    /// The clock's wait on the relay's end, once the workers are done (`relay_end_hold`).
    end_wait: RelayWait,
}

/// One wait of the clock on the relay: given up once the relay is stuck (`Wait::given_up`),
/// started afresh whenever it has delivered an entry since the last look.
#[derive(Debug, Default)]
struct RelayWait {
    wait: Wait,
    /// The outbox's pending entries when last looked: fewer is progress.
    pending: Option<u64>,
}

impl RelayWait {
    fn end(&mut self) {
        self.wait.end();
        self.pending = None;
    }

    /// Whether the clock goes on without the relay `pid`, the outbox holding `pending`
    /// entries not sent.
    fn given_up(&mut self, now: Instant, pid: i32, pending: Option<u64>) -> bool {
        if pending != self.pending {
            self.pending = pending;
            self.wait.end();
        }
        self.wait.given_up(now, pid)
    }
}

impl LaneVendor {
    /// No vendor started yet; the relay, if the lane has one, in `relay_slot`.
    pub(super) fn new(relay_slot: Option<usize>) -> Self {
        Self {
            service: None,
            relay_slot,
            messages: None,
            messages_read_at: None,
            crash_wait: RelayWait::default(),
            end_wait: RelayWait::default(),
        }
    }

    /// Whether `slot` runs the lane's relay.
    pub(super) fn is_relay(&self, slot: usize) -> bool {
        self.relay_slot == Some(slot)
    }

    /// The vendor's address, while it runs.
    pub(super) fn addr(&self) -> Option<SocketAddr> {
        self.service.as_ref().map(|v| v.addr)
    }

    pub(super) fn running(&self) -> bool {
        self.service.is_some()
    }

    /// The messages at the vendor, as last read.
    pub(super) fn messages(&self) -> Option<Counts> {
        self.messages
    }
}

impl Lane {
    /// `exe relay ...` for the relay slot's next attempt; the crash point belongs to its first.
    pub(in crate::engine) fn relay_command(&self, slot: usize, exe: &std::path::Path) -> Command {
        let mut command = Command::new(exe);
        command
            .arg("relay")
            .arg("--db")
            .arg(&self.config.db)
            .arg("--items")
            .arg(self.config.items.to_string())
            .arg("--idle-secs")
            .arg(
                crate::worker::relay::SUPERVISED_IDLE_LIMIT
                    .as_secs()
                    .to_string(),
            );
        if let Some(addr) = self.vendor.addr() {
            command.arg("--vendor").arg(addr.to_string());
        }
        if let Some(crash) = self
            .config
            .crash_at
            .filter(|c| c.point == crate::worker::CrashPoint::AfterRelaySend)
            .filter(|_| self.slots[slot].attempt() == 0)
        {
            command.arg("--crash-at").arg(crash.to_string());
        }
        self.config.warehouse.pass_to(&mut command);
        command
    }

    /// The moment the plan's relay crash (`after-relay-send` at task T) belongs to: T's commit
    /// on the worker's first attempt, the first moment the relay can have sent it. While the
    /// relay has not died there, no write is granted past it and the clock waits on it, so the
    /// kill lands on that second, with that second's rows, at every speed. Its `crash` line is
    /// not its death: until the dead relay is reaped (its pipes read to the end, `PIPE_GRACE`
    /// at most), the clock still waits, or the death would be stamped wherever the clock had
    /// run to by then (02:05:27 instead of 02:05:21 on a loaded machine).
    pub(in crate::engine) fn relay_crash_moment(&self) -> Option<f64> {
        let crash = (self.config.crash_at)
            .filter(|c| c.point == crate::worker::CrashPoint::AfterRelaySend)?;
        let relay = &self.slots[self.vendor.relay_slot?];
        let first = relay.attempt() <= 1;
        let worker = self
            .slots
            .first()
            .filter(|w| w.attempt() <= 1 && w.is_live())?;
        let pending = first && relay.is_live() && worker.state() == SlotState::Running;
        let attempt = self.attempts.first().filter(|a| a.paced())?;
        pending.then(|| attempt.done_at(crash.task + 1))
    }

    /// `relay_crash_moment`, while the clock may still wait there: once the relay is stuck
    /// (see `stall::Wait::given_up`: a relay that never gets there), it goes on without it. A
    /// relay slow to get there on a loaded machine, or still delivering the entries before
    /// the crash's, is waited for.
    pub(in crate::engine) fn relay_crash_hold(&mut self, clock: f64, now: Instant) -> Option<f64> {
        let (Some(moment), Some(relay)) = (self.relay_crash_moment(), self.vendor.relay_slot)
        else {
            self.vendor.crash_wait.end();
            return None;
        };
        // Said it crashed: it is dead or dying, and reaped within `PIPE_GRACE`; not judged.
        if clock + 1e-9 < moment || self.slots[relay].crashed_at().is_some() {
            return Some(moment);
        }
        // A relay still delivering the entries before it (fewer pending than when last looked)
        // is getting there, however slowly the machine lets it: the wait starts again.
        let pending = self.config.warehouse.pending_entries(&self.config.db);
        let pid = self.slots[relay].pid();
        (!self.vendor.crash_wait.given_up(now, pid, pending)).then_some(moment)
    }

    /// Once every worker of the lane has ended its night (`Done`), the relay delivers what is
    /// left and ends too: until it has, the clock waits at the lane's last moment (its workers'
    /// last write). So the relay's last lines and its end are that moment's, and the night ends
    /// there, not wherever a clock gone on without it had got to when its exit was read (a
    /// recording of side-effects ended at 02:21:23 instead of 02:21:18 on a loaded machine,
    /// its outbox lane still running in its last second). A stuck relay (`Wait::given_up`) is
    /// gone on without.
    pub(in crate::engine) fn relay_end_hold(&mut self, now: Instant) -> Option<f64> {
        let relay = self.vendor.relay_slot?;
        let workers = || (0..self.slots.len()).filter(move |&s| s != relay);
        let ending = self.slots[relay].is_live()
            && self.slots[relay].state() == SlotState::Running
            && workers().all(|s| self.slots[s].state() == SlotState::Done);
        let moment = (workers().map(|s| &self.attempts[s]))
            .filter(|a| a.paced())
            .map(Attempt::now)
            .reduce(f64::max);
        let (true, Some(moment)) = (ending, moment) else {
            self.vendor.end_wait.end();
            return None;
        };
        let pending = self.config.warehouse.pending_entries(&self.config.db);
        let pid = self.slots[relay].pid();
        (!self.vendor.end_wait.given_up(now, pid, pending)).then_some(moment)
    }

    /// Whether the lane's relay, when it runs, has delivered every entry committed so far (none
    /// is pending in the outbox): the relay takes no sim time, so at a moment the vendor holds
    /// every message committed by then, whatever the machine's load. Once it has, the vendor's
    /// messages are read again, so the figure shown is that moment's. A relay not running
    /// (killed, waiting for its restart, given up) is not waited for, nor one whose outbox
    /// cannot be read (on PostgreSQL). A lane whose workers send themselves has its messages
    /// read again too: read every `MESSAGES_EVERY` of real time, the figure could be several
    /// writes old at 4x.
    pub(in crate::engine) fn relay_caught_up(&mut self, now: Instant) -> bool {
        let Some(relay) = self.vendor.relay_slot else {
            self.read_messages(now, true);
            return true;
        };
        let running =
            self.slots[relay].is_live() && self.slots[relay].state() == SlotState::Running;
        if running
            && self
                .config
                .warehouse
                .pending_entries(&self.config.db)
                .is_some_and(|n| n > 0)
        {
            return false;
        }
        self.read_messages(now, true);
        true
    }

    /// Starts the lane's vendor (`exe vendor ...`), when its items reach one.
    pub(in crate::engine) fn start_vendor(
        &mut self,
        exe: &std::path::Path,
    ) -> Result<(), crate::supervisor::service::ServiceError> {
        if !self.config.needs_vendor() {
            return Ok(());
        }
        let modes = self.config.vendor;
        let mut command = Command::new(exe);
        command
            .arg("vendor")
            .arg("--db")
            .arg(self.config.vendor_db())
            .arg("--keys")
            .arg(modes.keys.to_string())
            .arg("--drop-responses")
            .arg(modes.drop_responses.to_string())
            .arg("--seed")
            .arg(modes.seed.to_string());
        if let Some(n) = modes.hold_at {
            command.arg("--hold-at").arg(n.to_string());
        }
        self.vendor.service = Some(Service::start(command)?);
        Ok(())
    }

    /// Stops the vendor (the night is over, or being torn down).
    pub(in crate::engine) fn stop_vendor(&mut self) {
        if let Some(mut vendor) = self.vendor.service.take() {
            vendor.stop();
        }
    }

    /// A relay with no worker left to feed it would wait for entries that never come: once every
    /// worker has given up or failed, the relay is ended and given up with them.
    pub(in crate::engine) fn settle_relay(&mut self) {
        let Some(relay) = self.vendor.relay_slot else {
            return;
        };
        let workers_over = (0..self.slots.len())
            .filter(|&s| s != relay)
            .all(|s| matches!(self.slots[s].state(), SlotState::GaveUp | SlotState::Failed));
        if workers_over && self.slots[relay].state() != SlotState::Done {
            self.slots[relay].kill();
            self.slots[relay].give_up();
        }
    }

    /// Reads the messages at the vendor, at most every `MESSAGES_EVERY` (always with `force`).
    pub(in crate::engine) fn read_messages(&mut self, now: Instant, force: bool) {
        if !self.config.needs_vendor() {
            return;
        }
        if !force
            && (self.vendor.messages_read_at)
                .is_some_and(|at| now.saturating_duration_since(at) < MESSAGES_EVERY)
        {
            return;
        }
        self.vendor.messages_read_at = Some(now);
        if let Ok(counts) = self.config.read_messages() {
            self.vendor.messages = Some(counts);
        }
    }
}
