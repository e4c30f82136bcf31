//! How a kept night is named and shown to a person: its folder's name, its age, its size.

use std::path::Path;

/// A part of a night's folder name: letters, digits, `-` and `_` only (a scenario's path
/// gives its file's stem), at most 24 of them.
pub(super) fn name_part(text: &str) -> String {
    let stem = Path::new(text)
        .file_stem()
        .map_or_else(|| text.to_string(), |s| s.to_string_lossy().into_owned());
    let part: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    if part.is_empty() {
        "night".into()
    } else {
        part
    }
}

/// `YYYYMMDD-HHMMSS` in UTC (the folder's name; `reclaim kept` shows the age).
#[must_use]
pub fn utc_stamp(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// An age as a person says it: `40s`, `12m`, `3h`, `2d`.
#[must_use]
pub fn age(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// A size as a person reads it: `812 KB`, `12.4 MB`.
#[must_use]
pub fn size(bytes: u64) -> String {
    match bytes {
        0..1_000_000 => format!("{} KB", bytes.div_ceil(1000)),
        1_000_000..1_000_000_000 => format!("{:.1} MB", bytes as f64 / 1e6),
        _ => format!("{:.1} GB", bytes as f64 / 1e9),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::kept::Keep;

    #[test]
    fn stamps_ages_and_sizes_read_as_a_person_says_them() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000");
        assert_eq!(utc_stamp(1_710_382_500), "20240314-021500");
        assert_eq!(age(59), "59s");
        assert_eq!(age(3_599), "59m");
        assert_eq!(age(7_200), "2h");
        assert_eq!(age(200_000), "2d");
        assert_eq!(size(1), "1 KB");
        assert_eq!(size(12_400_000), "12.4 MB");
        assert_eq!(name_part("./my scenario.toml"), "my_scenario");
        assert_eq!(name_part(""), "night");
        assert_eq!("failed".parse::<Keep>(), Ok(Keep::Failed));
        assert!("sometimes".parse::<Keep>().is_err());
    }
}
