//! `reclaim heartbeat-check`: the postmortem's dead-man's switch, for cron.

use std::io::Write as _;

use crate::base::exit::{DATA_WRONG, OK};
use crate::cli::HeartbeatCheckArgs;
use crate::error::{Context as _, Error};
use crate::heartbeat;

/// The dead-man's switch: fresh is 0; stale (or from the future: a clock that cannot judge must
/// alert) prints the alert, runs `--exec`, and is 1; a missing, unreadable or not regular file is
/// an error (2), refused before it is opened.
pub(super) fn run(args: &HeartbeatCheckArgs) -> Result<u8, Error> {
    let beat = heartbeat::read(&args.file, std::time::SystemTime::now())
        .context(|| format!("cannot read heartbeat {}", args.file.display()))?;
    let age = beat.age.as_secs();
    let task = crate::base::text::escape_controls(beat.task.as_deref().unwrap_or("no task"));
    // The one rule the live switch judges by too.
    let judged = heartbeat::judge(
        beat.ahead,
        std::time::Duration::from_secs(age),
        std::time::Duration::from_secs(args.max_age),
    );
    let Some(message) = judged.alert() else {
        let _ = writeln!(
            crate::base::out::stdout(),
            "runner heartbeat fresh: {age}s ({task})"
        );
        return Ok(OK);
    };
    let _ = writeln!(crate::base::out::stdout(), "{message}");
    if let Some(command) = &args.exec {
        run_alert(command, &message, age)?;
    }
    Ok(DATA_WRONG)
}

/// How long the switch gives its alert command before stopping it.
const ALERT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Runs the alert command (in a process group of its own, stopped as one): its failure is said
/// when it ends within `ALERT_WAIT`;
/// one still running then (a mail relay that hangs) is stopped, its whole group, and said so:
/// a switch run by cron every minute never waits long, never piles up, and never leaves a
/// process of its own behind. Whatever the command started goes with it when it ends, when it is
/// stopped, and when the switch is (SIGTERM, SIGINT, SIGHUP): the switch is the subreaper of
/// what leaves the group (`setsid`, a double fork).
fn run_alert(command: &str, message: &str, age: u64) -> Result<(), Error> {
    use std::os::unix::process::CommandExt as _;
    crate::base::signals::install().context(|| "cannot install signal handlers".into())?;
    crate::base::orphans::become_subreaper();
    let mut child = std::process::Command::new("sh")
        .args(["-c", command])
        .env("RECLAIM_ALERT", message)
        .env("RECLAIM_HEARTBEAT_AGE", age.to_string())
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .context(|| "cannot run --exec command".into())?;
    let until = std::time::Instant::now() + ALERT_WAIT;
    let group = i32::try_from(child.id()).map(nix::unistd::Pid::from_raw);
    // The command's group, then whatever left it: SIGKILL to each.
    let stop_all = || {
        if let Ok(group) = group {
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        }
        crate::base::orphans::kill_descendants();
    };
    loop {
        if let Some(signal) = crate::base::signals::received() {
            stop_all();
            let _ = child.wait();
            eprintln!(
                "reclaim: stopped by {signal}; the --exec command and everything it started were stopped"
            );
            return Ok(());
        }
        match child.try_wait() {
            Ok(Some(status)) => {
                // What it left running (a `&`, a `setsid`) would outlive the switch.
                stop_all();
                if !status.success() {
                    eprintln!("reclaim: warning: the --exec command failed ({status})");
                }
                return Ok(());
            }
            Ok(None) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Ok(None) => {
                // The group leads with the shell: the alert and whatever it started go with it.
                stop_all();
                let _ = child.wait();
                eprintln!(
                    "reclaim: the --exec command was still running after {} s and was stopped (SIGKILL to its process group); an alert should take seconds",
                    ALERT_WAIT.as_secs()
                );
                return Ok(());
            }
            Err(error) => {
                stop_all();
                eprintln!("reclaim: warning: cannot wait for the --exec command: {error}");
                return Ok(());
            }
        }
    }
}
