//! The `reclaim` binary: parses the command line and hands it to the library.

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    // A worker (or the vendor, the relay, a job's guard) dies with the reclaim that started it.
    reclaim::supervisor::process::die_with_parent();
    // A write past `ulimit -f` fails and is said, instead of killing reclaim with no word.
    reclaim::base::signals::survive_file_limit();
    match reclaim::cli::Cli::try_parse() {
        Ok(cli) => reclaim::commands::main(cli),
        Err(error) => reclaim::commands::usage_error(&error),
    }
}
