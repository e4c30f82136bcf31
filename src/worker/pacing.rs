//! How fast a worker writes: the gate a supervisor opens write by write (`Gate`), and the pause
//! after each item that a pace command on stdin may change while it runs (`LiveDelay`).

use std::io::{self, BufRead as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::protocol;

/// What a gated worker may write: the supervisor grants writes as its sim clock reaches their
/// moment, so the real pace follows the clock shown and never the other way round.
#[derive(Debug, Clone, Default)]
pub(super) struct Gate {
    granted: Arc<(Mutex<Granted>, Condvar)>,
    /// Steps of the long item's work granted (`protocol::StepGrant`).
    steps: Arc<(Mutex<u64>, Condvar)>,
}

/// The writes granted so far, and the night's moment of the last of them (the latest a grant
/// named: `None` while none did).
#[derive(Debug, Clone, Copy, Default)]
struct Granted {
    upto: u64,
    at: Option<f64>,
}

impl Gate {
    pub(super) fn grant(&self, upto: u64, at: Option<f64>) {
        let (lock, ready) = &*self.granted;
        if let Ok(mut granted) = lock.lock() {
            granted.upto = granted.upto.max(upto);
            if let Some(at) = at {
                granted.at = Some(granted.at.map_or(at, |was| was.max(at)));
            }
            ready.notify_all();
        }
    }

    pub(super) fn grant_steps(&self, steps: u64) {
        raise(&self.steps, steps);
    }

    /// Whether every write has been granted (`grant` of `u64::MAX`: a night at full speed).
    pub(super) fn unlimited(&self) -> bool {
        let (lock, _) = &*self.granted;
        lock.lock().is_ok_and(|granted| granted.upto == u64::MAX)
    }

    /// Blocks until `need` writes in all have been granted, and, with `wake`, until a grant
    /// names a moment no earlier than it (a claim worker woken when a lease ends). Returns the
    /// moment the grants have reached, if they name one.
    pub(super) fn wait_for(&self, need: u64, wake: Option<f64>) -> Option<f64> {
        // The engine's moment for the write it grants is computed, not copied: it may miss the
        // wake by a rounding.
        let early = |at: Option<f64>| wake.is_some_and(|w| at.is_none_or(|at| at + 1e-6 < w));
        let (lock, ready) = &*self.granted;
        let Ok(mut granted) = lock.lock() else {
            return None;
        };
        while granted.upto < need || (granted.upto != u64::MAX && early(granted.at)) {
            match ready.wait(granted) {
                Ok(next) => granted = next,
                Err(_) => return None,
            }
        }
        granted.at
    }

    /// Blocks until `steps` steps of the long item's work in all have been granted.
    pub(super) fn wait_steps(&self, steps: u64) {
        wait_until(&self.steps, steps);
    }
}

fn raise(count: &(Mutex<u64>, Condvar), to: u64) {
    let (lock, ready) = count;
    if let Ok(mut granted) = lock.lock() {
        *granted = (*granted).max(to);
        ready.notify_all();
    }
}

fn wait_until(count: &(Mutex<u64>, Condvar), need: u64) {
    let (lock, ready) = count;
    let Ok(mut granted) = lock.lock() else { return };
    while *granted < need {
        match ready.wait(granted) {
            Ok(next) => granted = next,
            Err(_) => return,
        }
    }
}

/// The pause after each item. A supervisor may change it while the worker runs (the dashboard's
/// speed keys), and a change applies within the current pause, not only from the next item.
#[derive(Debug, Clone)]
pub(super) struct LiveDelay {
    delay_us: Arc<AtomicU64>,
}

impl LiveDelay {
    pub(super) fn new(delay: Duration) -> Self {
        Self {
            delay_us: Arc::new(AtomicU64::new(delay.as_micros() as u64)),
        }
    }

    /// Reads pace commands (`protocol::SetDelay`) and grants (`protocol::Grant`,
    /// `protocol::StepGrant`, for `gate`) from
    /// stdin for as long as stdin stays open.
    pub(super) fn follow_stdin(&self, gate: Option<Gate>) {
        let delay_us = Arc::clone(&self.delay_us);
        thread::spawn(move || {
            for line in io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if let Ok(pace) = line.parse::<protocol::SetDelay>() {
                    delay_us.store(pace.delay.as_micros() as u64, Ordering::Relaxed);
                } else if let (Some(gate), Ok(grant)) = (&gate, line.parse::<protocol::Grant>()) {
                    gate.grant(grant.upto, grant.at.map(|m| m.0));
                } else if let (Some(gate), Ok(grant)) = (&gate, line.parse::<protocol::StepGrant>())
                {
                    gate.grant_steps(grant.steps);
                }
            }
            // The supervisor is gone (its death signal kills this process too); a gate left
            // shut would only leave a process waiting for no one.
            if let Some(gate) = &gate {
                gate.grant(u64::MAX, None);
                gate.grant_steps(u64::MAX);
            }
        });
    }

    /// Sleeps until `items` times the delay has passed since `started`, re-reading the delay as
    /// it goes.
    pub(super) fn wait(&self, started: Instant, items: u32) {
        const SLICE: Duration = Duration::from_millis(10);
        loop {
            let delay = Duration::from_micros(self.delay_us.load(Ordering::Relaxed))
                .checked_mul(items)
                .unwrap_or(Duration::MAX);
            let Some(left) = delay.checked_sub(started.elapsed()) else {
                return;
            };
            if left.is_zero() {
                return;
            }
            thread::sleep(left.min(SLICE));
        }
    }
}
