//! `reclaim kept`'s flags: list the nights reclaim kept, remove some, or clean them all; and
//! what `map --keep` asks of the map.

use clap::Args;

#[derive(Debug, Args)]
pub struct KeptArgs {
    /// Remove these nights: their names as listed (or their paths); only folders reclaim made
    /// and no running reclaim holds
    #[arg(long, value_name = "NAME", num_args = 1.., conflicts_with = "clean")]
    pub remove: Vec<String>,
    /// Remove every kept night no running reclaim holds
    #[arg(long)]
    pub clean: bool,
    /// Print the list as JSON, one object
    #[arg(long, conflicts_with_all = ["remove", "clean"])]
    pub json: bool,
}

impl super::MapArgs {
    /// `--keep always` (or `--keep` alone): every night's database kept.
    #[must_use]
    pub fn keeps_all(&self) -> bool {
        self.keep == Some(crate::base::kept::Keep::Always)
    }
}
