//! `reclaim scenarios`: the shipped scenarios, one line each.

use crate::error::Error;
use crate::exit::OK;

pub(super) fn run() -> Result<u8, Error> {
    for (name, _) in crate::scenario::SHIPPED {
        let scenario = crate::scenario::Scenario::load(name)?;
        println!("{name:<20} {}", scenario.title);
    }
    println!("\nrun one with: reclaim tui --scenario NAME   (or a path to your own .toml)");
    Ok(OK)
}
