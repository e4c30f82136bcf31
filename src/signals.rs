//! Ctrl-C, SIGTERM and SIGHUP become a flag the driving loop checks, so every exit path goes
//! through the same cleanup (kill the workers, restore the terminal). SIGCONT (reclaim itself was
//! stopped) and, for the dashboard, SIGTSTP (Ctrl-Z) become flags too.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGTERM, SIGTSTP};

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
static CONTINUED: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static SUSPEND: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Registers the handlers (once per process).
pub fn install() -> std::io::Result<()> {
    if RECEIVED.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicUsize::new(0));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(signal, Arc::clone(&flag), signal as usize)?;
    }
    // A handler does not change what SIGCONT does (the process continues); it only tells the
    // engine that it was stopped, so the time it was not watching is not counted as a worker's
    // silence.
    let continued = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(SIGCONT, Arc::clone(&continued))?;
    let _ = CONTINUED.set(continued);
    let _ = RECEIVED.set(flag);
    Ok(())
}

/// Catches SIGTSTP (the dashboard's: it must restore the terminal before it stops, and stops
/// itself with `stop_self`). Headless commands keep the default: stop at once.
pub fn catch_suspend() -> std::io::Result<()> {
    if SUSPEND.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(SIGTSTP, Arc::clone(&flag))?;
    let _ = SUSPEND.set(flag);
    Ok(())
}

/// Asks the dashboard's loop to suspend, as SIGTSTP does (Ctrl-Z arrives as a key in raw mode).
pub fn request_suspend() {
    if let Some(flag) = SUSPEND.get() {
        flag.store(true, Ordering::SeqCst);
    }
}

/// Whether SIGTSTP arrived since the last call.
pub fn take_suspend() -> bool {
    SUSPEND
        .get()
        .is_some_and(|flag| flag.swap(false, Ordering::SeqCst))
}

/// Whether reclaim was stopped and continued (SIGCONT) since the last call.
pub fn take_continued() -> bool {
    CONTINUED
        .get()
        .is_some_and(|flag| flag.swap(false, Ordering::SeqCst))
}

/// Stops the whole process as the default SIGTSTP would (the shell sees the job stopped); returns
/// once it has been continued (`fg`, SIGCONT).
pub fn stop_self() -> std::io::Result<()> {
    signal_hook::low_level::raise(signal_hook::consts::SIGSTOP)
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
