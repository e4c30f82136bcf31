//! A map's band as one JUnit test case, for reclaim's map and a job's alike: passed when every
//! night of the band is right, failed by a wrong one (and, under `--strict`, by one that tested
//! nothing), skipped when no night of it ran.

use super::Tested;
use crate::verdict::account::{Account, Kind};
use crate::verdict::junit::{Case, CaseResult};

/// The case for a band named `class`/`name` whose nights tested what each says, each with the
/// line that names it (`task-003: 201 rows, ...`): the one rule on the band's nights, as the
/// map's own outcome is (a wrong night fails it; one that tested nothing leaves it untested:
/// skipped, and failed under `--strict`).
#[must_use]
pub fn band_case(class: String, name: String, nights: &[(Tested, String)], strict: bool) -> Case {
    let mut account = Account::new();
    for (tested, line) in nights {
        match tested {
            Tested::Right => {}
            Tested::Wrong => account.push(Kind::Data, line.clone()),
            Tested::Nothing => account.push(Kind::NotFired, line.clone()),
        }
    }
    let right = (nights.iter()).filter(|(t, _)| *t == Tested::Right).count();
    let listed: Vec<&str> = (account.entries.iter()).map(|e| e.said.as_str()).collect();
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
    } else {
        account.judge(strict).junit()
    };
    Case {
        class,
        name,
        outcome,
        detail,
    }
}

/// The case for what a whole map failed beside its bands (left before it finished, or no
/// night ran): the map's own judgement, so the file fails where the exit code does.
#[must_use]
pub fn whole_map_case(class: &str, judged: &crate::verdict::account::Judgement) -> Option<Case> {
    let whole: Vec<&str> = (judged.wrong.iter())
        .filter(|e| e.kind == Kind::NeverCompleted)
        .map(|e| e.said.as_str())
        .collect();
    (!whole.is_empty()).then(|| Case {
        class: class.to_string(),
        name: "the whole map".into(),
        outcome: CaseResult::Failed(format!("FAIL: {}", whole.join("; "))),
        detail: whole.join("; "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_night_that_tested_nothing_leaves_the_band_untested_and_fails_it_only_under_strict() {
        let nights = vec![
            (Tested::Right, "task-000: right".to_string()),
            (
                Tested::Nothing,
                "task-001: the kill never fired".to_string(),
            ),
        ];
        // Untested, as the console says: skipped, not passed.
        let lenient = band_case("map.naive".into(), "after-commit".into(), &nights, false);
        assert_eq!(
            lenient.outcome,
            CaseResult::Skipped("UNTESTED: task-001: the kill never fired".into())
        );
        assert_eq!(
            lenient.detail,
            "1 of 2 nights right; task-001: the kill never fired"
        );
        let strict = band_case("map.naive".into(), "after-commit".into(), &nights, true);
        assert_eq!(
            strict.outcome,
            CaseResult::Failed(
                "UNTESTED (--strict: a failure): task-001: the kill never fired".into()
            )
        );
        let wrong = vec![(Tested::Wrong, "task-002: DUPLICATED 1".to_string())];
        let failed = band_case("map.naive".into(), "after-commit".into(), &wrong, false);
        assert_eq!(
            failed.outcome,
            CaseResult::Failed("FAIL: task-002: DUPLICATED 1".into())
        );
        let empty = band_case("map.exec".into(), "after-commit".into(), &[], false);
        assert!(matches!(empty.outcome, CaseResult::Skipped(_)));
    }

    #[test]
    fn a_map_left_before_it_finished_fails_its_file_as_its_exit_does() {
        let tally = crate::map::Tally::default();
        let left = crate::map::account(tally, 3, Some(5), "kill").judge(false);
        let case = whole_map_case("map.exec", &left);
        assert!(
            matches!(&case, Some(Case { outcome: CaseResult::Failed(m), .. }) if m.contains("5 nights never ran")),
            "{case:?}"
        );
        let whole = crate::map::account(tally, 3, None, "kill").judge(true);
        assert_eq!(whole_map_case("map.exec", &whole), None);
    }
}
