//! A long-lived helper process for a night (the vendor): spawned through `process::spawn`, so
//! it leads its own group, dies with reclaim (PDEATHSIG) and is killed by `kill_all` on every
//! exit path, like a worker; unlike a worker, the host's kills never reach it (it is not on the
//! instance), and it lives exactly as long as the night that started it.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::process;

/// How long a service may take to say where it listens.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// Why a service is not running: it could not be spawned, or it never said where it listens
/// (its first stderr line, or what it printed instead, says why).
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("the vendor could not be started: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("the vendor did not start: {said}")]
    NotListening { said: String },
}

#[derive(Debug)]
pub struct Service {
    child: Option<Child>,
    pid: i32,
    pub addr: SocketAddr,
}

impl Service {
    /// Starts `command` and waits for its first stdout line, `listening ADDR`.
    pub fn start(mut command: Command) -> Result<Self, ServiceError> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = process::spawn(command).map_err(ServiceError::Spawn)?;
        let pid = process::child_pid(&child);
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            // Reads the first line, then drains the rest so a chatty service never blocks.
            let _ = thread::Builder::new()
                .name(format!("reclaim-service-{pid}"))
                .spawn(move || {
                    let mut lines = super::lines::CappedLines::new(stdout);
                    let _ = tx.send(lines.next().and_then(Result::ok));
                    for _ in lines.by_ref() {}
                });
        }
        let stderr = child.stderr.take();
        let mut service = Self {
            child: Some(child),
            pid,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let first = rx.recv_timeout(READY_WITHIN).ok().flatten();
        let addr = first
            .as_deref()
            .and_then(|line| line.strip_prefix("listening "))
            .and_then(|a| a.trim().parse::<SocketAddr>().ok())
            .filter(|a| a.ip().is_loopback());
        let Some(addr) = addr else {
            service.stop();
            let said = stderr
                .and_then(|s| {
                    super::lines::CappedLines::new(s)
                        .next()
                        .and_then(Result::ok)
                })
                .unwrap_or_else(|| first.unwrap_or_else(|| "(nothing)".into()));
            return Err(ServiceError::NotListening { said });
        };
        if let Some(stderr) = stderr {
            let _ = thread::Builder::new()
                .name(format!("reclaim-service-err-{pid}"))
                .spawn(move || for _ in super::lines::CappedLines::new(stderr) {});
        }
        service.addr = addr;
        Ok(service)
    }

    /// Kills and reaps it (idempotent).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = process::signal_group(self.pid, Signal::SIGKILL);
            let _ = child.wait();
            process::forget(self.pid);
        }
    }

    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.stop();
    }
}
