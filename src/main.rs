//! The `reclaim` binary: parses the command line and hands it to the library.

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    reclaim::app::main(reclaim::cli::Cli::parse())
}
