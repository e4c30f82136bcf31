//! `reclaim completions SHELL` and `reclaim man`: generated from the command line's own
//! definition (`cli::Cli`), so they never drift from what the binary accepts.

use std::io::Write as _;

use clap::CommandFactory as _;

use crate::base::exit;
use crate::cli::Cli;
use crate::error::{Context as _, Error};

pub(super) fn completions(shell: clap_complete::Shell) -> u8 {
    let mut command = Cli::command();
    // Generated whole first: clap_complete panics on a write that fails (`| head -c 10`).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "reclaim", &mut script);
    let _ = crate::base::out::stdout().write_all(&script);
    exit::OK
}

pub(super) fn man() -> Result<u8, Error> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context(|| "cannot render the manual page".into())?;
    // A closed pipe (`| head`) is not an error worth a line.
    let _ = crate::base::out::stdout().write_all(&page);
    Ok(exit::OK)
}
