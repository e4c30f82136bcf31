//! Reading a recording back: every line checked (the version, samples in time order), a torn
//! last line dropped and flagged, anything else wrong refused with one line (`RecordingError`).

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;

use thiserror::Error;

use super::{End, Event, FORMAT, Header, Sample, SessionLine, VERSION};
use crate::base::text::escape_controls;

#[derive(Debug, Error, PartialEq)]
pub enum RecordingError {
    #[error("{0}")]
    Path(String),
    #[error("cannot read recording {path}: {message}")]
    Read { path: String, message: String },
    #[error("recording {0} is empty")]
    Empty(String),
    #[error("{path} is not a reclaim recording (line 1: {message})")]
    NotRecording { path: String, message: String },
    #[error(
        "recording {path} is format version {found}, newer than this reclaim reads ({VERSION}); upgrade reclaim"
    )]
    Newer { path: String, found: u32 },
    #[error(
        "recording {path} is format version {found}, which this reclaim does not read; it writes and reads version {VERSION} only"
    )]
    Unsupported { path: String, found: String },
    #[error(
        "recording {path}: line {line} is a sample at {at_ms} ms after one at {before_ms} ms; reclaim writes samples in time order, so this file was changed, and no verdict is drawn from it"
    )]
    OutOfOrder {
        path: String,
        line: usize,
        at_ms: u64,
        before_ms: u64,
    },
    #[error("recording {path}: line {line} is garbled ({message})")]
    Garbled {
        path: String,
        line: usize,
        message: String,
    },
    #[error(
        "recording {path} is {size} bytes, more than the {limit} bytes reclaim reads; nothing is drawn or judged from it"
    )]
    TooLarge { path: String, size: u64, limit: u64 },
    /// A lane whose header says its items reached a vendor, in a night that ended, with no
    /// sample holding its messages: `replay --check` would pass a night whose messages it
    /// cannot see.
    #[error(
        "recording {path}: lane {lane} sent its items to a vendor (its header says so), but no sample holds its messages; this file was changed, and no verdict is drawn from it"
    )]
    NoMessages { path: String, lane: String },
    /// A value reclaim never writes: a moment outside any night, a lane the header does not
    /// name. Nothing is drawn or judged from such a file.
    #[error(
        "recording {path}: line {line} {message}; reclaim never writes that, so this file was changed, and nothing is drawn or judged from it"
    )]
    Impossible {
        path: String,
        line: usize,
        message: String,
    },
}

/// The latest moment a recording may name, in sim seconds after midnight: 100 days after the
/// night began, far past any night reclaim runs (100,000,000 items at the postmortem's 10 ms is
/// under 12 days), and far below where drawing a chart to it would overflow.
pub const MAX_SIM: f64 = crate::base::clock::NIGHT_START + 100.0 * 86_400.0;

/// Why a line's moment or lanes cannot be from reclaim, if they cannot.
fn impossible(sim: f64, lanes: Option<usize>, lane: Option<usize>, named: usize) -> Option<String> {
    if !(0.0..=MAX_SIM).contains(&sim) {
        let sim = if sim.abs() < 1e12 {
            sim.to_string()
        } else {
            format!("{sim:e}")
        };
        return Some(format!("is at sim {sim}, outside 0..={MAX_SIM}"));
    }
    if let Some(count) = lanes.filter(|&count| count != named) {
        return Some(format!(
            "has {} where the header names {named}",
            crate::base::text::count(count as u64, "lane", "lanes")
        ));
    }
    if let Some(lane) = lane.filter(|&lane| lane >= named) {
        return Some(format!(
            "is about lane {lane}, which the header does not name ({})",
            crate::base::text::count(named as u64, "lane", "lanes")
        ));
    }
    None
}

/// Why a header cannot be from reclaim, if it cannot: no lane or more than a screen holds, a
/// dead-man's switch that is not a positive time, a speed reclaim never runs at, a caption with
/// a character that acts on the screen (a scenario's captions are refused for them).
fn impossible_header(header: &Header) -> Option<String> {
    let lanes = header.lanes.len();
    if !(1..=crate::scenario::MAX_LANES).contains(&lanes) {
        return Some(format!(
            "names {}, outside 1..={}",
            crate::base::text::count(lanes as u64, "lane", "lanes"),
            crate::scenario::MAX_LANES
        ));
    }
    if !(header.dead_man.is_finite() && header.dead_man > 0.0) {
        return Some(format!(
            "has a dead-man's switch of {} s, not a positive time",
            header.dead_man
        ));
    }
    if !(header.scale.is_finite() && header.scale > 0.0) {
        return Some(format!(
            "has a speed of {}x, not a positive one",
            header.scale
        ));
    }
    header.captions.iter().enumerate().find_map(|(n, caption)| {
        let text = crate::base::text::acting_char(&caption.text, &['\n']);
        let notes = crate::base::text::acting_char(
            caption.notes.as_deref().unwrap_or_default(),
            &['\n', '\t'],
        );
        text.or(notes).map(|c| {
            format!(
                "has a caption ({}) holding U+{:04X}, a control character",
                n + 1,
                u32::from(c)
            )
        })
    })
}

/// How far past the `end` line's moment a line may be stamped: a worker's `done` is stamped
/// with its work's moment, which may be a write's pace ahead of the clock.
const PAST_THE_END: f64 = 60.0;

/// Why the `end` line cannot be the night's end, if it cannot: a line of the night stamped
/// well after it.
fn past_the_end(recording: &Recording) -> Option<String> {
    let end = recording.end.as_ref()?.sim;
    let latest = (recording.events.iter().map(|e| e.sim))
        .chain(recording.samples.iter().map(|s| s.sim))
        .fold(f64::NEG_INFINITY, f64::max);
    (latest > end + PAST_THE_END).then(|| {
        format!(
            "ends the night at {}, before a line of it at {}",
            crate::base::clock::SimTime(end),
            crate::base::clock::SimTime(latest)
        )
    })
}

/// A recording read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    pub header: Header,
    pub events: Vec<Event>,
    pub samples: Vec<Sample>,
    pub end: Option<End>,
    /// Set when the last line was cut short and dropped.
    pub truncated: bool,
}

impl Recording {
    /// Reads `path`. A torn last line is dropped (and flagged); a bad line elsewhere is an error.
    pub fn load(path: &Path) -> Result<Self, RecordingError> {
        let shown = escape_controls(&path.display().to_string());
        // Checked without opening: opening a FIFO would wait for a writer forever.
        let path = &crate::base::paths::existing_file(path, "recording")
            .map_err(|e| RecordingError::Path(e.to_string()))?;
        let file = File::open(path).map_err(|e| RecordingError::Read {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        let limit = crate::base::limits::MAX_RECORDING_BYTES;
        let too_large = |size| RecordingError::TooLarge {
            path: shown.clone(),
            size,
            limit,
        };
        let size = file.metadata().map_or(0, |m| m.len());
        if size > limit {
            return Err(too_large(size));
        }
        // Read with the bound too: a file still being written may grow past it meanwhile.
        let mut lines = Vec::new();
        let mut read = 0u64;
        for line in BufReader::new(file.take(limit + 1)).split(b'\n') {
            let line = line.map_err(|e| RecordingError::Read {
                path: shown.clone(),
                message: e.to_string(),
            })?;
            read += line.len() as u64 + 1;
            if read > limit + 1 {
                return Err(too_large(read - 1));
            }
            lines.push(line);
        }
        Self::parse(&shown, &lines)
    }

    fn parse(path: &str, raw: &[Vec<u8>]) -> Result<Self, RecordingError> {
        let lines: Vec<&[u8]> = raw
            .iter()
            .map(Vec::as_slice)
            .filter(|l| !l.is_empty())
            .collect();
        let Some(first) = lines.first() else {
            return Err(RecordingError::Empty(path.into()));
        };
        let mut header = parse_header(path, first)?;
        let named = header.lanes.len();
        if let Some(message) = impossible_header(&header) {
            return Err(RecordingError::Impossible {
                path: path.into(),
                line: 1,
                message,
            });
        }
        // The title, the scenario's name and the lanes' come from a command line as much as
        // from a scenario: shown escaped, never acting on the screen or a slide; a password a
        // recording of an older reclaim holds is shown as `***`.
        let redact = crate::warehouse::postgres::conninfo::redact;
        header.title = escape_controls(&redact(&header.title));
        header.scenario = escape_controls(&redact(&header.scenario));
        header.warehouse = header.warehouse.as_deref().map(redact);
        for lane in &mut header.lanes {
            lane.name = escape_controls(&lane.name);
        }
        let mut recording = Self {
            header,
            events: Vec::new(),
            samples: Vec::new(),
            end: None,
            truncated: false,
        };
        let last = lines.len() - 1;
        for (i, bytes) in lines.iter().enumerate().skip(1) {
            let line = serde_json::from_slice::<SessionLine>(bytes);
            let wrong = match &line {
                Ok(SessionLine::Event(e)) => impossible(e.sim, None, e.lane, named),
                Ok(SessionLine::Sample(s)) => impossible(s.sim, Some(s.lanes.len()), None, named),
                Ok(SessionLine::End(e)) => impossible(e.sim, Some(e.lanes.len()), None, named),
                _ => None,
            };
            if let Some(message) = wrong {
                return Err(RecordingError::Impossible {
                    path: path.into(),
                    line: i + 1,
                    message,
                });
            }
            match line {
                Ok(SessionLine::Event(event)) => recording.events.push(event),
                Ok(SessionLine::Sample(sample)) => {
                    // INVARIANT: samples are in time order, so the last is the latest and
                    // `replay --check` judges the end of the night (and the replay's scrubbing
                    // can search them).
                    if let Some(before) = recording.samples.last()
                        && sample.real_ms < before.real_ms
                    {
                        return Err(RecordingError::OutOfOrder {
                            path: path.into(),
                            line: i + 1,
                            at_ms: sample.real_ms,
                            before_ms: before.real_ms,
                        });
                    }
                    recording.samples.push(sample);
                }
                Ok(SessionLine::End(end)) => recording.end = Some(end),
                Ok(SessionLine::Header(_)) => {
                    return Err(RecordingError::Garbled {
                        path: path.into(),
                        line: i + 1,
                        message: "a second header".into(),
                    });
                }
                // Only the last line may be torn: the recorder died while writing it.
                Err(error) if i == last && error.is_eof() => recording.truncated = true,
                Err(error) => {
                    return Err(RecordingError::Garbled {
                        path: path.into(),
                        line: i + 1,
                        message: escape_controls(&json_error(&error)),
                    });
                }
            }
        }
        if let Some(message) = past_the_end(&recording) {
            return Err(RecordingError::Impossible {
                path: path.into(),
                line: lines.len(),
                message,
            });
        }
        Ok(recording)
    }

    /// The first lane whose header says its items reached a vendor, in a night that ended,
    /// when no sample holds that lane's messages (`RecordingError::NoMessages`).
    #[must_use]
    pub fn vendor_unrecorded(&self, path: &str) -> Option<RecordingError> {
        self.end.as_ref()?;
        let (_, info) = (self.header.lanes.iter().enumerate()).find(|(i, info)| {
            info.reaches_vendor()
                && !(self.samples.iter())
                    .any(|s| s.lanes.get(*i).is_some_and(|l| l.messages.is_some()))
        })?;
        Some(RecordingError::NoMessages {
            path: path.into(),
            lane: info.name.clone(),
        })
    }

    /// Sim seconds since 02:00 at which the recording ends.
    #[must_use]
    pub fn last_sim(&self) -> f64 {
        let sample = self.samples.last().map_or(0.0, |s| s.sim);
        let event = self.events.last().map_or(0.0, |e| e.sim);
        let end = self.end.as_ref().map_or(0.0, |e| e.sim);
        sample
            .max(event)
            .max(end)
            .max(crate::base::clock::NIGHT_START)
    }
}

/// serde_json's account of a line it could not read. Each line of a recording is parsed alone,
/// so serde_json's own "line 1" is always 1 and would contradict the file's line number beside
/// it: only its column is kept.
fn json_error(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let own = format!(" at line 1 column {}", error.column());
    match text.strip_suffix(&own) {
        Some(message) if error.line() == 1 => format!("{message} at column {}", error.column()),
        _ => text,
    }
}

fn parse_header(path: &str, bytes: &[u8]) -> Result<Header, RecordingError> {
    let not_recording = |message: String| RecordingError::NotRecording {
        path: path.into(),
        message: escape_controls(&message),
    };
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| not_recording(json_error(&e)))?;
    if value.get("type").and_then(serde_json::Value::as_str) != Some("header")
        || value.get("format").and_then(serde_json::Value::as_str) != Some(FORMAT)
    {
        return Err(not_recording(format!("no {FORMAT} header")));
    }
    // Only the version this build writes is read: an older header may mean other fields, and a
    // verdict re-derived from fields misread would be a lie.
    match value.get("version") {
        Some(v) if v.as_u64() == Some(u64::from(VERSION)) => {}
        Some(v) if v.as_u64().is_some_and(|n| n > u64::from(VERSION)) => {
            return Err(RecordingError::Newer {
                path: path.into(),
                found: v
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(u32::MAX),
            });
        }
        found => {
            return Err(RecordingError::Unsupported {
                path: path.into(),
                found: found.map_or_else(
                    || "missing".to_string(),
                    |v| escape_controls(&crate::base::text::shorten(&v.to_string(), 40)),
                ),
            });
        }
    }
    match serde_json::from_value::<SessionLine>(value) {
        Ok(SessionLine::Header(header)) => Ok(header),
        Ok(_) => Err(not_recording("no header".into())),
        Err(e) => Err(not_recording(json_error(&e))),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::record) fn header_line() -> String {
        let header = Header {
            format: FORMAT.into(),
            version: VERSION,
            reclaim: "0.1.0".into(),
            started_unix: 0.0,
            title: "t".into(),
            scenario: "s".into(),
            seed: 1,
            scale: 100.0,
            dead_man: 300.0,
            lanes: vec![crate::record::LaneInfo {
                name: "naive".into(),
                strategy: crate::record::WorkerKind::Strategy(crate::worker::Strategy::Naive),
                items: 10,
                db: "w.db".into(),
                vendor: false,
            }],
            captions: Vec::new(),
            warehouse: None,
        };
        serde_json::to_string(&SessionLine::Header(header)).unwrap_or_default()
    }

    pub(in crate::record) fn parse(text: &str) -> Result<Recording, RecordingError> {
        let raw: Vec<Vec<u8>> = text.split('\n').map(|l| l.as_bytes().to_vec()).collect();
        Recording::parse("r.jsonl", &raw)
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_flagged() {
        let text = format!(
            "{}\n{{\"type\":\"event\",\"real_ms\":1,\"sim\":7200.0,\"lane\":0,\"source\":\"runner\",\"kind\":\"notice\",\"text\":\"x\"}}\n{{\"type\":\"sample\",\"real_",
            header_line()
        );
        let recording = parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert!(recording.truncated);
        assert_eq!(recording.events.len(), 1);
    }

    #[test]
    fn bad_recordings_are_refused_with_one_line() {
        let newer = header_line().replace("\"version\":1", "\"version\":9");
        let older = header_line().replace("\"version\":1", "\"version\":0");
        let unversioned = header_line().replace("\"version\":1,", "");
        let text_version = header_line().replace("\"version\":1", "\"version\":\"1\"");
        let cases = [
            ("", "is empty"),
            ("not json", "is not a reclaim recording"),
            (
                "{\"type\":\"header\",\"format\":\"other\"}",
                "is not a reclaim recording",
            ),
            (newer.as_str(), "format version 9, newer"),
            (
                older.as_str(),
                "format version 0, which this reclaim does not read; it writes and reads version 1 only",
            ),
            (unversioned.as_str(), "format version missing"),
            (text_version.as_str(), "format version \"1\", which"),
        ];
        for (text, needle) in cases {
            let err = parse(text).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(err.contains(needle), "{text:?}: {err}");
            assert!(!err.contains('\n'));
        }
        let garbled = format!(
            "{}\n{{garbage}}\n{{\"type\":\"end\",\"real_ms\":1,\"sim\":1.0,\"lanes\":[]}}",
            header_line()
        );
        let err = parse(&garbled)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("line 2 is garbled"), "{err}");
        // The file's line, and the column within it; serde_json's own line (always 1) is not
        // printed beside the file's.
        assert!(err.ends_with("(key must be a string at column 2)"), "{err}");
    }

    /// An error with no place (read from a value, not from text) is kept as serde_json says it.
    #[test]
    fn a_json_error_without_a_place_is_kept_whole() {
        let error = serde_json::from_value::<u8>(serde_json::json!("x")).unwrap_err();
        assert_eq!(error.line(), 0);
        assert_eq!(json_error(&error), error.to_string());
    }

    /// A moment outside any night, or lanes the header does not name, are refused in one line:
    /// a chart drawn to 1.7e308 never finished, and a lane without samples was judged.
    #[test]
    fn impossible_moments_and_lanes_are_refused() {
        let end = |sim: &str, lanes: &str| {
            format!("{{\"type\":\"end\",\"real_ms\":1,\"sim\":{sim},\"lanes\":[{lanes}]}}")
        };
        let lane = "{\"items\":10,\"rows\":10,\"distinct\":10,\"duplicated_task_ids\":0,\"missing\":0,\"derived_status\":\"ok\",\"derived\":\"ok\",\"claimed_status\":\"ok\",\"completed\":true}";
        assert!(parse(&format!("{}\n{}", header_line(), end("7300.0", lane))).is_ok());
        let two = format!("{lane},{lane}");
        let event = "{\"type\":\"event\",\"real_ms\":1,\"sim\":7200.0,\"lane\":99,\"source\":\"runner\",\"kind\":\"notice\",\"text\":\"x\"}";
        let cases = [
            (
                end("1.7e308", lane),
                "line 2 is at sim 1.7e308, outside 0..=8647200",
            ),
            (end("-1.0", lane), "line 2 is at sim -1, outside"),
            (
                end("7300.0", &two),
                "line 2 has 2 lanes where the header names 1",
            ),
            (
                event.to_string(),
                "line 2 is about lane 99, which the header does not name (1 lane)",
            ),
        ];
        for (line, needle) in cases {
            let err = parse(&format!("{}\n{line}", header_line()))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{line}: {err}");
            assert!(err.contains("this file was changed"), "{err}");
        }
        // An end line before the night's lines (a minute's grace for a `done` stamped ahead).
        let sample = "{\"type\":\"event\",\"real_ms\":1,\"sim\":7400.0,\"lane\":0,\"source\":\"runner\",\"kind\":\"notice\",\"text\":\"x\"}";
        let early = format!("{}\n{sample}\n{}", header_line(), end("7300.0", lane));
        let err = parse(&early)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("ends the night at 02:01:40, before a line of it at 02:03:20"),
            "{err}"
        );
        let headers = [
            (
                serde_json::json!({ "lanes": [] }),
                "line 1 names 0 lanes, outside 1..=6",
            ),
            (
                serde_json::json!({ "lanes": vec![serde_json::json!({"name": "n", "strategy": "naive", "items": 1, "db": "x"}); 7] }),
                "line 1 names 7 lanes, outside 1..=6",
            ),
            (
                serde_json::json!({ "dead_man": -1.0 }),
                "dead-man's switch of -1 s",
            ),
            (serde_json::json!({ "scale": 0.0 }), "a speed of 0x"),
            (
                serde_json::json!({ "captions": [{"at": "02:00:00", "text": "\u{1b}]0;pwned\u{7}"}] }),
                "a caption (1) holding U+001B",
            ),
            (
                serde_json::json!({ "captions": [{"at": "02:00:00", "text": "ok", "notes": "a\u{202e}b"}] }),
                "a caption (1) holding U+202E",
            ),
        ];
        for (change, needle) in headers {
            let mut header: serde_json::Value =
                serde_json::from_str(&header_line()).unwrap_or_default();
            for (key, value) in change.as_object().into_iter().flatten() {
                header[key] = value.clone();
            }
            let changed = header.to_string();
            let err = parse(&changed)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(needle), "{changed}: {err}");
        }
        // A title or a lane's name from a command line is kept, escaped.
        let mut header: serde_json::Value =
            serde_json::from_str(&header_line()).unwrap_or_default();
        header["title"] = serde_json::json!("run --exec 'a\u{1b}[2J\u{202e}b'");
        let read = parse(&header.to_string()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.header.title, "run --exec 'a\\u{1b}[2J\\u{202e}b'");
    }

    #[test]
    fn a_recording_past_the_bound_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("huge.jsonl");
        let file = File::create(&path).unwrap_or_else(|e| panic!("{e}"));
        // Sparse: a file past the bound, none of it written.
        let limit = crate::base::limits::MAX_RECORDING_BYTES;
        file.set_len(limit + 1).unwrap_or_else(|e| panic!("{e}"));
        let err = Recording::load(&path).err();
        assert!(
            matches!(err, Some(RecordingError::TooLarge { size, .. }) if size == limit + 1),
            "{err:?}"
        );
    }

    #[test]
    fn a_vendor_lane_without_messages_in_an_ended_night_is_named() {
        let header = header_line().replace("\"db\":\"w.db\"", "\"db\":\"w.db\",\"vendor\":true");
        let sample = |messages: Option<crate::fake_vendor::Counts>| {
            let lanes = vec![crate::engine::LaneSnapshot {
                messages,
                ..crate::engine::LaneSnapshot::of_rows(10, true)
            }];
            let sample = super::super::Sample {
                real_ms: 1,
                sim: 7300.0,
                lanes,
            };
            serde_json::to_string(&SessionLine::Sample(sample)).unwrap_or_default()
        };
        let end = "{\"type\":\"end\",\"real_ms\":2,\"sim\":7300.0,\"lanes\":[{\"items\":10,\"rows\":10,\"distinct\":10,\"duplicated_task_ids\":0,\"missing\":0,\"derived_status\":\"ok\",\"derived\":\"ok\",\"claimed_status\":\"ok\",\"completed\":true}]}";
        let check = |text: String| {
            let recording = parse(&text).unwrap_or_else(|e| panic!("{e}"));
            recording
                .vendor_unrecorded("r.jsonl")
                .map(|e| e.to_string())
        };
        let bare = check(format!("{header}\n{}\n{end}", sample(None)));
        assert!(
            bare.as_deref()
                .is_some_and(|e| e.contains("lane naive sent its items to a vendor")),
            "{bare:?}"
        );
        let held = sample(Some(crate::fake_vendor::Counts::default()));
        assert_eq!(check(format!("{header}\n{held}\n{end}")), None);
        // A night that never ended may have stopped before the first read of the vendor.
        assert_eq!(check(format!("{header}\n{}", sample(None))), None);
        // Nor is a lane that reached no vendor asked for messages.
        assert_eq!(
            check(format!("{}\n{}\n{end}", header_line(), sample(None))),
            None
        );
    }
}
