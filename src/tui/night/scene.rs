//! What the live night shows: its `Scene` at the last tick (lanes, timeline, symptoms, caption)
//! and the duplicated ids of a lane read for the `i` overlay.

use crate::base::clock::SimTime;
use crate::engine::LaneSnapshot;
use crate::tui::chrome::{LaneMeta, Scene, lane_view, symptoms_by_lane, x_max};
use crate::tui::keymap::Mode;
use crate::tui::view::{IdsView, LaneView, Series};

use super::LiveNight;

impl LiveNight {
    /// The lane's task ids written more than once, read from its rows now (the first 500).
    pub fn ids_view(&self, lane: usize) -> IdsView {
        const SHOWN: usize = 500;
        let Some(l) = self.engine.lanes().get(lane) else {
            return IdsView {
                lane: String::new(),
                db: String::new(),
                lines: Vec::new(),
                total: 0,
            };
        };
        let (lines, total) = match l.config().warehouse.duplicated_ids(&l.config().db, SHOWN) {
            Ok((ids, total)) => (
                ids.iter()
                    .map(crate::warehouse::inspection::duplicated_line)
                    .collect(),
                total,
            ),
            Err(e) => (vec![format!("cannot read the rows: {e}")], 0),
        };
        IdsView {
            lane: l.config().name.clone(),
            db: l.config().db.display().to_string(),
            lines,
            total,
        }
    }

    /// What the night shows at the last tick.
    pub fn scene(&self) -> Scene {
        // The clock runs on after the night; the night's end is its last moment shown.
        let running = self.engine.clock().at(self.now);
        let clock = self
            .end_clock
            .map_or(running, |end| SimTime(running.0.min(end.0)));
        let dead_man = self.engine.config().dead_man;
        let lanes: Vec<LaneView> = self
            .engine
            .lanes()
            .iter()
            .zip(&self.history)
            .map(|(lane, h)| {
                let series = Series {
                    rows: h.rows.points.clone(),
                    distinct: h.distinct.points.clone(),
                    duplicated: h.duplicated.points.clone(),
                    checkpoints: h.checkpoints.points.clone(),
                    heartbeat_age: h.heartbeat_age.points.clone(),
                };
                let meta = LaneMeta {
                    name: &lane.config().name,
                    strategy: lane.config().worker.label(),
                    exec: lane.config().worker.strategy().is_none(),
                    items: lane.config().items,
                    dead_man,
                };
                lane_view(
                    &meta,
                    &lane.snapshot_at(dead_man, clock.0),
                    series,
                    h.markers.clone(),
                    h.end.as_ref(),
                )
            })
            .collect();
        let multi = lanes.len() > 1;
        let width = self.lanes.iter().map(|l| l.name.len()).max().unwrap_or(0);
        let timeline = (self.shown_timeline(clock).into_iter())
            .map(|e| {
                let line = match e.lane {
                    Some(l) if multi => e.line_in_lane(&self.lanes[l].name, width),
                    _ => e.line(None),
                };
                (line, e.kind.tone(e.mark))
            })
            .collect();
        let snapshots: Vec<LaneSnapshot> = self
            .engine
            .lanes()
            .iter()
            .map(|l| l.snapshot(dead_man))
            .collect();
        let items: Vec<u64> = self
            .engine
            .lanes()
            .iter()
            .map(|l| l.config().items)
            .collect();
        let shown = self.captions.shown();
        let caption = shown.and_then(|i| Some(self.caption_texts.get(i)?.as_ref()?.0.clone()));
        let names = self.lanes.iter().map(|l| l.name.as_str());
        let caption_lane = crate::scenario::caption_lane(&self.scenario.captions, shown, names);
        Scene {
            title: self.title.clone(),
            scenario: self.scenario.source.clone(),
            clock,
            paused: self.engine.is_paused(),
            seed: self.scenario.seed,
            random_kills: self.random_kills,
            symptoms: symptoms_by_lane(&snapshots, &items, &self.lane_ends()),
            lanes,
            timeline,
            x_max: x_max(clock.since_start()),
            db_dir: self.dir.display().to_string(),
            mode: Mode::Live,
            caption,
            caption_lane,
            recording: self.recording().map(|p| p.display().to_string()),
            replay: None,
            warehouse: self.warehouse.describe(),
        }
    }
}
