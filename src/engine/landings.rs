//! Where the random kills placed by rows (`--kill-rows`) landed: each kill's planned count of
//! rows since its spawn beside the count the table held once the killed worker was reaped, so
//! a report can show that a storm landed where it was placed (or by how much it did not).

use serde::Serialize;

/// How many kills a report lists one by one (a storm may hold a hundred thousand).
pub const LISTED: usize = 100;

/// The kills placed by rows so far, and where they landed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RowsLandings {
    /// The first `LISTED` kills: rows since the spawn planned, and rows since it at the landing.
    pub first: Vec<(u64, u64)>,
    /// Kills that landed on their planned row exactly.
    pub at_plan: u64,
    /// Kills that landed with more rows than planned (a job reclaim cannot hold back writes
    /// more while the kill is on its way), and the most rows past the plan of any of them.
    pub past_plan: u64,
    pub most_past_plan: u64,
}

impl RowsLandings {
    /// A kill planned after `planned` rows since its spawn landed after `landed`.
    pub fn add(&mut self, planned: u64, landed: u64) {
        if self.first.len() < LISTED {
            self.first.push((planned, landed));
        }
        if landed > planned {
            self.past_plan += 1;
            self.most_past_plan = self.most_past_plan.max(landed - planned);
        } else {
            self.at_plan += 1;
        }
    }

    /// How many kills landed.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.at_plan + self.past_plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn landings_are_counted_on_and_past_their_plan_and_the_first_are_listed() {
        let mut landings = RowsLandings::default();
        for i in 0..150 {
            landings.add(10, if i % 3 == 0 { 14 } else { 10 });
        }
        assert_eq!(landings.count(), 150);
        assert_eq!((landings.at_plan, landings.past_plan), (100, 50));
        assert_eq!(landings.most_past_plan, 4);
        assert_eq!(landings.first.len(), LISTED);
        assert_eq!(landings.first[0], (10, 14));
    }
}
