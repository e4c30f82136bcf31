//! `reclaim schemas`'s flags: list reclaim's nights on a PostgreSQL server, or drop some.

use clap::Args;

#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// The server: postgres://USER@HOST/DB (a private cluster's kept nights are `reclaim
    /// kept`'s)
    #[arg(long, value_name = "URL", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::warehouse::Spec>()))]
    pub warehouse: crate::warehouse::Spec,
    /// Drop these nights (their names as listed), schemas, tables and all; a running night is
    /// refused
    #[arg(long, value_name = "NIGHT", num_args = 1..)]
    pub drop: Vec<String>,
    /// Drop every night made longer ago than AGE (such as 90m, 12h or 7d) that is not running
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    pub older_than: Option<u64>,
    /// Print the list as JSON, one object
    #[arg(long, conflicts_with_all = ["drop", "older_than"])]
    pub json: bool,
}

/// An age such as `90m`, `12h` or `7d` (or `30s`), in seconds.
fn parse_age(text: &str) -> Result<u64, String> {
    let units = [("s", 1), ("m", 60), ("h", 3_600), ("d", 86_400)];
    let parsed = units.iter().find_map(|(unit, scale)| {
        let number = text.strip_suffix(unit)?;
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        number.parse::<u64>().ok()?.checked_mul(*scale)
    });
    parsed
        .filter(|secs| *secs <= 36_500 * 86_400)
        .ok_or_else(|| {
            format!(
                "'{}' is not an age such as 90m, 12h or 7d",
                crate::base::text::escape_controls(text)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::parse_age;

    #[test]
    fn an_age_is_a_number_and_its_unit() {
        assert_eq!(parse_age("90m"), Ok(5_400));
        assert_eq!(parse_age("7d"), Ok(604_800));
        assert_eq!(parse_age("0h"), Ok(0));
        for bad in [
            "7",
            "d",
            "-1d",
            "+7d",
            "1.5h",
            "7w",
            "",
            "99999999999d",
            "5µ",
            "7é",
        ] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }
}
