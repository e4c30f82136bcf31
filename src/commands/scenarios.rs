//! `reclaim scenarios`: the shipped scenarios, one line each.

use std::io::Write as _;

use crate::base::exit::OK;
use crate::error::Error;

pub(super) fn run() -> Result<u8, Error> {
    let mut out = crate::base::out::stdout();
    for (name, _) in crate::scenario::SHIPPED {
        let scenario = crate::scenario::Scenario::load(name)?;
        let _ = writeln!(out, "{name:<20} {}", scenario.title);
    }
    let _ = writeln!(
        out,
        "\nrun one with: reclaim tui --scenario NAME   (or a path to your own .toml)"
    );
    Ok(OK)
}
