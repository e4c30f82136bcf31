//! A lane's heartbeat as the supervisor watches it (`LaneHeartbeat`): the file's beats, their
//! age on the night's clock (a beat's moment is the write it followed), and the dead-man's
//! switch, which fires and clears with a timeline line.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use super::{Lane, Note};
use crate::base::clock::SimClock;
use crate::engine::absences::Absences;
use crate::engine::timeline::Kind;
use crate::heartbeat;
use crate::supervisor::slot::SlotState;

/// The heartbeat file of a lane and what the supervisor made of it.
#[derive(Debug)]
pub(super) struct LaneHeartbeat {
    file: heartbeat::Follower,
    /// The age of the newest beat in sim seconds (frozen while the night is paused).
    sim_age: Option<f64>,
    /// The task the newest beat names.
    task: Option<String>,
    /// The dead-man's switch is firing.
    stale: bool,
    /// The heartbeat file has existed at some point this night. An external job that never
    /// writes one has no heartbeat, which is not the same as a stale one.
    seen: bool,
    /// The moment of the newest write heard.
    last_write_sim: Option<f64>,
    /// The heartbeat file's modification time when last read, and the moment on the night's
    /// clock given to that beat: the moment of the write it names once that write is heard,
    /// until then the newest write heard (a beat follows its write at once).
    beat_seen: Option<(SystemTime, f64)>,
    /// The lane was over when last read: its age is the one it ended with.
    ended: bool,
    /// The moment the age was last measured from: the beat's (`beat_seen`), or the lane's
    /// first start for a silence counted on the night's clock; `None` for a silence shortened
    /// by time reclaim was not watching (`Absences`), as read.
    age_from: Option<f64>,
    /// The moments of the newest writes heard and the last task of each (at most
    /// `WRITES_KEPT`), oldest first.
    writes_heard: std::collections::VecDeque<(f64, u64)>,
    /// While the switch fires: the moment of the beat that went silent, when it had one.
    silent_from: Option<f64>,
}

/// How many of the newest writes' moments a lane keeps: a beat is read a tick or two before or
/// after the write it names is heard, and the heartbeat moves again with the first write after
/// a silence.
const WRITES_KEPT: usize = 64;

/// What the lane's workers are doing when the heartbeat is read.
#[derive(Debug, Clone, Copy)]
struct Workers {
    /// One of them is running (or hung, or about to be restarted): silence is not an end.
    running: bool,
    /// Someone else's job, which need not keep a heartbeat.
    job: bool,
    /// The lane's first start on the night's clock (a scenario's `start_at`).
    first_start: f64,
}

impl LaneHeartbeat {
    pub(super) fn new(path: std::path::PathBuf) -> Self {
        Self {
            file: heartbeat::Follower::new(path),
            sim_age: None,
            task: None,
            stale: false,
            seen: false,
            last_write_sim: None,
            beat_seen: None,
            ended: false,
            age_from: None,
            writes_heard: std::collections::VecDeque::new(),
            silent_from: None,
        }
    }

    /// The heartbeat file.
    pub(super) fn path(&self) -> &Path {
        self.file.path()
    }

    /// The age of the newest beat in sim seconds, when it is measured.
    pub(super) fn sim_age(&self) -> Option<f64> {
        self.sim_age
    }

    /// The age of the newest beat at `moment` of the night (a look stamped there): from the
    /// beat's own moment when it has one (a beat of a write granted ahead of the clock is not
    /// older than its write), else the silence as read. A lane over keeps the age it ended
    /// with.
    pub(super) fn age_at(&self, moment: f64) -> Option<f64> {
        if self.ended {
            return self.sim_age;
        }
        match self.age_from {
            Some(at) => self.sim_age.map(|_| (moment - at).max(0.0)),
            // A silence reclaim did not watch whole: as read.
            None => self.sim_age,
        }
    }

    /// The task the newest beat names.
    pub(super) fn task(&self) -> Option<&str> {
        self.task.as_deref()
    }

    /// The dead-man's switch is firing.
    pub(super) fn stale(&self) -> bool {
        self.stale
    }

    /// The heartbeat file has existed at some point this night.
    pub(super) fn seen(&self) -> bool {
        self.seen
    }

    /// A worker's write of `last` at sim time `at` was heard: the next beat follows it, unless
    /// a later write was heard already.
    pub(super) fn wrote(&mut self, at: f64, last: u64) {
        self.last_write_sim = Some(self.last_write_sim.map_or(at, |w| w.max(at)));
        if self.writes_heard.len() == WRITES_KEPT {
            self.writes_heard.pop_front();
        }
        self.writes_heard.push_back((at, last));
    }

    /// The moment of the write `beat` names, once heard: the newest write of its task no
    /// older than the beat before it (a task written again after a restart from zero is the
    /// new write, never the first attempt's).
    fn named_write(&self, beat: &heartbeat::Beat) -> Option<f64> {
        let task = crate::task::canonical_index(beat.task.as_deref()?)?;
        let floor = self.beat_seen.map_or(f64::NEG_INFINITY, |(_, at)| at);
        (self.writes_heard.iter().rev())
            .find(|&&(at, last)| last == task && at >= floor)
            .map(|&(at, _)| at)
    }

    /// The sim time at which the heartbeat, still since its last beat, will cross `dead_man`.
    fn alert_moment(&self, dead_man: f64) -> Option<f64> {
        if self.stale {
            return None;
        }
        self.beat_seen.map(|(_, at)| at + dead_man)
    }

    /// Reads the file: the beat's age in sim time, and the switch (`dead_man` sim seconds),
    /// which fires or clears with a timeline line.
    fn read(
        &mut self,
        (now, wall, started): (Instant, SystemTime, Instant),
        (clock, absences): (&SimClock, &Absences),
        dead_man: f64,
        workers: Workers,
    ) -> Option<Note> {
        let beat = self.file.read(wall).ok();
        let ahead = beat.as_ref().map_or(Duration::ZERO, |b| b.ahead);
        self.seen |= beat.is_some();
        if !self.seen && workers.job {
            // Nothing to measure: an external job need not keep a heartbeat, and one that does
            // not is never called stale.
            self.sim_age = None;
            return None;
        }
        // Until the first beat, the age counts from the start of the night.
        let real_age = beat
            .as_ref()
            .map_or_else(|| now.saturating_duration_since(started), |b| b.age);
        let since = now.checked_sub(real_age).unwrap_or(started);
        // A beat's moment is the write it followed: then the age is the night's own, the same
        // at every speed and load. Before any write is heard, the real silence as the
        // supervisor watched it.
        if let (Some(b), Some(write)) = (beat.as_ref(), self.last_write_sim) {
            let modified = wall.checked_sub(b.age).unwrap_or(wall);
            // The beat names its write's task: its moment is that write's, whichever tick read
            // it (at 16x a read came a write early or late: `0s` and `13s` at a crash-window
            // stop where 1x showed `6s`). A beat seen before its write was heard (the worker's
            // line still in the pipe) takes the newest write until its own is heard.
            match self.named_write(b) {
                Some(at) => self.beat_seen = Some((modified, at)),
                None if self.beat_seen.is_none_or(|(seen, _)| seen != modified) => {
                    self.beat_seen = Some((modified, write));
                }
                None => {}
            }
        }
        let scheduled = self.beat_seen.map(|(_, at)| at).filter(|_| beat.is_some());
        // Before a first beat, the silence counts from the lane's first start on the clock (a
        // scenario's `start_at`), never from before it: no alert for a lane yet to start.
        // A silence watched whole is the night's own, from that start: a look stamped at the
        // second's last write gives it at that moment, whichever tick read it (1.0 s at 16x and
        // 2.0 s at 4x at the end of 02:00:00 when it was the age as read).
        let (sim_age, age_from) = if let Some(at) = scheduled {
            ((clock.now().0 - at).max(0.0), Some(at))
        } else {
            let watched = absences.silence(clock, since, now);
            let night = (clock.now().0 - workers.first_start).max(0.0);
            if watched + 1e-9 >= night {
                (night, Some(workers.first_start))
            } else {
                (watched, None)
            }
        };
        self.task = beat.and_then(|b| b.task);
        self.sim_age = Some(sim_age);
        self.age_from = age_from;
        // INVARIANT: judged by the rule `heartbeat-check` judges by: a beat from the future
        // alerts, never passes for fresh.
        let judged = heartbeat::judge(
            ahead,
            Duration::from_secs_f64(sim_age),
            Duration::from_secs_f64(dead_man),
        );
        let stale = workers.running && judged.alert().is_some();
        if stale && !self.stale {
            self.stale = true;
            self.silent_from = scheduled;
            let note = match (judged, scheduled) {
                // The moment the threshold was crossed, to the second.
                (heartbeat::Judged::Stale(_), Some(at)) => Note::runner(
                    Kind::Alert,
                    heartbeat::stale_message(Duration::from_secs_f64(dead_man)),
                )
                .at(at + dead_man),
                _ => Note::runner(Kind::Alert, judged.alert().unwrap_or_default()),
            };
            Some(note)
        } else if !stale && self.stale {
            // A beat of reclaim's own worker follows its write: the heartbeat moved again with
            // the first write after the silent beat, not with whichever later beat a read
            // happened to see first (02:06:04, :06 or :08 on three runs of long-item at 4x).
            // A beat is fresh again only once a write after the silence has been heard.
            let first = (self.silent_from).and_then(|silent| {
                (self.writes_heard.iter().map(|&(at, _)| at))
                    .filter(|&w| w > silent + 1e-9)
                    .reduce(f64::min)
            });
            self.stale = false;
            let note = Note::runner(Kind::Notice, "heartbeat moving again".into());
            Some(match first.or(scheduled) {
                Some(at) => note.at(at),
                None => note,
            })
        } else {
            None
        }
    }
}

impl Lane {
    /// The heartbeat's age at `moment` of the night (`LaneHeartbeat::age_at`).
    pub(in crate::engine) fn heartbeat_age_at(&self, moment: f64) -> Option<f64> {
        self.heartbeat.age_at(moment)
    }

    /// The sim time at which the heartbeat, still since its last beat, will cross `dead_man`:
    /// when the switch would fire if nothing moves. `None` while it is firing, once the lane is
    /// over, or before a beat's moment is known.
    pub(in crate::engine) fn alert_moment(&self, dead_man: f64) -> Option<f64> {
        if self.finished() {
            return None;
        }
        self.heartbeat.alert_moment(dead_man)
    }

    /// Reads the heartbeat: its age in real and sim time, and the dead-man's switch (`dead_man`
    /// sim seconds), which fires or clears with a timeline line.
    pub(in crate::engine) fn read_heartbeat(
        &mut self,
        now: Instant,
        wall: SystemTime,
        (clock, absences): (&SimClock, &Absences),
        started: Instant,
        dead_man: f64,
    ) -> Option<Note> {
        let workers = |running| Workers {
            running,
            job: self.config.worker.job().is_some(),
            first_start: (self.attempts.iter())
                .map(super::super::pace::Attempt::started)
                .fold(f64::INFINITY, f64::min),
        };
        if self.finished() {
            // The job is over: its last heartbeat age stays as it was when it ended. Read once
            // more as it ends (its last beat may have come in the tick that ended it), and,
            // on a paced night whose workers finished, taken at the last write's moment, not at
            // whichever tick noticed the end (later at a higher speed).
            self.heartbeat.stale = false;
            if !self.heartbeat.ended {
                self.heartbeat.ended = true;
                let last = workers(false);
                self.heartbeat
                    .read((now, wall, started), (clock, absences), dead_man, last);
                let end = (self.attempts.iter())
                    .filter(|a| a.paced())
                    .map(super::super::pace::Attempt::now)
                    .reduce(f64::max);
                // Only for a lane whose workers all finished: one given up on (no progress,
                // too many restarts) keeps the silence it was given up for. The relay beats no
                // heartbeat: how it ended is not the heartbeat's (under load, the outbox lane's
                // age at its end was 1 s or 0 s by whether its relay had finished).
                let done = (self.slots.iter().enumerate())
                    .all(|(i, s)| self.vendor.is_relay(i) || s.state() == SlotState::Done);
                if let (true, Some(end), Some((_, beat))) = (done, end, self.heartbeat.beat_seen) {
                    self.heartbeat.sim_age = Some((end - beat).max(0.0));
                }
            }
            return None;
        }
        self.heartbeat.ended = false;
        // A reaped worker whose last lines are still on their way is not running: it has
        // finished (or died, and is Restarting once its exit is handled). The relay beats no
        // heartbeat: one still delivering after the workers are done is no silent worker (at
        // 16x on a loaded machine, its real-time end let the switch fire at 02:26:00).
        let running = (self.slots.iter().enumerate()).any(|(i, s)| {
            !self.vendor.is_relay(i)
                && !s.exit_pending()
                && matches!(
                    s.state(),
                    SlotState::Running | SlotState::Hung | SlotState::Restarting
                )
        });
        (self.heartbeat).read(
            (now, wall, started),
            (clock, absences),
            dead_man,
            workers(running),
        )
    }

    /// A SIGKILL between a worker's creating its temporary beat and renaming it leaves the
    /// temporary file behind (75 of them after one stormy night). Called only for a reaped
    /// worker: dead, it can write nothing more, and the file is the one it created.
    pub(in crate::engine) fn forget_temp_beat(&self, slot: usize) {
        if let Ok(pid) = u32::try_from(self.slots[slot].pid()) {
            heartbeat::remove_dead_writers_temp(self.heartbeat.path(), pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::NIGHT_START;

    const DEAD_MAN: f64 = 300.0;

    /// The lane's heartbeat read with the night's clock at `at` (seconds after 02:00:00).
    fn read_at(
        heartbeat: &mut LaneHeartbeat,
        (clock, started): (&mut SimClock, Instant),
        at: f64,
    ) -> Option<Note> {
        let now = Instant::now();
        clock.jump(now, NIGHT_START + at);
        let workers = Workers {
            running: true,
            job: false,
            first_start: NIGHT_START,
        };
        heartbeat.read(
            (now, SystemTime::now(), started),
            (clock, &Absences::default()),
            DEAD_MAN,
            workers,
        )
    }

    /// A heartbeat file in a folder of its own (kept alive by the first), and its writer.
    fn beat_file() -> (
        tempfile::TempDir,
        std::path::PathBuf,
        crate::heartbeat::Writer,
    ) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("heartbeat");
        let writer = crate::heartbeat::Writer::new(path.clone());
        (dir, path, writer)
    }

    /// Makes the beat at `path` one of a while ago: the next beat's modification time differs
    /// from it, whatever the file system's granularity.
    fn backdate(path: &Path) {
        let past = SystemTime::now() - Duration::from_secs(10);
        (std::fs::File::open(path).and_then(|f| f.set_modified(past)))
            .unwrap_or_else(|e| panic!("{e}"));
    }

    /// After a silence past the switch, the heartbeat moves again with the first write after
    /// it, whichever later beat the read first sees: a beat read with two writes heard since
    /// the silence was said at the second (02:06:04, :06 or :08 on three runs of long-item).
    #[test]
    fn the_heartbeat_moves_again_with_the_first_write_after_its_silence() {
        let (_dir, path, writer) = beat_file();
        let mut heartbeat = LaneHeartbeat::new(path.clone());
        let started = Instant::now();
        let mut clock = SimClock::new(started, 100.0);
        heartbeat.wrote(NIGHT_START + 10.0, 0);
        writer.beat("task-000").unwrap_or_else(|e| panic!("{e}"));
        backdate(&path);
        assert!(read_at(&mut heartbeat, (&mut clock, started), 10.0).is_none());
        let alert = read_at(&mut heartbeat, (&mut clock, started), 400.0);
        assert_eq!(alert.and_then(|n| n.at), Some(NIGHT_START + 310.0));
        // Two writes heard since, and the beat of a third read before its line.
        heartbeat.wrote(NIGHT_START + 402.0, 1);
        heartbeat.wrote(NIGHT_START + 404.0, 2);
        writer.beat("task-003").unwrap_or_else(|e| panic!("{e}"));
        let moving = read_at(&mut heartbeat, (&mut clock, started), 404.5)
            .unwrap_or_else(|| panic!("the heartbeat moves again"));
        assert_eq!(moving.text, "heartbeat moving again");
        assert_eq!(moving.at, Some(NIGHT_START + 402.0));
    }

    /// A beat's age counts from the write it names, whichever write the read heard last: at
    /// 16x a beat first read after the next write was heard counted from that one (`0s` at a
    /// crash-window stop where 1x showed `6s`). A task written again after a restart from zero
    /// is the new write, never the first attempt's.
    #[test]
    fn a_beat_is_as_old_as_the_write_it_names() {
        let (_dir, path, writer) = beat_file();
        let mut heartbeat = LaneHeartbeat::new(path.clone());
        let started = Instant::now();
        let mut clock = SimClock::new(started, 100.0);
        let age = |h: &LaneHeartbeat| h.sim_age().map(f64::round);
        // task-000's write, its beat, and task-001's write, heard before the beat is read.
        heartbeat.wrote(NIGHT_START + 10.0, 0);
        writer.beat("task-000").unwrap_or_else(|e| panic!("{e}"));
        heartbeat.wrote(NIGHT_START + 16.0, 1);
        read_at(&mut heartbeat, (&mut clock, started), 20.0);
        assert_eq!(age(&heartbeat), Some(10.0));
        // A beat read before its write is heard takes the newest write until then.
        backdate(&path);
        writer.beat("task-002").unwrap_or_else(|e| panic!("{e}"));
        read_at(&mut heartbeat, (&mut clock, started), 23.0);
        assert_eq!(age(&heartbeat), Some(7.0));
        heartbeat.wrote(NIGHT_START + 22.0, 2);
        read_at(&mut heartbeat, (&mut clock, started), 23.0);
        assert_eq!(age(&heartbeat), Some(1.0));
        // Restarted from zero: the new attempt's beat of task-000, its write not yet heard, is
        // not the first attempt's task-000 of 02:00:10.
        backdate(&path);
        heartbeat.wrote(NIGHT_START + 40.0, 3);
        writer.beat("task-000").unwrap_or_else(|e| panic!("{e}"));
        read_at(&mut heartbeat, (&mut clock, started), 50.0);
        assert_eq!(age(&heartbeat), Some(10.0));
        heartbeat.wrote(NIGHT_START + 45.0, 0);
        read_at(&mut heartbeat, (&mut clock, started), 50.0);
        assert_eq!(age(&heartbeat), Some(5.0));
    }
}
