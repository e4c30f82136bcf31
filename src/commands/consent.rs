//! What a scenario's commands need before they run: the user's `--allow-exec`, and each command
//! shown in full (for `run` on stderr, for the dashboard on the terminal with Enter to go on,
//! since the dashboard's screen would cover anything printed before it).

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use crate::error::Error;
use crate::scenario::Scenario;

/// `run --scenario`: refused without the flag; with it, each command on stderr before the
/// night starts (stdout stays the timeline or the JSON).
pub(super) fn for_run(scenario: &Scenario, allowed: bool) -> Result<(), Error> {
    for command in scenario.consent(allowed)? {
        eprintln!("reclaim: {} (--allow-exec)", command.describe());
    }
    Ok(())
}

/// The dashboard: refused without the flag; with it, the commands on the terminal and Enter
/// to start the night (anything else typed first stops it, nothing run).
pub(super) fn for_dashboard(scenario: &Scenario, allowed: bool) -> Result<(), Error> {
    let commands = scenario.consent(allowed)?;
    if commands.is_empty() || !std::io::stdin().is_terminal() {
        // Without a terminal the dashboard refuses to start anyway, before any command runs.
        return Ok(());
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "reclaim: this scenario runs commands of its own (--allow-exec):"
    );
    for command in &commands {
        let _ = writeln!(err, "  {}", command.describe());
    }
    let _ = write!(err, "press Enter to start the night, Ctrl-C to stop: ");
    let _ = err.flush();
    let mut answer = String::new();
    let read = std::io::stdin().lock().read_line(&mut answer);
    match read {
        Ok(n) if n > 0 && answer.trim().is_empty() => Ok(()),
        _ => Err(Error::Refused(
            "stopped before the night began; none of the scenario's commands was run".into(),
        )),
    }
}
