//! `reclaim shrink FILE`: the smallest failing schedule.
use std::io::Write;

use crate::cli::ShrinkArgs;
use crate::error::Error;

pub(super) fn run(_args: &ShrinkArgs, _out: &mut dyn Write) -> Result<u8, Error> {
    Err(Error::Refused("not yet".into()))
}
