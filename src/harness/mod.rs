//! The headless driver: one night driven through the same engine the dashboard draws, its
//! timeline handed out line by line as it happens, and the report derived from the rows at the
//! end. `run`, `prove`, `map` and `shrink` share it; `pool` runs many nights at once.

mod account;
mod not_fired;
pub mod pool;

pub use self::account::windows_account;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::base::exit;
use crate::base::signals;
use crate::engine::{Engine, EngineConfig, Entry, KillWindows, Kind};
use crate::error::{Context as _, Error};
use crate::record::{self, LaneEnd, Recorder};
use crate::store::inspect::Inspection;
use crate::verdict::{Derived, Status, Symptom, claim_line};
use crate::worker::Strategy;

/// At most this many random kill delays are listed in a report (a plan may hold billions).
pub const KILL_DELAYS_SHOWN: usize = 100;

/// How often the headless loop looks at the workers and the rows.
const TICK: Duration = Duration::from_millis(2);

/// What a lane's vendor verdict says when every task's message arrived once.
pub const MESSAGES_OK: &str = "messages ok: every task's message arrived once";

/// A report's `strategy` as `--json` has always written it: the strategy's name, or `exec`.
#[allow(
    clippy::ref_option,
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with hands the field by reference"
)]
fn strategy_or_exec<S: serde::Serializer>(
    strategy: &Option<Strategy>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(strategy.map_or(crate::engine::EXEC_LABEL, Strategy::name))
}

/// Everything a finished run reports; the JSON keys are stable.
#[derive(Debug, Serialize)]
pub struct RunReport {
    /// Whose worker ran: one of reclaim's strategies, or `None` for the user's own job;
    /// `--json` writes the strategy's name, or `exec`.
    #[serde(serialize_with = "strategy_or_exec")]
    pub strategy: Option<Strategy>,
    pub seed: u64,
    pub items: u64,
    pub rows: u64,
    pub distinct: u64,
    pub duplicated_task_ids: u64,
    pub missing: u64,
    /// Rows whose key is not one of the queue's.
    pub outside: u64,
    pub kills: u32,
    /// Where each kill landed (window -> count), read from the rows after each kill.
    pub kills_in_window: KillWindows,
    /// A job's checkpoint seen committed before its row (`Observer::checkpoint_before_row`).
    #[serde(skip)]
    pub checkpoint_before_row: Option<String>,
    /// A job's row seen committed before its checkpoint (`Observer::row_before_checkpoint`).
    #[serde(skip)]
    pub row_before_checkpoint: Option<String>,
    pub restarts: u32,
    /// Distinct `run_id` values among the rows: how many worker processes wrote any (absent
    /// for someone else's job, whose rows carry no run id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runs: Option<u64>,
    /// Workers that had started before the first one finished: 2 or more means they ran at once.
    pub started_before_first_done: u64,
    pub completed: bool,
    pub claimed_status: String,
    pub claimed_rows_written: Option<u64>,
    pub derived_status: Status,
    /// The verdict `derived_status` names, typed.
    #[serde(skip)]
    pub derived: Derived,
    pub verdict: String,
    pub symptoms: Vec<Symptom>,
    pub lessons: Vec<String>,
    pub never_completed: Option<String>,
    /// The first delays of the random kills (at most `KILL_DELAYS_SHOWN`), in the order used.
    pub kill_delays_ms: Vec<u64>,
    /// How many random kills were planned (`--kills`): `kill_delays_ms` lists only the first.
    pub kills_planned: u32,
    /// `--kill-rows`: the first random kills' rows since their spawn, in the order used (absent
    /// for kills placed by time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kill_rows_planned: Option<Vec<u64>>,
    /// `--kill-rows`: where those kills landed, read from the rows after each reap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kill_rows_landed: Option<crate::engine::RowsLandings>,
    /// Each kill the plan asked for that never fired, in a sentence (empty when all did).
    pub not_fired: Vec<String>,
    /// Of `not_fired`, those that leave the night untested (random kills that found the job
    /// finished after some of them fired do not: the plan was at most N).
    #[serde(skip)]
    pub not_fired_gaps: Vec<String>,
    /// The crash points an external job announced, and how often (absent when none).
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub points_announced: std::collections::BTreeMap<String, u64>,
    /// Kills that landed after a point of the job's own naming, by that point.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub kills_after_points: std::collections::BTreeMap<String, u32>,
    /// What the verdict rests on beside the rows: keys outside the queue (and the options that
    /// name a job's keys), a judgement by counts alone.
    pub queue_notes: Vec<String>,
    /// Whether the rows were matched key by key to the queue, or counted (`--count-sql`).
    pub judged: crate::store::inspect::Judged,
    /// `--kill-at-rows`: the rows seen when the kill was sent, and the rows once it landed.
    pub kill_sent_at_rows: Option<u64>,
    pub kill_landed_at_rows: Option<u64>,
    /// Messages at the vendor (a lane with a side effect or an outbox; `null` otherwise), read
    /// from the vendor's own database: sent, tasks reached, copies beyond the first, tasks
    /// never reached.
    pub messages_received: Option<u64>,
    pub messages_distinct: Option<u64>,
    pub messages_duplicated: Option<u64>,
    pub messages_missing: Option<u64>,
    /// Messages sent for a key outside the queue.
    pub messages_outside: Option<u64>,
    /// Requests the vendor recorded, whatever their outcome (a replayed key is a request
    /// answered without a send).
    pub messages_requests: Option<u64>,
    /// The receiving end's verdict in a sentence (`None` for a lane that reaches no vendor).
    pub messages_verdict: Option<String>,
    pub elapsed_ms: u64,
    pub scale: f64,
    pub db: PathBuf,
    /// The lane's timeline, its first and last `TIMELINE_KEPT / 2` lines when longer (a
    /// 100,000-kill night printed 352,317 lines), a line saying the cut where it is.
    pub timeline: Vec<String>,
    /// How many timeline lines were left out of `timeline` (0 when it is whole).
    pub timeline_left_out: u64,
}

/// The most timeline lines a report carries.
pub const TIMELINE_KEPT: usize = 2_000;

/// `lines`, its first and last `TIMELINE_KEPT / 2` when longer, a line naming the cut between
/// them; and how many lines were left out.
fn bounded_timeline(lines: impl ExactSizeIterator<Item = String>) -> (Vec<String>, u64) {
    let total = lines.len();
    if total <= TIMELINE_KEPT {
        return (lines.collect(), 0);
    }
    let half = TIMELINE_KEPT / 2;
    let left_out = total - 2 * half;
    let mut kept = Vec::with_capacity(TIMELINE_KEPT + 1);
    for (i, line) in lines.enumerate() {
        if i == half {
            kept.push(format!(
                "…  {left_out} lines left out (timeline_left_out)  …"
            ));
        }
        if i < half || i >= total - half {
            kept.push(line);
        }
    }
    (kept, left_out as u64)
}

/// What a job seen committing a checkpoint before its row (`key`'s) risks: a kill between the
/// two loses that item on a resume that trusts the checkpoint. Seen, it is wrong: no kill needs
/// to land there to show the danger is real.
#[must_use]
pub fn checkpoint_first(key: &str) -> String {
    format!(
        "the job commits a checkpoint before its row (seen: {} had its checkpoint and no row): a kill between the two loses that item on a resume that trusts the checkpoint",
        crate::base::text::escape_controls(key)
    )
}

impl RunReport {
    /// 0 when the derived status is ok and the job completed, 1 otherwise.
    #[must_use]
    pub fn exit_code(&self) -> u8 {
        if self.holds() {
            exit::OK
        } else {
            exit::DATA_WRONG
        }
    }

    /// The receiving end's counts, for a lane that reaches a vendor.
    #[must_use]
    pub fn with_messages(mut self, messages: Option<crate::fake_vendor::Counts>) -> Self {
        self.messages_received = messages.map(|m| m.received);
        self.messages_distinct = messages.map(|m| m.distinct);
        self.messages_duplicated = messages.map(|m| m.duplicated);
        self.messages_missing = messages.map(|m| m.missing);
        self.messages_outside = messages.map(|m| m.outside);
        self.messages_requests = messages.map(|m| m.requests);
        // Said whenever a vendor was reached, right or wrong: never left blank.
        self.messages_verdict = messages.map(|m| {
            if m.received == 0 && m.missing > 0 {
                return "messages WRONG: no message arrived at the vendor (does the job send to RECLAIM_VENDOR_URL?)".to_string();
            }
            crate::verdict::messages_verdict(m.duplicated, m.missing, m.outside)
                .unwrap_or_else(|| MESSAGES_OK.to_string())
        });
        self
    }

    /// The messages at the vendor are right (or there is no vendor).
    #[must_use]
    pub fn messages_hold(&self) -> bool {
        self.messages_duplicated.unwrap_or(0) == 0
            && self.messages_missing.unwrap_or(0) == 0
            && self.messages_outside.unwrap_or(0) == 0
    }

    /// The job completed, its rows are right, and so are its messages (if it sends any).
    #[must_use]
    pub fn holds(&self) -> bool {
        self.completed && self.derived.is_ok() && self.messages_hold()
    }
}

/// Drives one single-lane night to its end, handing each new timeline line to `on_line`, and
/// derives the report. Ctrl-C, SIGTERM and SIGHUP stop it (every worker killed) with an error.
pub fn drive(config: EngineConfig, on_line: impl FnMut(&str)) -> Result<RunReport, Error> {
    drive_recorded(config, None, on_line)
}

/// `drive`, recording the night to a session file when `record` names one (with the title the
/// header gives it).
pub fn drive_recorded(
    config: EngineConfig,
    record: Option<(&Path, String)>,
    on_line: impl FnMut(&str),
) -> Result<RunReport, Error> {
    drive_inner(config, record, None, on_line)
}

/// `drive`, ended early (every worker killed, `Error::Stopped`) once `cancel` is set: the map
/// leaves its nights in flight this way when the user quits, not only on a signal.
pub fn drive_until(
    config: EngineConfig,
    cancel: &AtomicBool,
    on_line: impl FnMut(&str),
) -> Result<RunReport, Error> {
    drive_inner(config, None, Some(cancel), on_line)
}

fn drive_inner(
    config: EngineConfig,
    record: Option<(&Path, String)>,
    cancel: Option<&AtomicBool>,
    mut on_line: impl FnMut(&str),
) -> Result<RunReport, Error> {
    let record = record.map(|(path, title)| (path, title, Vec::new()));
    let mut reports = drive_lanes(config, record, cancel, |entry, _| {
        on_line(&entry.line(None));
    })?;
    reports.truncate(1);
    reports
        .pop()
        .ok_or_else(|| Error::Refused("a night without a lane".into()))
}

/// The recording of a night driven headless, its header written.
fn start_recording(
    engine: &Engine,
    path: &Path,
    title: &str,
    captions: Vec<crate::scenario::Caption>,
) -> Result<Recorder, Error> {
    let header = record::header(engine, title, title, engine.config().kills.seed, captions);
    Recorder::create(path, &header).context(|| format!("cannot record to {}", path.display()))
}

/// Drives a night of any number of lanes to its end, handing each new timeline entry (with the
/// engine, for the lanes' names) to `on_entry`, and derives one report per lane, in lane order;
/// recorded, when `record` names a file, with its title and the scenario's captions.
pub fn drive_lanes(
    config: EngineConfig,
    record: Option<(&Path, String, Vec<crate::scenario::Caption>)>,
    cancel: Option<&AtomicBool>,
    mut on_entry: impl FnMut(&Entry, &Engine),
) -> Result<Vec<RunReport>, Error> {
    signals::install().context(|| "cannot install signal handlers".into())?;
    let started = Instant::now();
    let mut engine = Engine::start(config, started)?;
    let mut recorder = record
        .map(|(path, title, captions)| start_recording(&engine, path, &title, captions))
        .transpose()?;
    // Handed out in a stable order (second, lane), so identical nights print identical text.
    let mut in_order = crate::engine::InOrder::default();
    // A job that stops moving is given up on, not waited for forever.
    let deadline = engine.progress_deadline();
    let mut progress = crate::engine::ProgressWatch::new(deadline, started);
    let mut hand_out = |engine: &Engine, over: bool| {
        let upto = (!over).then(|| engine.heard_up_to());
        for i in in_order.release(engine.timeline(), upto) {
            on_entry(&engine.timeline()[i], engine);
        }
    };
    loop {
        let now = Instant::now();
        if let Err(error) = engine.tick(now) {
            hand_out(&engine, true);
            return Err(error.into());
        }
        crate::base::test_hooks::panic_point(
            engine
                .lanes()
                .iter()
                .any(|l| l.alive() && l.observer().rows > 0),
        );
        if let Some(failed) = recorder
            .as_mut()
            .and_then(|r| r.observe(&engine, now).err())
            && let Some(stopped) = recorder.take()
        {
            // A full disk ends the recording, not the night: its verdict is still to be said.
            recording_failed(&stopped, &failed);
        }
        if progress.stalled(&engine, now) {
            engine.give_up_without_progress(now, deadline);
        }
        if engine.finished() {
            hand_out(&engine, true);
            break;
        }
        hand_out(&engine, false);
        if let Some(signal) = signals::received() {
            engine.shutdown();
            hand_out(&engine, true);
            return Err(Error::Stopped(signal));
        }
        if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
            engine.shutdown();
            hand_out(&engine, true);
            return Err(Error::Stopped("the user's quit"));
        }
        engine.wait(TICK);
    }
    let elapsed = engine.elapsed(Instant::now());
    if let Some(lane) = engine.lanes().iter().find(|l| l.failure().is_some()) {
        let failure = lane.failure().unwrap_or_default().to_string();
        if lane.start_failed() {
            return Err(Error::CouldNotStart(failure));
        }
        return Err(Error::WorkerFailed(failure));
    }
    let mut inspections = Vec::new();
    for lane in engine.lanes() {
        let inspection = (lane.config().inspect())
            .map_err(|e| e.seen_before(lane.observer().table_seen, lane.observer().rows));
        inspections.push(match (inspection, &lane.gave_up_why()) {
            (Ok(inspection), _) => inspection,
            // Given up on before it left anything to judge: that is the night's story.
            (Err(e), Some(why)) => return Err(Error::NeverCompleted(format!("{why}; {e}"))),
            (Err(e), None) => return Err(e.into()),
        });
    }
    let mut messages = Vec::new();
    for lane in engine.lanes() {
        messages.push(messages_at_vendor(lane.config())?);
    }
    if let Some(recorder) = recorder.as_mut() {
        let ends = (engine.lanes().iter().zip(&inspections))
            .map(|(lane, inspection)| {
                LaneEnd::from_inspection(
                    inspection,
                    lane.claimed().map(|c| c.status.as_str()),
                    lane.completed(),
                )
            })
            .collect();
        engine.catch_up();
        if let Err(failed) = recorder.end(&engine, Instant::now(), ends) {
            recording_failed(recorder, &failed);
        }
    }
    Ok(inspections
        .iter()
        .enumerate()
        .map(|(i, inspection)| {
            lane_report(&engine, i, inspection, elapsed).with_messages(messages[i])
        })
        .collect())
}

/// Says, once, that the recording stopped (the night goes on, and its verdict is said as ever).
fn recording_failed(recorder: &Recorder, error: &std::io::Error) {
    let path = crate::base::text::escape_controls(&recorder.path().display().to_string());
    eprintln!(
        "reclaim: warning: recording {path}: {error}; the recording stops here (a replay reads it up to its last whole line), the night goes on"
    );
}

/// The verdict of a lane's rows: once its job has ended, a key still missing is work lost.
fn judged(inspection: &Inspection, completed: bool) -> Derived {
    let derived = inspection.derived();
    if completed {
        derived.once_ended()
    } else {
        derived
    }
}

/// One lane's report, its verdict derived from its rows.
fn lane_report(
    engine: &Engine,
    index: usize,
    inspection: &Inspection,
    elapsed: Duration,
) -> RunReport {
    let lane = &engine.lanes()[index];
    let claimed = lane.claimed().map(|c| c.status.clone());
    let completed = lane.completed();
    // Someone else's job claims success in its own words; a last line that says ok (`ok`,
    // `status=ok`) is the claim the symptom table is about.
    let claimed_ok = match lane.config().worker.job() {
        Some(_) => claimed
            .as_deref()
            .filter(|line| crate::verdict::says_ok(line))
            .map(|_| "ok"),
        None => claimed.as_deref(),
    };
    let symptoms = Symptom::observed(
        (inspection.rows, inspection.items),
        judged(inspection, completed),
        lane.restarted_at_zero(),
        claimed_ok,
    );
    let never_completed = (!completed).then(|| {
        if let Some(reason) = &lane.gave_up_why() {
            return format!("the job never completed: {reason}");
        }
        // Only the host's kills are kills: an attempt that died on its own is said so.
        let on_its_own = lane.deaths_on_its_own();
        let how = match (lane.kills(), on_its_own) {
            (0, 0) => "no attempt finished".to_string(),
            (_, 0) => "every attempt was killed before it finished".to_string(),
            (0, _) => "every attempt died on its own before it finished".to_string(),
            (kills, own) => format!(
                "{} by the host and {own} died on their own before finishing",
                crate::base::text::count(
                    u64::from(kills),
                    "attempt was killed",
                    "attempts were killed"
                )
            ),
        };
        format!(
            "the job never completed: the supervisor gave up after {} restarts, its limit: {how}",
            lane.restarts()
        )
    });
    report(
        engine,
        index,
        inspection,
        (claimed, symptoms, never_completed),
        elapsed,
    )
}

/// The messages at a lane's vendor, read from its database (`None` for a lane without one).
fn messages_at_vendor(
    lane: &crate::engine::LaneConfig,
) -> Result<Option<crate::fake_vendor::Counts>, Error> {
    if !lane.needs_vendor() {
        return Ok(None);
    }
    Ok(Some(lane.read_messages()?))
}

/// What lane `index` planned and never did: the plan's kills (the plan watches the first lane)
/// and an own job's crash point; all of it, and what of it leaves the night untested.
fn lane_not_fired(engine: &Engine, index: usize, rows: u64) -> (Vec<String>, Vec<String>) {
    let lane = &engine.lanes()[index];
    let planned = if index == 0 {
        not_fired::not_fired(
            engine.fired(),
            &lane.config().queue(),
            rows,
            lane.completed(),
        )
    } else {
        Vec::new()
    };
    let unfired: Vec<not_fired::Unfired> = (planned.into_iter())
        .chain(not_fired::crash_not_fired(lane).map(not_fired::Unfired::from))
        .collect();
    let gaps = (unfired.iter())
        .filter(|u| u.leaves_untested)
        .map(|u| u.said.clone())
        .collect();
    (unfired.into_iter().map(|u| u.said).collect(), gaps)
}

fn report(
    engine: &Engine,
    index: usize,
    inspection: &Inspection,
    (claimed, symptoms, never_completed): (Option<String>, Vec<Symptom>, Option<String>),
    elapsed: Duration,
) -> RunReport {
    let lane = &engine.lanes()[index];
    // The plan the engine ran by: the one copy of it, so the report cannot describe another.
    let plan = &engine.config().kills;
    let derived = judged(inspection, lane.completed());
    let (not_fired, not_fired_gaps) = lane_not_fired(engine, index, inspection.rows);
    let mut lane_lines: Vec<&crate::engine::Entry> = (engine.timeline().iter())
        .filter(|e| e.lane == Some(index) || e.lane.is_none())
        .collect();
    // In the order the night printed them (`InOrder`): by second, then lane and slot, stably.
    lane_lines.sort_by_key(|e| (e.sim.second(), e.lane, e.slot.unwrap_or(0)));
    let (timeline, timeline_left_out) =
        bounded_timeline(lane_lines.into_iter().map(|e| e.line(None)));
    RunReport {
        strategy: lane.config().worker.strategy(),
        seed: plan.seed,
        items: inspection.items,
        rows: inspection.rows,
        distinct: inspection.distinct,
        duplicated_task_ids: inspection.duplicated_task_ids,
        missing: inspection.missing,
        outside: inspection.unexpected,
        kills: lane.kills(),
        kills_in_window: lane.kills_in_window(),
        checkpoint_before_row: lane.observer().checkpoint_before_row.clone(),
        row_before_checkpoint: lane.observer().row_before_checkpoint.clone(),
        restarts: lane.restarts(),
        runs: lane.config().worker.strategy().map(|_| inspection.runs),
        started_before_first_done: engine
            .timeline()
            .iter()
            .filter(|e| e.lane == Some(index) || e.lane.is_none())
            .take_while(|e| e.kind != Kind::Done)
            .filter(|e| e.kind == Kind::Start)
            .count() as u64,
        completed: lane.completed(),
        // Someone else's job names a count only if it says `rows_written=N`.
        claimed_rows_written: lane
            .claimed()
            .and_then(|c| match lane.config().worker.job() {
                Some(_) => crate::engine::claimed_rows(&c.status),
                None => Some(c.rows_written),
            }),
        verdict: match lane.config().worker.job() {
            // Someone else's last line, quoted, so it reads as their words.
            Some(_) => format!(
                "claimed {:?} derived={derived}",
                claimed.as_deref().unwrap_or("(no output)")
            ),
            None => claim_line(claimed.as_deref(), derived),
        },
        claimed_status: claimed.unwrap_or_else(|| "none".into()),
        derived_status: derived.status(),
        derived,
        lessons: crate::verdict::lessons(
            inspection.duplicated_task_ids,
            inspection.extra_rows,
            &symptoms,
        ),
        symptoms,
        never_completed,
        kill_delays_ms: plan
            .first_delays(KILL_DELAYS_SHOWN)
            .iter()
            .map(|d| d.as_millis() as u64)
            .collect(),
        kills_planned: plan.random,
        kill_rows_planned: plan
            .rows
            .filter(|_| index == 0)
            .map(|_| plan.first_rows(KILL_DELAYS_SHOWN)),
        kill_rows_landed: plan
            .rows
            .filter(|_| index == 0)
            .map(|_| engine.rows_landings().clone()),
        not_fired,
        not_fired_gaps,
        points_announced: lane.points().announced().clone(),
        kills_after_points: lane.points().kills_after().clone(),
        queue_notes: inspection.queue_notes(),
        judged: inspection.judged,
        // A kill at a row count watches the first lane.
        kill_sent_at_rows: engine
            .kill_at_rows()
            .filter(|_| index == 0)
            .map(|(sent, _)| sent),
        kill_landed_at_rows: (engine.kill_at_rows())
            .filter(|_| index == 0)
            .map(|(_, landed)| landed),
        // Filled by `drive_lanes` for a lane that reaches a vendor.
        messages_received: None,
        messages_distinct: None,
        messages_duplicated: None,
        messages_missing: None,
        messages_outside: None,
        messages_requests: None,
        messages_verdict: None,
        elapsed_ms: elapsed.as_millis() as u64,
        scale: engine.config().scale,
        db: inspection.db.clone(),
        timeline,
        timeline_left_out,
    }
}
