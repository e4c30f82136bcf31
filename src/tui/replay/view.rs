//! What a replay shows at its cursor: each lane's panel, curves and verdict as recorded up to that
//! moment, the timeline so far, the caption of the moment, and each caption's text filled with
//! the figures recorded at its moment.

use crate::base::clock::{NIGHT_START, SimTime};
use crate::record::{Recording, Sample};
use crate::scenario;
use crate::tui::chrome::{
    LaneMeta, MAX_POINTS, Scene, lane_view, marker_kind, symptoms_by_lane, x_max,
};
use crate::tui::keymap::Mode;
use crate::tui::lecture;
use crate::tui::moment;
use crate::tui::view::{Dashboard, LaneView, Marker, ReplayBar, Series};

use super::ReplayApp;

impl ReplayApp {
    pub(super) fn series(&self, lane: usize) -> Series {
        let upto = moment::lane_sample_index(
            &self.recording.samples,
            self.cursor,
            self.overs.get(lane).copied().flatten(),
        )
        .map_or(0, |i| i + 1);
        let samples = &self.recording.samples[..upto];
        // Downsampled by stride, so a long recording draws as cheaply as a short one.
        let stride = samples.len().div_ceil(MAX_POINTS).max(1);
        let mut series = Series::default();
        let mut picked: Vec<&Sample> = samples.iter().step_by(stride).collect();
        if let Some(last) = samples.last()
            && !(samples.len() - 1).is_multiple_of(stride)
        {
            picked.push(last);
        }
        // As live: a lane's curves end where it finished.
        let mut ended = false;
        for sample in picked {
            let Some(snap) = sample.lanes.get(lane) else {
                continue;
            };
            let was_ended = std::mem::replace(&mut ended, snap.finished());
            if was_ended {
                continue;
            }
            let t = sample.sim - NIGHT_START;
            series.rows.push((t, snap.rows as f64));
            series.distinct.push((t, snap.distinct as f64));
            series.duplicated.push((t, snap.duplicated as f64));
            series
                .checkpoints
                .push((t, snap.checkpoints.unwrap_or(0) as f64));
            if let Some(age) = snap.heartbeat_age {
                series.heartbeat_age.push((t, age));
            }
        }
        series
    }

    /// The frame at the cursor.
    pub(super) fn frame(&self) -> Dashboard {
        let header = &self.recording.header;
        let snapshots = self.snapshots_at(self.cursor);
        let ends = self.ends();
        let shown = self.events_shown();
        let events = &self.recording.events[..shown];
        let lanes: Vec<LaneView> = header
            .lanes
            .iter()
            .enumerate()
            .filter_map(|(i, info)| {
                let snap = snapshots.get(i)?;
                let markers: Vec<Marker> = events
                    .iter()
                    .filter(|e| e.lane == Some(i))
                    .filter_map(|e| {
                        e.mark.map(|m| Marker {
                            at: e.sim - NIGHT_START,
                            kind: marker_kind(m),
                        })
                    })
                    .collect();
                let meta = LaneMeta {
                    name: &info.name,
                    strategy: info.strategy.name(),
                    exec: matches!(info.strategy, crate::record::WorkerKind::Exec),
                    items: info.items,
                    dead_man: header.dead_man,
                };
                Some(lane_view(
                    &meta,
                    snap,
                    self.series(i),
                    markers,
                    ends.get(i).and_then(Option::as_ref),
                ))
            })
            .collect();
        let multi = header.lanes.len() > 1;
        let width = header.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
        let timeline = events
            .iter()
            .map(|e| {
                let name = e
                    .lane
                    .filter(|_| multi)
                    .and_then(|l| header.lanes.get(l))
                    .map(|l| l.name.as_str());
                (e.line(name, width), e.kind.tone(e.mark))
            })
            .collect();
        let items: Vec<u64> = header.lanes.iter().map(|l| l.items).collect();
        let held = (self.lecture.as_ref())
            .filter(|l| l.hold.is_some())
            .and_then(|l| l.captions.first().copied());
        let shown = held.or_else(|| scenario::current_caption(&self.caption_times, self.cursor));
        let caption = shown
            .and_then(|i| self.caption_texts.get(i))
            .map(|(text, _)| text.clone());
        let names = header.lanes.iter().map(|l| l.name.as_str());
        let caption_lane = scenario::caption_lane(&header.captions, shown, names);
        let mut dashboard = self.chrome.dashboard(Scene {
            title: header.title.clone(),
            scenario: header.scenario.clone(),
            clock: SimTime(self.cursor),
            paused: !self.playing,
            seed: header.seed,
            random_kills: false,
            symptoms: symptoms_by_lane(&snapshots, &items, &ends),
            lanes,
            timeline,
            x_max: x_max(self.end() - NIGHT_START),
            db_dir: header
                .lanes
                .first()
                .map(|l| l.db.display().to_string())
                .unwrap_or_default(),
            mode: Mode::Replay,
            caption,
            caption_lane,
            recording: None,
            warehouse: header.warehouse.clone(),
            replay: Some(ReplayBar {
                end: SimTime(self.end()),
                playing: self.playing,
                partial: self.recording.end.is_none() || self.recording.truncated,
            }),
        });
        dashboard.lecture = (self.lecture.as_ref()).map(|l| {
            let over = self.cursor >= self.end() && l.hold.is_none();
            lecture::line(l.hold.as_ref(), !self.playing, over)
        });
        dashboard
    }
}

/// Each caption's text and notes with the lane's figures as the replay shows them at its
/// moment (`moment::lane_sample_index`, the rule the lane's panel is drawn by): the lane still
/// working before its last line, the sample that shows it over from that line on, so a caption
/// on a lane's `done` never counts a row fewer than the panel beside it.
pub(super) fn filled_captions(
    recording: &Recording,
    times: &[Option<f64>],
) -> Vec<(String, Option<String>)> {
    let header = &recording.header;
    let names: Vec<&str> = header.lanes.iter().map(|l| l.name.as_str()).collect();
    header
        .captions
        .iter()
        .zip(times)
        .map(|(caption, at)| {
            caption.filled(&names, |lane| {
                let at = (*at)?;
                let samples = &recording.samples;
                let over = moment::lane_over(samples, &recording.events, lane);
                let sample = samples.get(moment::lane_sample_index(samples, at, over)?)?;
                let info = header.lanes.get(lane)?;
                let snap = sample.lanes.get(lane)?;
                Some(scenario::CaptionFigures::of(snap, &info.name, info.items).at(at))
            })
        })
        .collect()
}
