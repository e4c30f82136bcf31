//! `reclaim inspect`: what a warehouse holds, and the status derived from its rows.

use std::io::{self, Write as _};

use crate::cli::InspectArgs;
use crate::error::Error;
use crate::exit::{DATA_WRONG, OK};
use crate::store::inspect;

pub(super) fn run(args: &InspectArgs) -> Result<u8, Error> {
    let inspection = inspect::inspect(&args.db, args.items)?;
    let mut out = io::stdout().lock();
    let text = if args.json {
        let mut value =
            serde_json::to_value(&inspection).map_err(|e| Error::Refused(e.to_string()))?;
        value["derived_status"] = inspection.derived().label().into();
        format!("{value}\n")
    } else {
        inspect::render(&inspection)
    };
    let _ = out.write_all(text.as_bytes());
    Ok(if inspection.consistent {
        OK
    } else {
        DATA_WRONG
    })
}
