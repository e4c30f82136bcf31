//! `reclaim heartbeat-check`: the postmortem's dead-man's switch, for cron.

use std::io::Write as _;

use crate::cli::HeartbeatCheckArgs;
use crate::error::{Context as _, Error};
use crate::exit::{DATA_WRONG, OK};
use crate::heartbeat;

/// How far in the future a heartbeat may be before the switch stops trusting it: file systems
/// round times, and a network share's clock may be a little ahead.
const FUTURE_TOLERANCE: std::time::Duration = std::time::Duration::from_secs(2);

/// The dead-man's switch: fresh is 0; stale (or from the future: a clock that cannot judge must
/// alert) prints the alert, runs `--exec`, and is 1; a missing, unreadable or not regular file is
/// an error (2), refused before it is opened.
pub(super) fn run(args: &HeartbeatCheckArgs) -> Result<u8, Error> {
    let beat = heartbeat::read(&args.file, std::time::SystemTime::now())
        .context(|| format!("cannot read heartbeat {}", args.file.display()))?;
    let age = beat.age.as_secs();
    let task = crate::text::escape_controls(beat.task.as_deref().unwrap_or("no task"));
    let message = if beat.ahead > FUTURE_TOLERANCE {
        format!(
            "runner heartbeat from the future: {}s ahead of this clock (clock skew?)",
            beat.ahead.as_secs()
        )
    } else if age <= args.max_age {
        let _ = writeln!(
            crate::out::stdout(),
            "runner heartbeat fresh: {age}s ({task})"
        );
        return Ok(OK);
    } else {
        heartbeat::stale_message(beat.age)
    };
    let _ = writeln!(crate::out::stdout(), "{message}");
    if let Some(command) = &args.exec {
        run_alert(command, &message, age)?;
    }
    Ok(DATA_WRONG)
}

/// How long the switch waits for its alert command before leaving it to finish on its own.
const ALERT_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the alert command (its own process group, so a terminal's Ctrl-C or cron's cleanup of
/// the switch does not cut a page short): its failure is said when it ends within `ALERT_WAIT`;
/// one still running then (a slow mail relay) is left to finish and said so, so a switch run by
/// cron every minute never waits on it and never piles up.
fn run_alert(command: &str, message: &str, age: u64) -> Result<(), Error> {
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", command])
        .env("RECLAIM_ALERT", message)
        .env("RECLAIM_HEARTBEAT_AGE", age.to_string())
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .context(|| "cannot run --exec command".into())?;
    let until = std::time::Instant::now() + ALERT_WAIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if !status.success() {
                    eprintln!("reclaim: warning: the --exec command failed ({status})");
                }
                return Ok(());
            }
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(None) => {
                eprintln!(
                    "reclaim: the --exec command is still running after {} s (pid {}); it is left to finish on its own",
                    ALERT_WAIT.as_secs(),
                    child.id()
                );
                return Ok(());
            }
            Err(error) => {
                eprintln!("reclaim: warning: cannot wait for the --exec command: {error}");
                return Ok(());
            }
        }
    }
}
