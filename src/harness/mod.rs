//! The headless driver: one night driven through the same engine the dashboard draws, its
//! timeline handed out line by line as it happens, and the report derived from the rows at the
//! end. `run`, `prove`, `map` and `shrink` share it; `pool` runs many nights at once.

mod account;
pub mod compare;
mod json;
mod not_fired;
pub mod pool;
mod report;
mod said;
#[cfg(test)]
mod tests;

pub use self::account::windows_account;
pub use self::not_fired::Unfired;
pub use self::report::{KILL_DELAYS_SHOWN, RunReport, TIMELINE_KEPT};
pub use self::said::{MESSAGES_OK, checkpoint_first};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::base::signals;
use crate::engine::{Engine, EngineConfig, Entry};
use crate::error::{Context as _, Error};
use crate::record::{self, LaneEnd, Recorder};

/// How often the headless loop looks at the workers and the rows while they speak, while the
/// clock stands on a moment, and always for a recorded night or someone else's job
/// (`quiet_tick`).
const TICK: Duration = Duration::from_millis(2);

/// How long a night of reclaim's own workers, not recorded, may wait for its next look while
/// no worker says anything and its clock runs towards its next moment (`Engine::until_limit`):
/// each of their writes is asked for and said, so nothing of the night's own is missed. Looking
/// every `TICK` instead, a 1x incident cost 1.18 to 1.52 s of CPU against 0.75 to 0.93 s
/// (debug build, three runs each, 2026-12-07), with the same text.
const QUIET_TICK: Duration = Duration::from_millis(20);

/// How long after the clock's next moment a quiet wait ends: a look timed to the moment itself
/// can come a hair early, find the clock just short of it, and wait again.
const REACH: Duration = Duration::from_micros(200);

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
    // A recorded night's samples are each of one moment, whatever the machine's pace.
    let exact = record.is_some();
    let mut engine = Engine::start_with(config, started, exact)?;
    let mut recorder = record
        .map(|(path, title, captions)| start_recording(&engine, path, &title, captions))
        .transpose()?;
    // Looked at every `TICK`, quiet or not: a recorded night, or one with someone else's job.
    let every_tick = exact || (engine.lanes().iter()).any(|l| l.config().worker.job().is_some());
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
        engine.wait(quiet_tick(&engine, every_tick), TICK);
    }
    let elapsed = engine.elapsed(Instant::now());
    if let Some(lane) = engine.lanes().iter().find(|l| l.failure().is_some()) {
        let failure = lane.failure().map(str::to_string).unwrap_or_default();
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
    Ok((inspections.into_iter().zip(messages).enumerate())
        .map(|(i, (inspection, messages))| {
            RunReport::of_lane(&engine, i, inspection, messages, elapsed)
        })
        .collect())
}

/// How long the loop waits for its next look while no worker speaks: until just after the
/// clock reaches its next moment (`REACH`), at least `TICK` (as every look waited before) and
/// at most `QUIET_TICK`; every `TICK` while the clock stands on a moment (a write not yet
/// made, a relay's delivery, a server's answer are looked for, not said), for a recorded
/// night (its samples are each of one moment) and for someone else's job, whose rows appear
/// unsaid (a kill at a row count lands as soon as a look sees that row).
fn quiet_tick(engine: &Engine, every_tick: bool) -> Duration {
    if every_tick || engine.looks_exactly() {
        return TICK;
    }
    quiet_wait(engine.until_limit())
}

/// `quiet_tick` for a night of reclaim's own workers, from how soon its clock reaches its next
/// moment (`Engine::until_limit`).
fn quiet_wait(until: Option<Duration>) -> Duration {
    match until {
        None => QUIET_TICK,
        Some(until) if until.is_zero() => TICK,
        Some(until) => until.saturating_add(REACH).clamp(TICK, QUIET_TICK),
    }
}

/// Says, once, that the recording stopped (the night goes on, and its verdict is said as ever).
fn recording_failed(recorder: &Recorder, error: &std::io::Error) {
    let path = crate::base::text::escape_controls(&recorder.path().display().to_string());
    eprintln!(
        "reclaim: warning: recording {path}: {error}; the recording stops here (a replay reads it up to its last whole line), the night goes on"
    );
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
