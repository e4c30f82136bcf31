//! `reclaim inspect`: what a warehouse holds, and the status derived from its rows.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::cli::InspectArgs;
use crate::error::Error;
use crate::exit::{DATA_WRONG, OK};
use crate::store::inspect;

pub(super) fn run(args: &InspectArgs) -> Result<u8, Error> {
    let inspection = inspect::inspect(&args.db, args.items)?;
    let ids = if args.ids {
        Some(inspect::duplicated_ids(&args.db, usize::MAX)?.0)
    } else {
        None
    };
    let mut out = crate::out::stdout();
    let text = if args.json {
        let mut value =
            serde_json::to_value(&inspection).map_err(|e| Error::Refused(e.to_string()))?;
        value["derived_status"] = inspection.derived().label().into();
        if let Some(ids) = &ids {
            value["duplicated_ids"] =
                serde_json::to_value(ids).map_err(|e| Error::Refused(e.to_string()))?;
        }
        format!("{value}\n")
    } else {
        let mut text = inspect::render(&inspection);
        if let Some(ids) = &ids {
            let _ = write!(
                text,
                "\nduplicated task ids ({}): rows each, then the runs that wrote them, oldest first\n",
                ids.len()
            );
            for id in ids {
                let _ = writeln!(text, "{}", inspect::duplicated_line(id));
            }
        }
        text
    };
    let _ = out.write_all(text.as_bytes());
    Ok(if inspection.consistent {
        OK
    } else {
        DATA_WRONG
    })
}
