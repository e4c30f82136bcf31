//! Exports of a recorded night, for slides, web pages and plots: an asciicast of the dashboard
//! as recorded (`.cast`), one frame as SVG (`.svg`), and the figures as CSV (`.csv`).
//!
//! Every frame is the replay dashboard (`tui::replay::ReplayApp`) drawn by the same pure
//! `ui::render_to` into a buffer, so an export shows exactly what `reclaim replay` shows.

mod ansi;
mod cast;
pub mod csv;
mod svg;

use std::io::{BufWriter, Write};
use std::path::Path;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::error::{Context as _, Error};
use crate::record::Recording;
use crate::tui::replay::ReplayApp;
use crate::tui::theme::Theme;
use crate::tui::ui;

/// What an export file holds, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// asciicast v2: the dashboard as recorded, with a marker at each kill, restart and caption.
    Cast,
    /// The dashboard at one moment, with its colours.
    Svg,
    /// One row per sample and lane.
    Csv,
}

impl Format {
    /// The format a path's extension names.
    pub fn of(path: &Path) -> Result<Self, Error> {
        match path.extension().and_then(|e| e.to_str()) {
            Some("cast") => Ok(Self::Cast),
            Some("svg") => Ok(Self::Svg),
            Some("csv") => Ok(Self::Csv),
            _ => Err(Error::Refused(format!(
                "--export {}: name a .cast (asciicast for asciinema), .svg (one frame for a slide) or .csv (the figures for a plot) file",
                crate::base::paths::shown(path)
            ))),
        }
    }
}

/// Where and how to export.
#[derive(Debug, Clone)]
pub struct Spec<'a> {
    pub path: &'a Path,
    /// The moment of an SVG frame, in seconds after midnight (the end of the night if `None`).
    pub at: Option<f64>,
    /// Columns and rows of the frames.
    pub size: (u16, u16),
    pub theme: Theme,
}

/// Writes `recording` to the request's path (a new file; checked before anything is written)
/// and says what was written.
pub fn export(recording: Recording, request: &Spec<'_>) -> Result<String, Error> {
    let format = Format::of(request.path)?;
    let path = crate::base::paths::new_file(request.path, "--export", "give --export a new file")?;
    let (w, h) = request.size;
    if w < ui::MIN_WIDTH || h < ui::MIN_HEIGHT {
        return Err(Error::Refused(format!(
            "--size {w}x{h} is smaller than the dashboard's {}x{}",
            ui::MIN_WIDTH,
            ui::MIN_HEIGHT
        )));
    }
    if let (Format::Svg, Some(at)) = (format, request.at) {
        let end = recording.last_sim();
        // A second past the end would be drawn as the end, under another time than it names.
        if at > end.floor() {
            return Err(Error::Refused(format!(
                "--at {} is after the recorded night's end ({}): name a moment of the night",
                crate::base::clock::SimTime(at),
                crate::base::clock::SimTime(end)
            )));
        }
    }
    // Written beside it under a temporary name and renamed into place once whole: a full disk
    // leaves no half file (which a retry would then find "already exists").
    // Stopped (Ctrl-C, SIGTERM), the writing stops at its next write and the temporary file is
    // removed as it is dropped: nothing is left beside the path.
    crate::base::signals::install().context(|| "cannot install signal handlers".into())?;
    let temp = crate::base::fsafe::begin_new(&path)
        .context(|| format!("cannot create a file beside {}", path.display()))?;
    let mut out = BufWriter::new(Stoppable(temp));
    let written = match format {
        Format::Cast => cast::write(&recording, request, &mut out),
        Format::Svg => svg::write(recording, request, &mut out),
        Format::Csv => csv::write(&recording, &mut out),
    };
    if let Some(signal) = crate::base::signals::received() {
        return Err(Error::StoppedWriting(signal));
    }
    let said = written.context(|| format!("cannot write {}", path.display()))?;
    let flushed = out
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error);
    if let Some(signal) = crate::base::signals::received() {
        return Err(Error::StoppedWriting(signal));
    }
    let Stoppable(temp) = flushed.context(|| format!("cannot write {}", path.display()))?;
    crate::base::fsafe::finish_new(temp, &path)
        .context(|| format!("cannot write {}", path.display()))?;
    Ok(said)
}

/// A writer that fails once reclaim has been told to stop (`signals::received`). It writes
/// through the temporary file's own handle: an error (a full disk, `ulimit -f`) then names the
/// path asked for, not the temporary name that is removed with it.
struct Stoppable(tempfile::NamedTempFile);

impl Write for Stoppable {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(signal) = crate::base::signals::received() {
            // Not `Interrupted`, which `write_all` would retry.
            return Err(std::io::Error::other(format!("stopped by {signal}")));
        }
        self.0.as_file_mut().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.as_file_mut().flush()
    }
}

/// The replay's frame at `at` (seconds after midnight), drawn into a `w`x`h` buffer, without
/// the footer of keys: a slide or a cast is not a screen that takes any.
fn frame(app: &mut ReplayApp, at: f64, (w, h): (u16, u16), theme: Theme) -> Buffer {
    let view = app.frame_at(at);
    // Drawn taller by the footer's rows, which are then left out.
    let footer = ui::footer_layout(view.mode, w, h).rows.len().max(1) as u16;
    let tall = Rect::new(0, 0, w, h.saturating_add(footer));
    let mut drawn = Buffer::empty(tall);
    ui::render_to(tall, &mut drawn, &view, theme);
    let area = Rect::new(0, 0, w, h);
    let mut buffer = Buffer::empty(area);
    for y in 0..h {
        for x in 0..w {
            if let (Some(from), Some(to)) = (drawn.cell((x, y)), buffer.cell_mut((x, y))) {
                *to = from.clone();
            }
        }
    }
    buffer
}
