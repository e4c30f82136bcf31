//! The night's look at the PostgreSQL server itself, beside the lanes' observers (which read
//! rows): whether the server restarted under the night, and what the server did with a killed
//! worker's open transaction. Only what a query showed is said.
//!
//! A restart is told by `pg_postmaster_start_time()`: a new one means a new postmaster, and a
//! new postmaster means every session of the old one ended. The sessions lost are reclaim's
//! (`application_name` `reclaim/PID`) that the last look before it counted.
//!
//! A kill: the engine stops the victims (SIGSTOP) and calls `before_kill`, which reads each
//! victim's session (its backend, its state, the transaction it had open, by `backend_xid`);
//! then the SIGKILL lands. Later looks ask the server `pg_xact_status` of that transaction until
//! it is no longer in progress and the backend has gone, and say what the server did: aborted
//! (its rows never reached the table) or committed (the kill came after the commit).

use std::time::{Duration, Instant};

use postgres::Client;

use super::{Server, application_name_of};
use crate::base::clock::SimTime;
use crate::warehouse::backend::{Said, ServerWatch};
use crate::warehouse::error::{WarehouseError, is_lost};

/// Between two looks at the server.
const LOOK_EVERY: Duration = Duration::from_millis(250);
/// Between two looks while a kill's outcome is awaited (the clock waits on it).
const VICTIM_EVERY: Duration = Duration::from_millis(10);
/// Down this long (or the server's whole wait, if shorter), the server is said to be
/// unreachable (the workers give up at the end of their wait, `Server::wait`, and the night
/// ends with their failure).
const DOWN_SAID_AFTER: Duration = Duration::from_secs(10);
/// How much longer than the workers' wait the clock stands for a server gone: a worker's wait
/// began at its own first failed connection, and its last attempt may take a connection's
/// bound past it, so its giving up is seen while the clock still stands.
const OUTLASTS: Duration = Duration::from_secs(super::CONNECT_TIMEOUT.as_secs() + 1);
/// How long a killed worker's transaction is followed before saying it is still open.
const VICTIM_BOUND: Duration = Duration::from_secs(20);

/// Why a look did not reach the server: the driver's or the server's words.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Unreached(String);

/// A killed worker's session as read just before the SIGKILL.
#[derive(Debug)]
struct Victim {
    lane: usize,
    pid: i32,
    backend: i32,
    /// Its open transaction (`xid8`, as text), if it had written in one.
    xid: Option<String>,
    state: String,
    since: Instant,
    /// The night's moment of the kill: what the server did is said there.
    at: f64,
}

/// The night's watch on its server.
pub struct ServerEvents {
    server: Server,
    client: Option<Client>,
    /// `pg_postmaster_start_time()` at the last look.
    start: Option<String>,
    /// reclaim's sessions (this one aside) at the last look.
    sessions: i64,
    /// The night's clock at the last look that reached the server.
    last_ok: f64,
    /// Since when (sim, real) the server could not be reached, and why.
    down: Option<(f64, Instant, String)>,
    /// While the server is gone: until when the latest worker started may still be waiting
    /// for it (`worker_started`).
    waited_until: Option<Instant>,
    said_down: bool,
    /// The moment the host restarted the server, until the look that finds it restarted.
    host_restart: Option<f64>,
    next_look: Option<Instant>,
    victims: Vec<Victim>,
}

impl std::fmt::Debug for ServerEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerEvents")
            .field("start", &self.start)
            .field("victims", &self.victims)
            .finish_non_exhaustive()
    }
}

impl ServerEvents {
    #[must_use]
    pub fn new(server: &Server) -> Self {
        Self {
            server: server.clone(),
            client: None,
            start: None,
            sessions: 0,
            last_ok: 0.0,
            down: None,
            waited_until: None,
            said_down: false,
            host_restart: None,
            next_look: None,
            victims: Vec::new(),
        }
    }

    /// The earliest kill whose outcome the server has not told yet: the night's clock waits
    /// there (bounded by `VICTIM_BOUND`), so the outcome is said on the kill's second and not
    /// wherever the clock had run to when the server answered.
    /// Never longer than `VICTIM_BOUND`, even if the server cannot be reached meanwhile.
    #[must_use]
    fn awaited_at(&self, now: Instant) -> Option<f64> {
        (self.victims.iter())
            .filter(|v| now.saturating_duration_since(v.since) < VICTIM_BOUND)
            .map(|v| v.at)
            .reduce(f64::min)
    }

    /// The moment the server was first found gone, for as long as the workers may wait for it:
    /// no work can be done meanwhile, so the outage takes none of the night's time (at 600x a
    /// 12 s outage would be two hours of it, and the heartbeat's alarm with it). Twice the wait
    /// and a connection's bound: a worker lost to the outage is restarted on its moment (the
    /// clock goes on to the restarts due) and then waits the whole wait itself, counted from
    /// its start (on a loaded machine a worker's start alone can take seconds).
    #[must_use]
    fn down_at(&self, now: Instant) -> Option<f64> {
        let waited = self.waited_until.is_some_and(|until| now < until);
        (self.down.as_ref())
            .filter(|(_, since, _)| {
                waited || now.saturating_duration_since(*since) < self.server.wait * 2 + OUTLASTS
            })
            .map(|(at, _, _)| *at)
    }

    /// Looks at the server (at most every `LOOK_EVERY`, or `VICTIM_EVERY` while a kill's
    /// outcome is awaited); `sim` is the night's clock now.
    fn look_at(&mut self, now: Instant, sim: f64) -> Vec<Said> {
        if self.next_look.is_some_and(|at| now < at) {
            return Vec::new();
        }
        let every = if self.victims.is_empty() {
            LOOK_EVERY
        } else {
            VICTIM_EVERY
        };
        self.next_look = Some(now + every);
        let mut said = Vec::new();
        match self.server_state() {
            Ok((start, sessions)) => {
                said.extend(self.back(&start, sim));
                self.last_ok = sim;
                self.start = Some(start);
                self.sessions = sessions;
                said.extend(self.settle_victims(now));
            }
            Err(Unreached(detail)) => {
                self.client = None;
                let (_, since, _) = self.down.get_or_insert((sim, now, detail));
                let said_after = DOWN_SAID_AFTER.min(self.server.wait);
                if !self.said_down && now.saturating_duration_since(*since) >= said_after {
                    self.said_down = true;
                    let (at, _, detail) = self
                        .down
                        .as_ref()
                        .map_or((sim, now, ""), |d| (d.0, d.1, d.2.as_str()));
                    said.push(Said {
                        lane: None,
                        error: true,
                        text: format!(
                            "warehouse unreachable since {}: {detail}; the night's clock waits with the workers, up to {} s of real time (--server-wait)",
                            SimTime(at),
                            self.server.wait.as_secs()
                        ),
                        at: None,
                    });
                }
            }
        }
        said
    }

    /// The server answered again: a new start time is a restart, said once with the sessions it
    /// ended; the same one after an outage is said as such.
    fn back(&mut self, start: &str, sim: f64) -> Option<Said> {
        let down = self.down.take();
        self.waited_until = None;
        let said_down = std::mem::take(&mut self.said_down);
        let restarted = self.start.as_deref().is_some_and(|s| s != start);
        let at = down.as_ref().map_or(sim, |d| d.0);
        let by_host = self.host_restart.take().filter(|_| restarted);
        let text = if let Some(moment) = by_host {
            // No count of the sessions lost: the last look before the restart samples them on
            // the real clock, so the same night would say 4 on one run and 5 on the next. The
            // host's own line says what a restart ends.
            format!(
                "warehouse restarted by the host at {}: a new server answers (its start time changed); the night goes on",
                SimTime(moment)
            )
        } else if restarted {
            // This look's own session was one of them too.
            let lost = self.sessions + 1;
            // Two looks bound the moment: the last that found the old server, the first that
            // did not (or this one, if none failed between).
            format!(
                "warehouse restarted between {} and {}: {lost} connections lost (reclaim's sessions at the last look before it); the night goes on",
                SimTime(self.last_ok),
                SimTime(at)
            )
        } else if said_down {
            format!(
                "warehouse reachable again (unreachable since {}; the same server, not restarted)",
                SimTime(at)
            )
        } else {
            return None;
        };
        // At the clock's reading, which stood at the first look that missed the server (or
        // went on only to the restarts due since), so the line is stamped about when it says;
        // the host's own restart at its moment, beside the host's line.
        Some(Said {
            lane: None,
            error: false,
            text,
            at: by_host,
        })
    }

    /// The server's start time and reclaim's other sessions, on this watch's connection.
    fn server_state(&mut self) -> Result<(String, i64), Unreached> {
        if self.client.is_none() {
            self.client = Some(self.server.connect_or_lost(None).map_err(|e| match e {
                WarehouseError::Lost { detail, .. } | WarehouseError::Connect { detail, .. } => {
                    Unreached(detail)
                }
                other => Unreached(other.to_string()),
            })?);
        }
        let Some(client) = self.client.as_mut() else {
            return Err(Unreached("no connection".into()));
        };
        let row = client
            .query_one(
                "SELECT pg_postmaster_start_time()::text, (SELECT count(*) FROM pg_stat_activity
                   WHERE application_name LIKE 'reclaim/%' AND pid <> pg_backend_pid())",
                &[],
            )
            .map_err(|e| {
                if !is_lost(&e) {
                    // Not the server's state: a look that failed is simply tried again.
                    self.client = None;
                }
                Unreached(crate::warehouse::error::describe(&e))
            })?;
        Ok((row.get(0), row.get(1)))
    }

    /// Reads the sessions of the processes `pids` (stopped by the caller, about to be killed):
    /// what each had open, followed until the server has dealt with it.
    fn sessions_before_kill(
        &mut self,
        lane: usize,
        pids: &[i32],
        (now, sim): (Instant, f64),
    ) -> Vec<Said> {
        let missing = self.read_sessions(lane, pids, (now, sim));
        Self::unfollowed(
            (lane, sim),
            &missing,
            "had no session on the server: nothing for it to abort",
        )
    }

    /// `before_kill` for a worker found dead (killed by someone else): its session, if the
    /// server has not ended it yet.
    fn session_after_death(
        &mut self,
        lane: usize,
        pid: i32,
        (now, sim): (Instant, f64),
    ) -> Vec<Said> {
        let missing = self.read_sessions(lane, &[pid], (now, sim));
        Self::unfollowed(
            (lane, sim),
            &missing,
            "had no session left when looked at: what it had open cannot be told from here",
        )
    }

    fn unfollowed((lane, sim): (usize, f64), pids: &[i32], why: &str) -> Vec<Said> {
        (pids.iter())
            .map(|pid| Said {
                lane: Some(lane),
                error: false,
                text: format!("the killed worker (pid {pid}) {why}"),
                at: Some(sim),
            })
            .collect()
    }

    /// Follows the sessions of `pids`; returns the pids with none (or all, unread).
    fn read_sessions(&mut self, lane: usize, pids: &[i32], (now, sim): (Instant, f64)) -> Vec<i32> {
        let names: Vec<String> = pids
            .iter()
            .filter_map(|&p| u32::try_from(p).ok())
            .map(application_name_of)
            .collect();
        if names.is_empty() {
            return Vec::new();
        }
        if self.client.is_none() {
            self.client = self.server.connect_or_lost(None).ok();
        }
        let Some(client) = self.client.as_mut() else {
            return pids.to_vec();
        };
        let rows = client.query(
            "SELECT application_name, pid, coalesce(state, ''), backend_xid::text,
                    pg_snapshot_xmax(pg_current_snapshot())::text
             FROM pg_stat_activity WHERE application_name = ANY($1)",
            &[&names],
        );
        let Ok(rows) = rows else {
            self.client = None;
            return pids.to_vec();
        };
        let mut missing = pids.to_vec();
        // What the server did is looked for at once: the clock waits on it (`awaited`).
        self.next_look = None;
        for row in rows {
            let name: String = row.get(0);
            let Some(pid) = name.strip_prefix("reclaim/").and_then(|p| p.parse().ok()) else {
                continue;
            };
            missing.retain(|&p| p != pid);
            let xid: Option<String> = row.get(3);
            let xmax: String = row.get(4);
            self.victims.push(Victim {
                lane,
                pid,
                backend: row.get(1),
                xid: xid.and_then(|x| widen(&x, &xmax)),
                state: row.get(2),
                since: now,
                at: sim,
            });
        }
        missing
    }

    /// What the server did with each killed worker's transaction, once it has done it.
    fn settle_victims(&mut self, now: Instant) -> Vec<Said> {
        let Some(client) = self.client.as_mut() else {
            return Vec::new();
        };
        let mut said = Vec::new();
        let mut kept = Vec::new();
        for victim in std::mem::take(&mut self.victims) {
            let row = client.query_one(
                "SELECT pg_xact_status($1::text::xid8), EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $2)",
                &[&victim.xid, &victim.backend],
            );
            let Ok(row) = row else {
                kept.push(victim);
                continue;
            };
            let status: Option<String> = row.get(0);
            let session_there: bool = row.get(1);
            let overdue = now.saturating_duration_since(victim.since) >= VICTIM_BOUND;
            if let Some(text) = victim_outcome(&victim, status.as_deref(), session_there, overdue) {
                said.push(Said {
                    lane: Some(victim.lane),
                    error: false,
                    text,
                    at: Some(victim.at),
                });
            } else {
                kept.push(victim);
            }
        }
        self.victims = kept;
        said
    }
}

/// What to say of a killed worker's transaction, once there is something to say: `status` is
/// `pg_xact_status` of its open transaction (`None` when it had none with writes).
fn victim_outcome(
    victim: &Victim,
    status: Option<&str>,
    session_there: bool,
    overdue: bool,
) -> Option<String> {
    let (pid, backend) = (victim.pid, victim.backend);
    let xid = victim.xid.as_deref().unwrap_or("");
    match (status, session_there) {
        (Some("aborted"), false) => Some(format!(
            "server aborted the killed worker's open transaction (pid {pid}, xid {xid}: pg_xact_status aborted, backend {backend} gone): none of its uncommitted rows is in the table"
        )),
        (Some("committed"), false) => Some(format!(
            "the killed worker's last transaction (pid {pid}, xid {xid}) committed (pg_xact_status committed, backend {backend} gone): before the kill landed, or after it, the server finishing what the worker had sent; its rows are in the table, nothing to abort"
        )),
        (None, false) => Some(format!(
            "the killed worker (pid {pid}) had no transaction with writes open (its session was {}): nothing for the server to abort; backend {backend} gone",
            if victim.state.is_empty() {
                "idle"
            } else {
                victim.state.as_str()
            }
        )),
        _ if overdue => Some(format!(
            "the killed worker's session (pid {pid}, backend {backend}) is still there after {} s: the server has not ended it yet",
            VICTIM_BOUND.as_secs()
        )),
        _ => None,
    }
}

/// A 32-bit `xid` widened to the 64-bit `xid8` that `pg_xact_status` takes, by the epoch of
/// `xmax` (a current `xid8`): an xid above xmax's low half is from the epoch before.
fn widen(xid: &str, xmax: &str) -> Option<String> {
    let xid: u64 = xid.parse().ok()?;
    let xmax: u64 = xmax.parse().ok()?;
    let mut epoch = xmax >> 32;
    if xid > (xmax & 0xffff_ffff) && epoch > 0 {
        epoch -= 1;
    }
    Some(((epoch << 32) | xid).to_string())
}

impl ServerWatch for ServerEvents {
    fn awaited(&self, now: Instant) -> Option<f64> {
        self.awaited_at(now)
    }

    fn down_since(&self, now: Instant) -> Option<f64> {
        self.down_at(now)
    }

    fn worker_started(&mut self, now: Instant) {
        if self.down.is_some() {
            let until = now + self.server.wait + OUTLASTS;
            self.waited_until = Some(self.waited_until.map_or(until, |u| u.max(until)));
        }
    }

    fn host_restarted(&mut self, sim: f64) {
        self.host_restart = Some(sim);
        // The next look, the engine's as soon as the restart is done, is made at once and on
        // a new connection: the old one went with the server.
        self.next_look = None;
        self.client = None;
    }

    fn look(&mut self, now: Instant, sim: f64) -> Vec<Said> {
        self.look_at(now, sim)
    }

    fn before_kill(&mut self, lane: usize, pids: &[i32], at: (Instant, f64)) -> Vec<Said> {
        self.sessions_before_kill(lane, pids, at)
    }

    fn after_death(&mut self, lane: usize, pid: i32, at: (Instant, f64)) -> Vec<Said> {
        self.session_after_death(lane, pid, at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_xid_takes_the_epoch_of_the_present_or_the_one_before() {
        assert_eq!(widen("745", "800").as_deref(), Some("745"));
        assert_eq!(
            widen("745", &((3u64 << 32) + 800).to_string()).as_deref(),
            Some(((3u64 << 32) + 745).to_string().as_str())
        );
        // Wrapped since: the xid is from the epoch before.
        assert_eq!(
            widen("4294967000", &((3u64 << 32) + 10).to_string()).as_deref(),
            Some(((2u64 << 32) + 4_294_967_000).to_string().as_str())
        );
        assert_eq!(widen("x", "1"), None);
    }

    #[test]
    fn a_kill_is_said_only_once_the_server_has_settled_it() {
        let victim = Victim {
            lane: 0,
            pid: 42,
            backend: 7,
            xid: Some("745".into()),
            state: "idle in transaction".into(),
            since: Instant::now(),
            at: 731.0,
        };
        assert_eq!(
            victim_outcome(&victim, Some("in progress"), true, false),
            None
        );
        assert_eq!(victim_outcome(&victim, Some("aborted"), true, false), None);
        let aborted = victim_outcome(&victim, Some("aborted"), false, false);
        assert!(
            aborted.as_deref().is_some_and(|t| t.starts_with(
                "server aborted the killed worker's open transaction (pid 42, xid 745:"
            )),
            "{aborted:?}"
        );
        assert!(
            victim_outcome(&victim, Some("in progress"), true, true)
                .is_some_and(|t| t.contains("still there"))
        );
        let idle = Victim {
            xid: None,
            ..victim
        };
        assert!(
            victim_outcome(&idle, None, false, false)
                .is_some_and(|t| t.contains("no transaction with writes open"))
        );
    }
}
