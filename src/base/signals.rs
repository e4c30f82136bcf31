//! Ctrl-C, SIGTERM, SIGHUP and the other signals whose default is to end the process (SIGQUIT,
//! SIGUSR1, SIGUSR2, SIGALRM) become a flag the driving loop checks, so every exit path goes
//! through the same cleanup (kill the workers, restore the terminal). SIGCONT (reclaim itself was
//! stopped) and, for the dashboard, SIGTSTP (Ctrl-Z) become flags too. SIGXFSZ is caught so a
//! write past `ulimit -f` fails (EFBIG) and is said, instead of killing reclaim mid-line.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use signal_hook::consts::{
    SIGALRM, SIGCONT, SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ,
};

/// The signals that would end reclaim without its cleanup, and their names.
const ENDING: [(i32, &str); 7] = [
    (SIGINT, "SIGINT"),
    (SIGTERM, "SIGTERM"),
    (SIGHUP, "SIGHUP"),
    (SIGQUIT, "SIGQUIT"),
    (SIGUSR1, "SIGUSR1"),
    (SIGUSR2, "SIGUSR2"),
    (SIGALRM, "SIGALRM"),
];

static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
static CONTINUED: OnceLock<Arc<AtomicBool>> = OnceLock::new();
static SUSPEND: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Registers the handlers (once per process).
pub fn install() -> std::io::Result<()> {
    if RECEIVED.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicUsize::new(0));
    for (signal, _) in ENDING {
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
    let received = RECEIVED.get()?.load(Ordering::Relaxed);
    if received == 0 {
        return None;
    }
    let name = ENDING
        .iter()
        .find(|(signal, _)| *signal as usize == received);
    Some(name.map_or("a signal", |(_, name)| name))
}

/// Catches SIGXFSZ, for every command, first thing: a write past the file size limit (`ulimit
/// -f`) then fails with EFBIG ("File too large"), which the writer reports in one line (exit
/// 2), its temporary file removed, instead of reclaim dying with no word and a file cut
/// mid-line. Caught, not ignored: a caught signal is set back to its default across `exec`, so
/// someone else's job (`--exec`) meets the limit as it would without reclaim.
pub fn survive_file_limit() {
    let _ = signal_hook::flag::register(SIGXFSZ, Arc::new(AtomicBool::new(false)));
}

/// The resource limit a process killed by `signal` ran into, if that is what killed it
/// (SIGXFSZ: `ulimit -f`; SIGXCPU: `ulimit -t`): said as that, never as the host's kill.
#[must_use]
pub fn limit_named(signal: i32) -> Option<&'static str> {
    match signal {
        SIGXFSZ => Some("SIGXFSZ: it reached the file size limit (ulimit -f)"),
        SIGXCPU => Some("SIGXCPU: it reached the CPU time limit (ulimit -t)"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_limits_are_named_and_other_signals_are_not() {
        assert!(limit_named(SIGXFSZ).is_some_and(|s| s.contains("ulimit -f")));
        assert!(limit_named(SIGXCPU).is_some_and(|s| s.contains("ulimit -t")));
        for other in [SIGTERM, SIGINT, signal_hook::consts::SIGKILL, SIGUSR1] {
            assert_eq!(limit_named(other), None);
        }
    }
}
