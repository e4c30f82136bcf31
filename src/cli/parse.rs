//! The command line's own value parsers: each flag's text checked and typed as clap reads it;
//! a refusal is the sentence clap prints beside the flag.

use std::time::Duration;

use super::{MAX_ITEMS, Strategy};

/// The largest queue `map` accepts: the map runs items x tasks x points rows per strategy.
pub const MAX_MAP_ITEMS: u64 = 100_000;

/// Strategies named on the command line, in the order given (`all`: every one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategies(pub Vec<Strategy>);

/// The map's points named on the command line (crash points, `lost-answer`), in the order
/// given, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Points(pub Vec<crate::map::Point>);

pub(super) fn parse_strategies(text: &str) -> Result<Strategies, String> {
    if text == "all" {
        // The four whose rows alone tell the story; the outbox and claim are named to be mapped.
        return Ok(Strategies(
            Strategy::all()
                .iter()
                .copied()
                .filter(|s| s.in_full_map())
                .collect(),
        ));
    }
    text.split(',')
        .map(|name| {
            Strategy::from_name(name.trim()).ok_or_else(|| {
                let names: Vec<&str> = Strategy::all().iter().map(|s| s.name()).collect();
                format!(
                    "unknown strategy '{}'; give all or one of {}",
                    crate::base::text::shorten(name, 40),
                    names.join(", ")
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|list| {
            // Twice the same strategy is one map drawn twice, and its nights collide.
            match list
                .iter()
                .enumerate()
                .find(|(i, s)| list[..*i].contains(s))
            {
                Some((_, twice)) => Err(format!(
                    "{} is named twice; name each strategy once",
                    twice.name()
                )),
                None => Ok(Strategies(list)),
            }
        })
}

pub(super) fn parse_points(text: &str) -> Result<Points, String> {
    let mut points = Vec::new();
    for name in text.split(',').map(str::trim) {
        let point = (crate::map::Point::ALL.into_iter())
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown point '{}'; the points are {}",
                    crate::base::text::shorten(name, 40),
                    crate::map::Point::ALL
                        .map(crate::map::Point::name)
                        .join(", ")
                )
            })?;
        if !points.contains(&point) {
            points.push(point);
        }
    }
    Ok(Points(points))
}

/// `--tasks A..B` as typed: its ends are read against the queue they name (reclaim's tasks, or
/// an own job's keys) once that queue is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub first: String,
    pub last: String,
}

/// `--tasks` that names no range of the postmortem's queue: the sentence says why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotTasks(String);

impl KeyRange {
    /// The range in the postmortem's queue (task ids or numbers).
    pub fn tasks(&self) -> Result<(u64, u64), NotTasks> {
        task_range(&self.first, &self.last)
    }
}

pub(super) fn parse_key_range(text: &str) -> Result<KeyRange, String> {
    let (a, b) = text.split_once("..").ok_or_else(|| {
        format!(
            "'{}' is not a range such as 10..20",
            crate::base::text::shorten(text, 40)
        )
    })?;
    if a.is_empty() || b.is_empty() {
        return Err(format!(
            "'{}' is not a range such as 10..20",
            crate::base::text::shorten(text, 40)
        ));
    }
    Ok(KeyRange {
        first: a.to_string(),
        last: b.trim_start_matches('=').to_string(),
    })
}

/// A range of the postmortem's queue, from its two ends as typed (task ids or numbers).
fn task_range(first: &str, last: &str) -> Result<(u64, u64), NotTasks> {
    let task = |t: &str| {
        crate::task::parse_task_id(t.trim_start_matches('=')).ok_or_else(|| {
            NotTasks(format!(
                "'{}' is not a task id such as task-111",
                crate::base::text::shorten(t, 40)
            ))
        })
    };
    let (a, b) = (task(first)?, task(last)?);
    if a > b {
        return Err(NotTasks(format!(
            "the range {a}..{b} is empty: the first task comes after the last"
        )));
    }
    Ok((a, b))
}

pub(super) fn parse_clock(text: &str) -> Result<f64, String> {
    crate::scenario::parse_clock(text)
        .ok_or_else(|| format!("'{text}' is not a time of the night such as 02:11:47"))
}

pub(super) fn parse_size(text: &str) -> Result<(u16, u16), String> {
    let parsed = text
        .split_once(['x', 'X'])
        .and_then(|(w, h)| Some((w.trim().parse().ok()?, h.trim().parse().ok()?)));
    match parsed {
        Some((w, h)) if (1..=1000).contains(&w) && (1..=1000).contains(&h) => Ok((w, h)),
        _ => Err(format!(
            "'{text}' is not a size such as 120x40 (columns x rows, each 1..=1000)"
        )),
    }
}

pub(super) fn parse_delay_ms(text: &str) -> Result<f64, String> {
    let ms: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(0.0..=60_000.0).contains(&ms) {
        return Err(format!(
            "{} ms is outside 0..=60000",
            crate::base::text::typed_number(text)
        ));
    }
    Ok(ms)
}

/// Sim seconds, up to a day (a night is shorter).
pub(super) fn parse_sim_seconds(text: &str) -> Result<f64, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of sim seconds"))?;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!(
            "{} sim seconds is outside 0..=86400",
            crate::base::text::typed_number(text)
        ));
    }
    Ok(secs)
}

/// `run --scenario --speed`: the dashboard's range of speeds, where a night is shown to stop
/// and say the same at every one of them.
pub(super) fn parse_speed(text: &str) -> Result<f64, String> {
    let speed: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    let (min, max) = (crate::tui::MIN_SPEED, crate::tui::MAX_SPEED);
    if !(min..=max).contains(&speed) {
        return Err(format!(
            "{} is outside {min}..={max}, the dashboard's speeds",
            crate::base::text::typed_number(text)
        ));
    }
    Ok(speed)
}

pub(super) fn parse_scale(text: &str) -> Result<f64, String> {
    let scale: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(0.001..=1_000_000.0).contains(&scale) {
        return Err(format!(
            "{} is outside 0.001..=1000000",
            crate::base::text::typed_number(text)
        ));
    }
    Ok(scale)
}

/// The longest `--progress-deadline`: a day.
const MAX_PROGRESS_DEADLINE: f64 = 86_400.0;

/// The shortest `--progress-deadline`: a hundredth of a second.
const MIN_PROGRESS_DEADLINE: f64 = 0.01;

/// `--progress-deadline SECS`: real seconds, from a hundredth of a second to a day.
pub(super) fn parse_progress_deadline(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !(MIN_PROGRESS_DEADLINE..=MAX_PROGRESS_DEADLINE).contains(&secs) {
        return Err(format!(
            "'{text}' is outside {MIN_PROGRESS_DEADLINE}..={MAX_PROGRESS_DEADLINE} seconds"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

pub(crate) fn items_parser() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=MAX_ITEMS)
}

/// `--pause-at-random SECS`: 1..=86400 seconds of the night, as `--pause-at`'s.
pub(super) fn parse_pause_secs(text: &str) -> Result<f64, String> {
    crate::worker::pause_secs(text).ok_or_else(|| {
        format!(
            "'{}': the pause is 1..=86400 seconds of the night",
            crate::base::text::typed_number(text)
        )
    })
}
