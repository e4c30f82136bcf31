//! A map's band as one JUnit test case, for reclaim's map and a job's alike: passed when every
//! night of the band is right, failed by a wrong one (and, under `--strict`, by one that tested
//! nothing), skipped when no night of it ran.

use super::Tested;
use crate::junit::{Case, CaseResult};

/// The case for a band named `class`/`name` whose nights tested what each says, each with the
/// line that names it (`task-003: 201 rows, ...`).
#[must_use]
pub fn band_case(class: String, name: String, nights: &[(Tested, String)], strict: bool) -> Case {
    let said = |t: Tested| -> Vec<&str> {
        (nights.iter())
            .filter(|(tested, _)| *tested == t)
            .map(|(_, line)| line.as_str())
            .collect()
    };
    let untested = said(Tested::Nothing);
    let mut wrong = said(Tested::Wrong);
    let listed: Vec<&str> = wrong.iter().chain(&untested).copied().collect();
    if strict {
        wrong.extend(untested);
    }
    let right = said(Tested::Right).len();
    let detail = format!(
        "{right} of {} nights right{}",
        nights.len(),
        if listed.is_empty() {
            String::new()
        } else {
            format!("; {}", listed.join("; "))
        }
    );
    let outcome = if nights.is_empty() {
        CaseResult::Skipped("no night of this band ran".into())
    } else if wrong.is_empty() {
        CaseResult::Passed
    } else {
        CaseResult::Failed(format!("{} of {} nights wrong", wrong.len(), nights.len()))
    };
    Case {
        class,
        name,
        outcome,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_night_that_tested_nothing_fails_the_band_only_under_strict() {
        let nights = vec![
            (Tested::Right, "task-000: right".to_string()),
            (
                Tested::Nothing,
                "task-001: the kill never fired".to_string(),
            ),
        ];
        let lenient = band_case("map.naive".into(), "after-commit".into(), &nights, false);
        assert_eq!(lenient.outcome, CaseResult::Passed);
        assert_eq!(
            lenient.detail,
            "1 of 2 nights right; task-001: the kill never fired"
        );
        let strict = band_case("map.naive".into(), "after-commit".into(), &nights, true);
        assert_eq!(
            strict.outcome,
            CaseResult::Failed("1 of 2 nights wrong".into())
        );
        let empty = band_case("map.exec".into(), "after-commit".into(), &[], false);
        assert!(matches!(empty.outcome, CaseResult::Skipped(_)));
    }
}
