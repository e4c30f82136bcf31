//! Scenario files are data: a lane that runs a command the file names (an `exec` lane, and
//! its `setup_sql`) runs only when the user passes `--allow-exec`, and the user is shown each
//! command in full first, so opening a file someone sent cannot run what it says unseen.

use crate::base::text::escape_controls;
use crate::engine::LaneWorker;

use super::{Scenario, ScenarioError};

/// The flag that lets a scenario's commands run.
pub const ALLOW_EXEC: &str = "--allow-exec";

/// One command a scenario would run: the lane it belongs to, the command (for `sh -c`) and the
/// SQL it would run first on the lane's new database.
#[derive(Debug, Clone, PartialEq)]
pub struct LaneCommand {
    pub lane: String,
    pub command: String,
    pub setup_sql: Option<String>,
}

impl LaneCommand {
    /// The command in full, control characters escaped (a newline cannot hide a second line).
    #[must_use]
    pub fn describe(&self) -> String {
        let setup = self
            .setup_sql
            .as_ref()
            .map(|sql| format!(" after SQL `{}`", escape_controls(sql)))
            .unwrap_or_default();
        format!(
            "lane {} runs `{}`{setup}",
            escape_controls(&self.lane),
            escape_controls(&self.command)
        )
    }
}

impl Scenario {
    /// Every command this scenario would run, in lane order; empty for the shipped ones.
    #[must_use]
    pub fn commands(&self) -> Vec<LaneCommand> {
        self.lanes
            .iter()
            .filter_map(|lane| match &lane.worker {
                LaneWorker::Exec(job) => Some(LaneCommand {
                    lane: lane.name.clone(),
                    command: job.command.clone(),
                    setup_sql: job.setup_sql.clone(),
                }),
                LaneWorker::Strategy(_) => None,
            })
            .collect()
    }

    /// Refuses a scenario that runs commands unless `allowed`; the refusal names each command
    /// in full. Returns the commands that will run, for the caller to show before starting.
    pub fn consent(&self, allowed: bool) -> Result<Vec<LaneCommand>, ScenarioError> {
        let commands = self.commands();
        if commands.is_empty() || allowed {
            return Ok(commands);
        }
        Err(ScenarioError::RunsCommands {
            source_name: self.source.clone(),
            commands: commands
                .iter()
                .map(LaneCommand::describe)
                .collect::<Vec<_>>()
                .join("; "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVIL: &str = "title = \"t\"\n[[lane]]\nname = \"guarded-v2\"\n\
                        exec = \"touch pwned\\necho hi\"\n[[lane]]\nstrategy = \"guarded\"\n";

    #[test]
    fn a_scenario_with_a_command_is_refused_without_the_flag_and_names_it_in_full() {
        let scenario = Scenario::parse("evil.toml", EVIL).unwrap_or_else(|e| panic!("{e}"));
        let err = scenario
            .consent(false)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("lane guarded-v2 runs `touch pwned\\necho hi`"),
            "{err}"
        );
        assert!(err.contains(ALLOW_EXEC), "{err}");
        assert!(!err.contains('\n'), "{err}");
        let allowed = scenario.consent(true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(allowed.len(), 1);
        assert_eq!(allowed[0].command, "touch pwned\necho hi");
    }

    #[test]
    fn shipped_scenarios_run_no_command() {
        for (name, text) in super::super::SHIPPED {
            let scenario = Scenario::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert!(scenario.consent(false).is_ok(), "{name}");
        }
    }
}
