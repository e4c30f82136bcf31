//! Ctrl-C, SIGTERM and SIGHUP become a flag the driving loop checks, so every exit path goes
//! through the same cleanup (kill the workers, restore the terminal).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// Registers the handlers (once per process).
pub fn install() -> std::io::Result<()> {
    if RECEIVED.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicUsize::new(0));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(signal, Arc::clone(&flag), signal as usize)?;
    }
    let _ = RECEIVED.set(flag);
    Ok(())
}

/// The name of the signal received, if any.
#[must_use]
pub fn received() -> Option<&'static str> {
    match RECEIVED.get()?.load(Ordering::Relaxed) {
        0 => None,
        n if n == SIGINT as usize => Some("SIGINT"),
        n if n == SIGTERM as usize => Some("SIGTERM"),
        n if n == SIGHUP as usize => Some("SIGHUP"),
        _ => Some("a signal"),
    }
}
