//! `reclaim scenarios`: the shipped scenarios, one line each.

use crate::exit::OK;

pub(super) fn run() -> Result<u8, String> {
    for (name, _) in crate::scenario::SHIPPED {
        let scenario = crate::scenario::Scenario::load(name).map_err(|e| e.to_string())?;
        println!("{name:<20} {}", scenario.title);
    }
    println!("\nrun one with: reclaim tui --scenario NAME   (or a path to your own .toml)");
    Ok(OK)
}
