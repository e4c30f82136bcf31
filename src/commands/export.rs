//! `reclaim replay FILE --export OUT`: a recorded night as an asciicast, an SVG frame or CSV.

use std::io::Write as _;

use crate::base::exit;
use crate::cli::ReplayArgs;
use crate::error::Error;
use crate::export::{self, Spec};
use crate::record::Recording;
use crate::tui::theme::Theme;

pub(super) fn run(args: &ReplayArgs) -> Result<u8, Error> {
    let Some(path) = args.export.as_deref() else {
        return Err(Error::Refused("--export needs a file".into()));
    };
    // Checked before the recording is read: a wrong extension or size is refused at once.
    let format = export::Format::of(path)?;
    if args.at.is_some() && format != export::Format::Svg {
        return Err(Error::Refused(format!(
            "--at names the moment of one frame, an .svg's; {} holds the whole night (leave --at out, or export an .svg)",
            crate::base::paths::shown(path)
        )));
    }
    let recording = Recording::load(&args.file)?;
    if recording.truncated {
        eprintln!(
            "reclaim: warning: {}: the last line was cut short; exporting the rest",
            crate::base::paths::shown(&args.file)
        );
    }
    let request = Spec {
        path,
        at: args.at,
        size: args.size,
        theme: Theme::chosen(args.theme),
    };
    let said = export::export(recording, &request)?;
    let _ = writeln!(
        crate::base::out::stdout(),
        "reclaim: wrote {} ({said})",
        crate::base::paths::shown(path)
    );
    Ok(exit::OK)
}
