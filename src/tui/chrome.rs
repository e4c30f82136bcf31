//! What the live and the replay screens share: the chrome around a night (the selected lane,
//! the timeline's scroll, the help overlay, the speed shown, the one-line notice, quitting), the
//! keys that only move it, and the assembly of a `Dashboard` and of its lane panels.

use std::time::{Duration, Instant};

use crate::base::clock::SimTime;
use crate::engine::{LaneSnapshot, Mark, Tone};
use crate::record::LaneEnd;
use crate::tui::keymap::{KeyAction, Mode};
use crate::tui::view::{Dashboard, LaneView, Marker, MarkerKind, ReplayBar, Series};
use crate::verdict::Symptom;

/// Points kept per curve; beyond it every other point is dropped and sampling slows down, so a
/// night of any length costs the same memory.
pub(crate) const MAX_POINTS: usize = 400;
/// Speed steps, relative to the scenario's own pace.
pub(crate) const MIN_SPEED: f64 = 0.125;
pub(crate) const MAX_SPEED: f64 = 16.0;
/// Lines one scroll key moves the timeline.
const SCROLL: usize = 3;

/// How long a notice stays in the header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum NoticeLife {
    /// For this long after it was said (the live night: keys and the night both speak).
    For(Duration),
    /// Until the next key (a replay: only keys speak).
    UntilNextKey,
}

/// The UI state both screens share.
#[derive(Debug)]
pub(crate) struct Chrome {
    pub selected: usize,
    /// Lines scrolled back from the newest; 0 follows the night.
    pub scroll: usize,
    pub help: bool,
    /// The selected lane has the whole width (`z`).
    pub zoom: bool,
    pub speed: f64,
    notice: Option<(String, Option<Instant>)>,
    life: NoticeLife,
    pub quit: bool,
}

impl Chrome {
    pub fn new(life: NoticeLife) -> Self {
        Self {
            selected: 0,
            scroll: 0,
            help: false,
            zoom: false,
            speed: 1.0,
            notice: None,
            life,
            quit: false,
        }
    }

    /// Shows `text` in the header from `now`.
    pub fn say(&mut self, text: impl Into<String>, now: Instant) {
        self.notice = Some((text.into(), Some(now)));
    }

    /// Shows `text` in the header with no time to it: it stays until the next key takes it
    /// (with `NoticeLife::UntilNextKey`) or another notice replaces it.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notice = Some((text.into(), None));
    }

    pub fn notice(&self) -> Option<&str> {
        self.notice.as_ref().map(|(text, _)| text.as_str())
    }

    /// Drops a notice that has been shown long enough.
    pub fn expire(&mut self, now: Instant) {
        if let NoticeLife::For(life) = self.life
            && self.notice.as_ref().is_some_and(|(_, at)| {
                at.is_some_and(|at| now.saturating_duration_since(at) > life)
            })
        {
            self.notice = None;
        }
    }

    /// Selects `lane` (a click) if there is such a lane.
    pub fn select(&mut self, lane: usize, lanes: usize) {
        if lane < lanes {
            self.selected = lane;
        }
    }

    /// Applies what `action` does to the chrome, for a screen of `lanes` lanes whose timeline
    /// shows `timeline` lines. Returns the action if the screen has more to do with it: `None`
    /// once it is used up (selection, scrolling, help). A key pressed over the help overlay
    /// closes it and still acts, except `?` itself; `q` quits from anywhere. The speed keys
    /// step `speed` within its bounds and return, so the screen can apply it.
    pub fn update(
        &mut self,
        action: KeyAction,
        lanes: usize,
        timeline: usize,
    ) -> Option<KeyAction> {
        // Any key over the help closes it and does nothing else (the event loop sends every
        // key here while it is open, bound or not); only quitting goes through.
        if self.help && action != KeyAction::Quit {
            self.help = false;
            return None;
        }
        if self.life == NoticeLife::UntilNextKey {
            self.notice = None;
        }
        let lanes = lanes.max(1);
        match action {
            KeyAction::NextLane => self.selected = (self.selected + 1) % lanes,
            KeyAction::PrevLane => self.selected = (self.selected + lanes - 1) % lanes,
            KeyAction::ScrollUp => self.scroll = (self.scroll + SCROLL).min(timeline),
            KeyAction::ScrollDown => self.scroll = self.scroll.saturating_sub(SCROLL),
            KeyAction::ScrollEnd => self.scroll = 0,
            KeyAction::ToggleHelp => self.help = !self.help,
            KeyAction::ToggleZoom => self.zoom = !self.zoom,
            KeyAction::Quit => {
                self.quit = true;
                return Some(action);
            }
            KeyAction::SpeedUp | KeyAction::SpeedDown => {
                let factor = if action == KeyAction::SpeedUp {
                    2.0
                } else {
                    0.5
                };
                self.speed = (self.speed * factor).clamp(MIN_SPEED, MAX_SPEED);
                return Some(action);
            }
            _ => return Some(action),
        }
        None
    }

    /// The frame: what the screen shows of its night, dressed in the chrome.
    pub fn dashboard(&self, scene: Scene) -> Dashboard {
        let selected = self.selected.min(scene.lanes.len().saturating_sub(1));
        let zoomed = (self.zoom && !scene.lanes.is_empty()).then_some(selected);
        let caption = (scene.caption)
            .map(|text| caption_shown(text, scene.caption_lane, zoomed, &scene.lanes));
        Dashboard {
            title: scene.title,
            scenario: scene.scenario,
            clock: scene.clock,
            speed: self.speed,
            paused: scene.paused,
            seed: scene.seed,
            random_kills: scene.random_kills,
            symptoms: lit(&scene.symptoms, zoomed),
            selected,
            zoom: self.zoom,
            lanes: scene.lanes,
            timeline: scene.timeline,
            timeline_scroll: self.scroll,
            help: self.help,
            notice: self.notice().map(str::to_string),
            x_max: scene.x_max,
            db_dir: scene.db_dir,
            mode: scene.mode,
            caption,
            recording: scene.recording,
            replay: scene.replay,
            ids: None,
            lecture: None,
            warehouse: scene.warehouse,
        }
    }
}

/// What a screen shows of its night at one moment: a `Dashboard` without the chrome.
pub(crate) struct Scene {
    pub title: String,
    pub scenario: String,
    pub clock: SimTime,
    pub paused: bool,
    pub seed: u64,
    pub random_kills: bool,
    /// For each symptom, whether each lane shows it.
    pub symptoms: Vec<(Symptom, Vec<bool>)>,
    pub lanes: Vec<LaneView>,
    pub timeline: Vec<(String, Tone)>,
    pub x_max: f64,
    pub db_dir: String,
    pub mode: Mode,
    pub caption: Option<String>,
    /// The lane the caption speaks of, when it names one.
    pub caption_lane: Option<usize>,
    pub recording: Option<String>,
    pub replay: Option<ReplayBar>,
    /// The night's PostgreSQL, as the header names it; `None` on SQLite.
    pub warehouse: Option<String>,
}

/// The charts' x-axis end for a night shown up to `since_start` sim seconds: a minute ahead,
/// and never less than twenty minutes.
pub(crate) fn x_max(since_start: f64) -> f64 {
    (since_start + 60.0).max(20.0 * 60.0)
}

pub(crate) fn marker_kind(mark: Mark) -> MarkerKind {
    match mark {
        Mark::Kill => MarkerKind::Kill,
        Mark::Restart => MarkerKind::Restart,
    }
}

/// Which rows of the symptom table the lanes show, the night's whole (any lane).
pub(crate) fn symptoms(
    lanes: &[LaneSnapshot],
    items: &[u64],
    ends: &[Option<LaneEnd>],
) -> Vec<(Symptom, bool)> {
    (symptoms_by_lane(lanes, items, ends).into_iter())
        .map(|(symptom, lit)| (symptom, lit.contains(&true)))
        .collect()
}

/// Which rows of the symptom table each lane shows: for each symptom, one flag a lane.
pub(crate) fn symptoms_by_lane(
    lanes: &[LaneSnapshot],
    items: &[u64],
    ends: &[Option<LaneEnd>],
) -> Vec<(Symptom, Vec<bool>)> {
    Symptom::ALL
        .iter()
        .map(|&symptom| {
            let seen = (lanes.iter().enumerate())
                .map(|(i, lane)| match symptom {
                    Symptom::RestartsAtZero => lane.restarted_at_zero,
                    Symptom::RowsExceedQueue => {
                        lane.rows > items.get(i).copied().unwrap_or(u64::MAX)
                    }
                    Symptom::StatusOkDataWrong => {
                        lane.claimed
                            .as_ref()
                            .is_some_and(|c| crate::verdict::says_ok(&c.status))
                            && ends
                                .get(i)
                                .and_then(Option::as_ref)
                                .is_some_and(|end| !end.derived_status.is_ok())
                    }
                })
                .collect();
            (symptom, seen)
        })
        .collect()
}

/// The symptom rows a screen lights: those any lane shows, or, zoomed on one lane, those that
/// lane shows (a symptom of a lane not on screen is not lit beside the one that is).
fn lit(by_lane: &[(Symptom, Vec<bool>)], zoomed: Option<usize>) -> Vec<(Symptom, bool)> {
    (by_lane.iter())
        .map(|(symptom, lit)| {
            let seen = match zoomed {
                Some(z) => lit.get(z).copied().unwrap_or(false),
                None => lit.contains(&true),
            };
            (*symptom, seen)
        })
        .collect()
}

/// A caption about a lane the zoomed screen does not show, named as such (the teacher zoomed
/// on guarded reads naive's caption as naive's, not as guarded's).
fn caption_shown(
    text: String,
    about: Option<usize>,
    zoomed: Option<usize>,
    lanes: &[LaneView],
) -> String {
    match (about, zoomed) {
        (Some(lane), Some(z)) if lane != z => match lanes.get(lane) {
            Some(l) => format!("{} (not on screen; z shows every lane) · {text}", l.name),
            None => text,
        },
        _ => text,
    }
}

/// What a lane panel needs besides the moment's figures.
pub(crate) struct LaneMeta<'a> {
    pub name: &'a str,
    pub strategy: &'a str,
    /// Whether the lane runs the user's own job (its claim is the job's last line as said).
    pub exec: bool,
    pub items: u64,
    pub dead_man: f64,
}

/// One lane's panel, from a moment's snapshot, its curves and (once over) its verdict. The live
/// dashboard and the replay both build their panels here.
pub(crate) fn lane_view(
    meta: &LaneMeta<'_>,
    snap: &LaneSnapshot,
    series: Series,
    markers: Vec<Marker>,
    end: Option<&LaneEnd>,
) -> LaneView {
    // An exec lane's claim is its job's last line, in its own words.
    let exec = meta.exec;
    let claimed = snap.claimed.as_ref().map(|c| {
        if exec {
            format!("{:?}", c.status)
        } else {
            format!("rows_written={} status={}", c.rows_written, c.status)
        }
    });
    let (derived, derived_ok) = match end {
        Some(end) => (end.derived.clone(), Some(end.derived_status.is_ok())),
        None if snap.duplicated > 0 => (
            format!(
                "DATA WRONG ({})",
                crate::base::text::count(
                    snap.duplicated,
                    "duplicated task id",
                    "duplicated task ids"
                )
            ),
            Some(false),
        ),
        None => (
            format!("in progress: {} of {} tasks", snap.distinct, meta.items),
            None,
        ),
    };
    let disagreement = match (&snap.claimed, end) {
        (Some(c), Some(end))
            if crate::verdict::says_ok(&c.status) && !end.derived_status.is_ok() =>
        {
            Some(disagreement(end))
        }
        _ => None,
    };
    LaneView {
        name: meta.name.to_string(),
        strategy: meta.strategy.to_string(),
        state: snap.state.clone(),
        state_kind: snap.state_kind,
        alive: snap.alive,
        progress: snap.progress,
        task: snap.task.clone(),
        restarts: snap.restarts,
        kills: snap.kills,
        workers: snap.workers,
        items: meta.items,
        rows: snap.rows,
        distinct: snap.distinct,
        duplicated: snap.duplicated,
        checkpoints: snap.checkpoints,
        messages: snap.messages,
        series,
        markers,
        heartbeat_age: snap.heartbeat_age,
        no_heartbeat: snap.no_heartbeat,
        dead_man: meta.dead_man,
        alert: snap.stale.then(|| {
            crate::heartbeat::stale_message(Duration::from_secs_f64(
                snap.heartbeat_age.unwrap_or(0.0),
            ))
        }),
        claimed,
        derived,
        derived_ok,
        disagreement,
        tables: end.and_then(|e| e.state.clone().map(|said| (said, e.state_differs))),
    }
}

/// Why the worker's "ok" is wrong, in the rows' own terms.
fn disagreement(end: &LaneEnd) -> String {
    if end.duplicated_task_ids > 0 {
        // Twice only when every duplicated id has exactly one extra row.
        let extra = end.rows.saturating_sub(end.distinct);
        let how = if extra == end.duplicated_task_ids {
            "twice"
        } else {
            "more than once"
        };
        let ids = crate::base::text::count(end.duplicated_task_ids, "task id was", "task ids were");
        format!("the worker says ok; {ids} written {how}")
    } else if end.missing > 0 {
        let tasks = crate::base::text::count(end.missing, "task has", "tasks have");
        format!("the worker says ok, but {tasks} no row")
    } else {
        format!("the worker says ok, but the rows say {}", end.derived)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIVE: NoticeLife = NoticeLife::For(Duration::from_secs(4));

    #[test]
    fn selection_wraps_both_ways_and_a_click_outside_the_lanes_is_ignored() {
        let mut chrome = Chrome::new(LIVE);
        assert_eq!(chrome.update(KeyAction::PrevLane, 3, 0), None);
        assert_eq!(chrome.selected, 2);
        assert_eq!(chrome.update(KeyAction::NextLane, 3, 0), None);
        assert_eq!(chrome.selected, 0);
        chrome.select(1, 3);
        assert_eq!(chrome.selected, 1);
        chrome.select(3, 3);
        assert_eq!(chrome.selected, 1);
    }

    #[test]
    fn scrolling_stops_at_the_oldest_line_and_end_follows_the_night_again() {
        let mut chrome = Chrome::new(LIVE);
        for _ in 0..5 {
            chrome.update(KeyAction::ScrollUp, 1, 7);
        }
        assert_eq!(chrome.scroll, 7);
        chrome.update(KeyAction::ScrollDown, 1, 7);
        assert_eq!(chrome.scroll, 4);
        for _ in 0..3 {
            chrome.update(KeyAction::ScrollDown, 1, 7);
        }
        assert_eq!(chrome.scroll, 0);
        chrome.update(KeyAction::ScrollUp, 1, 7);
        chrome.update(KeyAction::ScrollEnd, 1, 7);
        assert_eq!(chrome.scroll, 0);
    }

    #[test]
    fn speed_doubles_and_halves_within_its_bounds_and_is_passed_on() {
        let mut chrome = Chrome::new(LIVE);
        for _ in 0..10 {
            assert_eq!(
                chrome.update(KeyAction::SpeedUp, 1, 0),
                Some(KeyAction::SpeedUp)
            );
        }
        assert!((chrome.speed - MAX_SPEED).abs() < f64::EPSILON);
        for _ in 0..20 {
            assert_eq!(
                chrome.update(KeyAction::SpeedDown, 1, 0),
                Some(KeyAction::SpeedDown)
            );
        }
        assert!((chrome.speed - MIN_SPEED).abs() < f64::EPSILON);
    }

    #[test]
    fn a_key_over_the_help_closes_it_and_does_nothing_else() {
        let mut chrome = Chrome::new(LIVE);
        assert_eq!(chrome.update(KeyAction::ToggleHelp, 2, 0), None);
        assert!(chrome.help);
        assert_eq!(chrome.update(KeyAction::ToggleHelp, 2, 0), None);
        assert!(!chrome.help);
        chrome.update(KeyAction::ToggleHelp, 2, 0);
        assert_eq!(chrome.update(KeyAction::NextLane, 2, 0), None);
        assert!(!chrome.help);
        assert_eq!(chrome.selected, 0, "the key only closed the help");
        chrome.update(KeyAction::ToggleHelp, 2, 0);
        assert_eq!(chrome.update(KeyAction::KillLane, 2, 0), None, "no kill");
        assert!(!chrome.help);
    }

    #[test]
    fn quit_works_over_the_help_and_is_passed_on() {
        let mut chrome = Chrome::new(LIVE);
        chrome.update(KeyAction::ToggleHelp, 1, 0);
        assert_eq!(chrome.update(KeyAction::Quit, 1, 0), Some(KeyAction::Quit));
        assert!(chrome.quit);
        // The overlay is still up: quitting does not stop to close it.
        assert!(chrome.help);
    }

    #[test]
    fn a_live_notice_lasts_its_time_and_a_replay_notice_until_the_next_key() {
        let t0 = Instant::now();
        let mut live = Chrome::new(LIVE);
        live.say("speed 2x", t0);
        live.update(KeyAction::NextLane, 2, 0);
        live.expire(t0 + Duration::from_secs(4));
        assert_eq!(live.notice(), Some("speed 2x"));
        live.expire(t0 + Duration::from_millis(4001));
        assert_eq!(live.notice(), None);

        let mut replay = Chrome::new(NoticeLife::UntilNextKey);
        replay.note("cut short");
        replay.expire(t0 + Duration::from_secs(3600));
        assert_eq!(replay.notice(), Some("cut short"));
        replay.update(KeyAction::ScrollUp, 1, 0);
        assert_eq!(replay.notice(), None);
    }

    #[test]
    fn z_zooms_the_selected_lane_tab_moves_the_zoom_and_z_again_shows_every_lane() {
        let mut chrome = Chrome::new(LIVE);
        assert_eq!(chrome.update(KeyAction::ToggleZoom, 3, 0), None);
        assert!(chrome.zoom);
        chrome.update(KeyAction::NextLane, 3, 0);
        assert_eq!((chrome.selected, chrome.zoom), (1, true));
        // Over the help, z only closes it.
        chrome.update(KeyAction::ToggleHelp, 3, 0);
        chrome.update(KeyAction::ToggleZoom, 3, 0);
        assert!(chrome.zoom && !chrome.help);
        chrome.update(KeyAction::ToggleZoom, 3, 0);
        assert!(!chrome.zoom);
    }
}
