//! The wire between the supervisor and a worker, written once for both sides: the command line
//! that starts a worker (`WorkerConfig::to_args`, parsed back by clap's `WorkerArgs`), the lines
//! a worker prints on stdout (`line`: `WorkerLine`, with a gated worker's `wait`/`wrote`/`wake`),
//! and the commands it reads on stdin (`commands`: `Grant` and `StepGrant` for a gated worker,
//! `SetDelay` for one that paces itself).
//!
//! Someone else's program (`run --exec`) speaks none of that: it gets `ExecEnv`, a folder and a
//! few variables, and its lines are its own (`WorkerLine::Other`) but for its crash points
//! (`points`, `WorkerLine::Point`).
//!
//! Each has `Display` and `FromStr`, and the tests round-trip them, so a field added on one
//! side and forgotten on the other fails a test instead of a night.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

mod commands;
mod line;
pub mod points;

pub use commands::{Grant, Moment, NotACommand, SetDelay, StepGrant};
pub use line::{ERROR_PREFIX, Relay, Resume, Step, WorkerLine, claimed_rows, error_reason};

use super::WorkerConfig;
use crate::warehouse::SyncMode;

impl WorkerConfig {
    /// The arguments after `reclaim` that start a worker with this configuration.
    #[must_use]
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["worker".into(), "--strategy".into()];
        args.push(self.strategy.name().into());
        args.push("--db".into());
        args.push(self.db.clone().into_os_string());
        args.push("--heartbeat".into());
        args.push(self.heartbeat.clone().into_os_string());
        for (flag, value) in [
            ("--items", self.items.to_string()),
            ("--delay-ms", delay_ms(self.delay)),
            ("--batch", self.batch.to_string()),
            ("--sync", sync_name(self.sync).to_string()),
        ] {
            args.push(flag.into());
            args.push(value.into());
        }
        if let Some(crash) = self.crash_at {
            args.push("--crash-at".into());
            args.push(crash.to_string().into());
        }
        if let Some(pause) = self.pause_at {
            args.push("--pause-at".into());
            args.push(pause.to_string().into());
        }
        if self.supervised {
            args.push("--supervised".into());
        }
        if self.gated {
            args.push("--gated".into());
            args.push("--scale".into());
            args.push(self.scale.to_string().into());
        }
        if let Some(effect) = self.side_effect {
            args.push("--side-effect".into());
            args.push(side_effect_name(effect).into());
        }
        if let Some(vendor) = self.vendor {
            args.push("--vendor".into());
            args.push(vendor.to_string().into());
        }
        if let Some(long) = self.long_item {
            args.push("--long-item".into());
            args.push(long.to_string().into());
        }
        if self.split > 1 {
            args.push("--split".into());
            args.push(self.split.to_string().into());
        }
        if self.quiet_writes {
            args.push("--quiet-writes".into());
        }
        if self.retry_writes > 0 {
            args.push("--retry-writes".into());
            args.push(self.retry_writes.to_string().into());
        }
        if let Some(pages) = self.wal_autocheckpoint {
            args.push("--wal-autocheckpoint".into());
            args.push(pages.to_string().into());
        }
        args
    }
}

/// What an external worker is told, through its environment and its working folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecEnv {
    /// The database, absolute (`RECLAIM_DB`); the job runs in its folder.
    pub db: PathBuf,
    /// The file reclaim watches for progress (`HEARTBEAT_FILE`, the postmortem's name).
    pub heartbeat: PathBuf,
    /// The queue size (`RECLAIM_ITEMS`).
    pub items: u64,
    /// The queue's keys, one a line (`RECLAIM_KEYS_FILE`), in the queue's order; `None` for a
    /// queue too long to write out (over `queue::MAX_LISTED` keys).
    pub keys: Option<PathBuf>,
    /// Where this attempt is to die (`RECLAIM_CRASH_AT=KEY:POINT`), if anywhere.
    pub crash_at: Option<String>,
    /// The night's vendor (`RECLAIM_VENDOR_URL=http://127.0.0.1:PORT/messages`), if it has one.
    pub vendor: Option<String>,
    /// 1 for the first attempt, 2 after the first restart, ... (`RECLAIM_ATTEMPT`).
    pub attempt: u32,
    /// Which copy of the lane's job this is, 1 to `workers` (`RECLAIM_WORKER`): the same
    /// number across its restarts.
    pub worker: usize,
    /// How many copies of the job the lane runs side by side (`RECLAIM_WORKERS`, `--workers`).
    pub workers: usize,
    /// The night's pace per item (`RECLAIM_DELAY_MS`), for a job that wants to keep it (the
    /// examples do); the dashboard's speed keys cannot reach a job that reads no stdin.
    pub delay: Duration,
    /// The folder of the scenario file the job's lane is in (`RECLAIM_SCENARIO_DIR`), if any.
    pub scenario_dir: Option<PathBuf>,
}

impl ExecEnv {
    pub const DB: &'static str = "RECLAIM_DB";
    pub const HEARTBEAT: &'static str = "HEARTBEAT_FILE";
    pub const ITEMS: &'static str = "RECLAIM_ITEMS";
    pub const KEYS_FILE: &'static str = "RECLAIM_KEYS_FILE";
    pub const VENDOR_URL: &'static str = "RECLAIM_VENDOR_URL";
    pub const ATTEMPT: &'static str = "RECLAIM_ATTEMPT";
    pub const WORKER: &'static str = "RECLAIM_WORKER";
    pub const WORKERS: &'static str = "RECLAIM_WORKERS";
    pub const DELAY_MS: &'static str = "RECLAIM_DELAY_MS";
    pub const SCENARIO_DIR: &'static str = "RECLAIM_SCENARIO_DIR";

    /// `sh -c command` under reclaim's `exec-guard` (`exe`), which leads the job's process
    /// group and takes the group down if reclaim dies (`commands::exec_guard`); in the database's
    /// folder (so a script that opens `warehouse.db` beside itself works unchanged), with the
    /// variables set.
    #[must_use]
    pub fn command(&self, exe: &Path, command: &str) -> Command {
        crate::base::orphans::become_subreaper();
        let mut sh = Command::new(exe);
        sh.arg("exec-guard")
            .arg("--parent")
            .arg(std::process::id().to_string())
            .arg("--")
            .arg(command);
        if let Some(folder) = self.db.parent().filter(|p| !p.as_os_str().is_empty()) {
            sh.current_dir(folder);
        }
        sh.env(Self::DB, &self.db)
            .env(Self::HEARTBEAT, &self.heartbeat)
            .env(Self::ITEMS, self.items.to_string())
            .env(Self::ATTEMPT, self.attempt.to_string())
            .env(Self::WORKER, self.worker.to_string())
            .env(Self::WORKERS, self.workers.to_string())
            .env(Self::DELAY_MS, delay_ms(self.delay));
        match &self.crash_at {
            Some(at) => sh.env(crate::worker::protocol::points::CRASH_ENV, at),
            None => sh.env_remove(crate::worker::protocol::points::CRASH_ENV),
        };
        match &self.vendor {
            Some(url) => sh.env(Self::VENDOR_URL, url),
            None => sh.env_remove(Self::VENDOR_URL),
        };
        match &self.keys {
            Some(keys) => sh.env(Self::KEYS_FILE, keys),
            None => sh.env_remove(Self::KEYS_FILE),
        };
        match &self.scenario_dir {
            Some(dir) => sh.env(Self::SCENARIO_DIR, dir),
            None => sh.env_remove(Self::SCENARIO_DIR),
        };
        sh
    }

    /// `db` made absolute against the current folder, as `RECLAIM_DB` promises.
    #[must_use]
    pub fn absolute(db: &Path) -> PathBuf {
        std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf())
    }
}

/// A delay in milliseconds, to the microsecond (what `WorkerArgs::delay` keeps), as a job reads
/// it from `RECLAIM_DELAY_MS` and the banner prints it: a whole number without a point (`7`, so
/// `int(...)` reads it), else the shortest decimal (`62.5`, `0.001`).
#[must_use]
pub fn delay_ms(delay: Duration) -> String {
    let us = delay.as_micros();
    let (whole, micros) = (us / 1000, us % 1000);
    if micros == 0 {
        return whole.to_string();
    }
    let fraction = format!("{micros:03}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

fn side_effect_name(effect: super::SideEffect) -> &'static str {
    match effect {
        super::SideEffect::Email => "email",
    }
}

fn sync_name(sync: SyncMode) -> &'static str {
    match sync {
        SyncMode::Normal => "normal",
        SyncMode::Full => "full",
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::Parser as _;

    use super::*;
    use crate::cli::{Cli, Subcommand};
    use crate::worker::{CrashAt, CrashPoint, Strategy};

    #[test]
    fn a_delay_is_told_as_an_integer_when_whole_else_its_shortest_decimal() {
        for (micros, told) in [
            (0, "0"),
            (7_000, "7"),
            (10_000, "10"),
            (62_500, "62.5"),
            (1, "0.001"),
            (1_230, "1.23"),
            (60_000_000, "60000"),
        ] {
            assert_eq!(delay_ms(Duration::from_micros(micros)), told, "{micros} us");
        }
    }

    #[test]
    fn the_argv_the_supervisor_builds_parses_back_to_the_same_worker() {
        let config = WorkerConfig {
            strategy: Strategy::TwoCommit,
            db: PathBuf::from("/tmp/a b/warehouse.db"),
            items: 200,
            delay: Duration::from_micros(6_286_123),
            heartbeat: PathBuf::from("/tmp/a b/warehouse.db.heartbeat"),
            batch: 3,
            crash_at: Some(CrashAt {
                task: 111,
                point: CrashPoint::AfterRowCommit,
            }),
            pause_at: Some(crate::worker::PauseAt {
                task: 12,
                secs: 60.5,
            }),
            sync: SyncMode::Full,
            supervised: true,
            gated: true,
            side_effect: Some(crate::worker::SideEffect::Email),
            vendor: Some(std::net::SocketAddr::from(([127, 0, 0, 1], 4242))),
            long_item: Some(crate::worker::LongItem {
                task: 50,
                work: Duration::from_millis(1500),
            }),
            scale: 600.0,
            split: 10,
            quiet_writes: true,
            retry_writes: 3,
            wal_autocheckpoint: Some(crate::warehouse::sqlite::wal::SHORT_WAL_PAGES),
            warehouse: crate::warehouse::Warehouse::Sqlite,
        };
        let mut command_line: Vec<OsString> = vec!["reclaim".into()];
        command_line.extend(config.to_args());
        let cli = Cli::try_parse_from(command_line).unwrap_or_else(|e| panic!("{e}"));
        let Some(Subcommand::Worker(parsed)) = cli.command else {
            panic!("not a worker command");
        };
        assert_eq!(parsed.to_config(), config);
    }

    #[test]
    fn an_external_worker_gets_its_folder_and_variables() {
        let env = ExecEnv {
            db: PathBuf::from("/tmp/night/warehouse.db"),
            heartbeat: PathBuf::from("/tmp/night/warehouse.db.heartbeat"),
            items: 200,
            crash_at: None,
            vendor: None,
            keys: Some(PathBuf::from("/tmp/w/warehouse.db.keys")),
            attempt: 3,
            worker: 2,
            workers: 3,
            delay: Duration::from_micros(62_500),
            scenario_dir: None,
        };
        let command = env.command(Path::new("/bin/reclaim"), "python3 job.py");
        assert_eq!(command.get_program(), "/bin/reclaim");
        let args: Vec<_> = command.get_args().collect();
        let parent = std::process::id().to_string();
        assert_eq!(
            args,
            [
                "exec-guard",
                "--parent",
                parent.as_str(),
                "--",
                "python3 job.py"
            ]
        );
        assert_eq!(command.get_current_dir(), Some(Path::new("/tmp/night")));
        let vars: Vec<(String, String)> = command
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
            .collect();
        for (key, value) in [
            ("RECLAIM_DB", "/tmp/night/warehouse.db"),
            ("HEARTBEAT_FILE", "/tmp/night/warehouse.db.heartbeat"),
            ("RECLAIM_ITEMS", "200"),
            ("RECLAIM_ATTEMPT", "3"),
            ("RECLAIM_WORKER", "2"),
            ("RECLAIM_WORKERS", "3"),
            ("RECLAIM_DELAY_MS", "62.5"),
        ] {
            assert!(
                vars.contains(&(key.into(), value.into())),
                "{key}: {vars:?}"
            );
        }
    }
}
