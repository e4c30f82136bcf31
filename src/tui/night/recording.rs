//! The live night on tape: its session file (`--record`, `o`), started and closed with the
//! night's verdict, and the night so far as a recording to look back at.

use std::path::Path;
use std::time::Instant;

use crate::base::clock::SimTime;
use crate::engine::Entry;
use crate::error::{Context as _, Error};
use crate::record::{self, Recorder};
use crate::scenario;

use super::LiveNight;

impl LiveNight {
    /// The recording's header for this night, with `captions`.
    pub(super) fn header(&self, captions: Vec<scenario::Caption>) -> record::Header {
        record::header(
            &self.engine,
            &self.title,
            &self.scenario.source,
            self.scenario.seed,
            captions,
        )
    }

    /// The night so far as a recording, to look back at (a replay of it, while it waits): what
    /// the screen has shown, up to the clock (or the night's end), with each caption reached in
    /// the words and figures it was shown with.
    pub fn past(&self, now: Instant) -> record::Recording {
        let captions = (self.scenario.captions.iter().enumerate())
            .filter(|(i, _)| self.applies.get(*i).copied().unwrap_or(false))
            .map(
                |(i, caption)| match self.caption_texts.get(i).cloned().flatten() {
                    Some((text, notes)) => scenario::Caption {
                        text,
                        notes,
                        ..caption.clone()
                    },
                    None => caption.clone(),
                },
            )
            .collect();
        let ends = self.lane_ends();
        let end = match self.end_clock {
            Some(at) if self.over() && ends.iter().all(Option::is_some) => Some(record::End {
                real_ms: self.engine.elapsed(now).as_millis() as u64,
                sim: at.0,
                lanes: ends.into_iter().flatten().collect(),
            }),
            _ => None,
        };
        let mut last = record::sample(&self.engine, now);
        if let Some(over) = self.end_clock {
            last.sim = last.sim.min(over.0);
        }
        let events = (self.shown_timeline(SimTime(last.sim)).into_iter())
            .map(record::Event::from_entry)
            .collect();
        self.tape
            .recording(self.header(captions), events, last, end)
    }

    /// The timeline as the screen shows it at `clock`: in the order of the night, and only what
    /// it has come to (a line is printed a little before its moment, a worker's start line at
    /// its spawn, or logged a little after it).
    pub(super) fn shown_timeline(&self, clock: SimTime) -> Vec<&Entry> {
        let mut entries: Vec<&Entry> = (self.engine.timeline().iter())
            .filter(|e| e.sim.0 <= clock.0 + 1e-6)
            .collect();
        entries.sort_by(|a, b| a.sim.0.total_cmp(&b.sim.0));
        entries
    }

    pub(super) fn start_recording(&mut self) -> Result<(), Error> {
        let header = self.header(self.captions_now());
        let recorder = match &self.record_to {
            Some(named) if !self.named_started => {
                self.named_started = true;
                Recorder::create(named, &header)
                    .context(|| format!("cannot record to {}", named.display()))?
            }
            // A later night of the session (`s`, `n`, `R`, `o`): the named file keeps the night
            // it began with, this one goes beside it, in a file of its own.
            Some(named) => {
                let named = named.clone();
                let recorder = beside(&named, self.number, &header)?;
                self.say(format!(
                    "night {} records to {}",
                    self.number,
                    recorder.path().display()
                ));
                recorder
            }
            None => {
                let path = self.dir.join(format!("night{}.jsonl", self.number));
                Recorder::create(&path, &header)
                    .context(|| format!("cannot record to {}", path.display()))?
            }
        };
        self.recorder = Some(recorder);
        // Its samples are each of one moment of the night, at any speed (`EXACT_TICK`).
        self.engine.look_exactly();
        Ok(())
    }

    /// Writes the verdict into the recording (if the night has one) and closes it.
    pub(super) fn finish_recording(&mut self, now: Instant) {
        let Some(mut recorder) = self.recorder.take() else {
            return;
        };
        let ends = self.lane_ends();
        let whole = ends.iter().all(Option::is_some);
        let result = if whole {
            recorder.end(&self.engine, now, ends.into_iter().flatten().collect())
        } else {
            recorder.observe(&self.engine, now)
        };
        let path = recorder.path().display().to_string();
        self.saved.push(recorder.path().to_path_buf());
        let cut = if whole {
            String::new()
        } else {
            format!(" (cut short at {}: the night did not end)", self.clock())
        };
        match result {
            Ok(()) => self.say(format!("recording saved to {path}{cut}")),
            Err(e) => self.say(format!("recording {path} failed: {e}")),
        }
    }
}

/// A recording for night `number` beside the one `--record` named: `night.jsonl` gives
/// `night-2.jsonl` (or `night-2-2.jsonl`, ... when that exists: nothing is overwritten).
fn beside(named: &Path, number: u32, header: &record::Header) -> Result<Recorder, Error> {
    let mut last = None;
    for again in 1..=100 {
        let path = beside_name(named, number, again);
        match Recorder::create(&path, header) {
            Ok(recorder) => return Ok(recorder),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(path),
            Err(e) => return Err(e).context(|| format!("cannot record to {}", path.display())),
        }
    }
    let last = last.unwrap_or_else(|| named.to_path_buf());
    Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists)).context(|| {
        format!(
            "cannot record to {}: 100 names beside it taken",
            last.display()
        )
    })
}

/// The `again`th name tried for night `number` beside `named` (`again` from 1).
fn beside_name(named: &Path, number: u32, again: u32) -> std::path::PathBuf {
    let name = (named.file_name()).map_or_else(|| "night".into(), |s| s.to_string_lossy());
    // `.jsonl` is all extension (`night-2.jsonl`), not a stem to append to (`.jsonl-2`).
    let (stem, ext) = match name.rsplit_once('.') {
        Some(("", ext)) => ("night", format!(".{ext}")),
        Some((stem, ext)) => (stem, format!(".{ext}")),
        None => (&*name, String::new()),
    };
    let folder = named.parent().unwrap_or_else(|| Path::new(""));
    if again == 1 {
        folder.join(format!("{stem}-{number}{ext}"))
    } else {
        folder.join(format!("{stem}-{number}-{again}{ext}"))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::beside_name;

    #[test]
    fn a_later_nights_recording_is_named_beside_the_first_keeping_its_extension() {
        let name = |named: &str, again| beside_name(Path::new(named), 2, again);
        assert_eq!(name("out/night.jsonl", 1), Path::new("out/night-2.jsonl"));
        assert_eq!(name("out/night.jsonl", 3), Path::new("out/night-2-3.jsonl"));
        assert_eq!(name("a.b.jsonl", 1), Path::new("a.b-2.jsonl"));
        assert_eq!(name("plain", 1), Path::new("plain-2"));
        assert_eq!(name(".jsonl", 1), Path::new("night-2.jsonl"));
        assert_eq!(name("dir/.jsonl", 2), Path::new("dir/night-2-2.jsonl"));
    }
}
