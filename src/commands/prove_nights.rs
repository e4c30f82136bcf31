//! How `reclaim prove`'s nights are set up and driven: each in a fresh folder (or database) of
//! the proof's, paced alike, and (`--compare`) its tables compared with the undisturbed night's.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::engine::{EngineConfig, LaneConfig, LaneWorker, Pace};
use crate::error::{Context as _, Error};
use crate::harness::compare::Oracle;
use crate::harness::{RunReport, drive};
use crate::supervisor::schedule::KillPlan;
use crate::warehouse::Warehouse;
use crate::worker::CrashAt;

/// Sim seconds per real second in every proof night.
const SCALE: f64 = crate::engine::PROOF_SCALE;

/// What `prove --compare` says before its tests.
const COMPARE_HEADER: &str = "compare      the undisturbed night first: the job run to its end twice without a fault (night-reference-1, -2 in the proof's folder); each test's tables are compared with its final state";

pub(super) struct Prover {
    pub(super) worker: LaneWorker,
    /// An external job's database name, each night in a folder of its own.
    pub(super) db_name: Option<String>,
    pub(super) items: u64,
    pub(super) delay: Duration,
    pub(super) dir: PathBuf,
    pub(super) exe: PathBuf,
    pub(super) runs: u32,
    pub(super) progress_deadline: Option<Duration>,
    /// `--vendor`: the key policy of the vendor each night's job sends to.
    pub(super) vendor: Option<crate::fake_vendor::Keys>,
    /// Where every night's rows go.
    pub(super) warehouse: Warehouse,
    /// `--compare`: the undisturbed night every night's tables are compared with.
    pub(super) oracle: Option<Oracle>,
}

impl Prover {
    pub(super) fn lane(
        &mut self,
        label: &str,
        workers: usize,
        crash_at: Option<CrashAt>,
        delay: Duration,
    ) -> Result<LaneConfig, Error> {
        self.runs += 1;
        let db = match &self.db_name {
            // A job that opens its database relative to its folder finds it there (on
            // PostgreSQL the folder, `nightNN-...`, names the night's schema).
            Some(name) => {
                let folder = self.dir.join(format!("night{:02}-{label}", self.runs));
                std::fs::create_dir(&folder)
                    .context(|| format!("cannot create {}", folder.display()))?;
                folder.join(name)
            }
            None => self.dir.join(format!("{:02}-{label}.db", self.runs)),
        };
        // Each night's lane made ready before it starts (on PostgreSQL, a schema of its own).
        self.warehouse.claim_lane(&db)?;
        Ok(self.lane_at(label, db, workers, crash_at, delay))
    }

    /// A lane on `db` as every proof night's is configured (its folder made by the caller).
    pub(super) fn lane_at(
        &self,
        label: &str,
        db: PathBuf,
        workers: usize,
        crash_at: Option<CrashAt>,
        delay: Duration,
    ) -> LaneConfig {
        LaneConfig {
            name: label.to_string(),
            delay,
            paces: vec![Pace::per_item(delay.as_secs_f64() * SCALE)],
            workers,
            crash_at,
            vendor: crate::fake_vendor::VendorModes {
                keys: self.vendor.unwrap_or(crate::fake_vendor::Keys::Honour),
                ..crate::fake_vendor::VendorModes::default()
            },
            ..LaneConfig::new(self.worker.clone(), db, self.items)
        }
    }

    /// The night `lane` describes under `kills`, as every proof night is paced.
    pub(super) fn config(&self, lane: LaneConfig, kills: &KillPlan) -> EngineConfig {
        EngineConfig {
            // 20 ms of real time at the scale.
            restart_delay: 12.0,
            max_restarts: 1000,
            scale: SCALE,
            progress_deadline: self.progress_deadline,
            ..EngineConfig::new(vec![lane], kills.clone(), self.exe.clone())
        }
        .on(&self.warehouse)
    }

    /// Drives the night; with `--compare`, its tables compared with the undisturbed night's.
    pub(super) fn night(&self, lane: LaneConfig, kills: &KillPlan) -> Result<RunReport, Error> {
        let db = lane.db.clone();
        self.drive(&db, self.config(lane, kills))
    }

    /// The night `lane` describes with the private cluster restarted once the table holds
    /// `at_rows` rows.
    pub(super) fn night_restarted(
        &self,
        lane: LaneConfig,
        at_rows: u64,
    ) -> Result<RunReport, Error> {
        let db = lane.db.clone();
        let mut config = self.config(lane, &KillPlan::default());
        config.restart_server_at_rows = Some(at_rows);
        self.drive(&db, config)
    }

    /// Drives `config`, whose one lane writes to `db`.
    fn drive(&self, db: &std::path::Path, config: EngineConfig) -> Result<RunReport, Error> {
        let mut report = drive(config, |_| {})?;
        if let Some(oracle) = &self.oracle {
            report.state = oracle.differences(db)?;
        }
        Ok(report)
    }

    /// `--compare`: the undisturbed night, run twice in the proof's folder before the tests;
    /// said on `out` (none with `--json`).
    pub(super) fn undisturbed(
        &mut self,
        args: &crate::cli::CompareArgs,
        mut out: Option<&mut dyn Write>,
    ) -> Result<(), Error> {
        if let Some(out) = out.as_deref_mut() {
            let _ = writeln!(out, "{COMPARE_HEADER}");
        }
        let name = self.db_name.clone().unwrap_or_default();
        let lane = self.lane_at("reference", self.dir.join(name), 1, None, self.delay);
        let config = self.config(lane, &KillPlan::default());
        let scope = super::compare::scope(args);
        let oracle = Oracle::undisturbed(&config, &self.dir, scope)?;
        if let Some(out) = out {
            let _ = writeln!(out, "reference    {}", oracle.line());
        }
        self.oracle = Some(oracle);
        Ok(())
    }
}
