//! The lines a worker prints on stdout (`WorkerLine`): reclaim's own worker's every word, the
//! relay's, and the two things someone else's job may say that reclaim reads (a crash point,
//! `reclaim-point NAME KEY`, and in its last line a claim, `rows_written=N`). Every line the
//! engine acts on is a variant here, written by `Display` and read back by `FromStr`, so nothing
//! above this module looks at a worker's words as text.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use super::commands::Moment;
use super::points::{self, Point};
use crate::base::clock::SimTime;
use crate::task::{parse_task_id, task_id};
use crate::worker::{CrashAt, Strategy};

/// Where a restarted worker picks up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// Every task already has its checkpoint.
    NothingLeft {
        skipped: u64,
    },
    From {
        task: u64,
        skipped: u64,
    },
}

/// A step of the long item's work (`--long-item` with `--split`), each committed as it finishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Step `step` of `steps` of the long item `task` has committed.
    Done { task: u64, step: u64, steps: u64 },
    /// A restarted worker found steps committed before it: its work resumes at `step`.
    ResumesAt { task: u64, step: u64, steps: u64 },
}

/// What the relay (the outbox strategy's deliverer) says as it starts and as it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relay {
    Started {
        vendor: SocketAddr,
        pid: u32,
    },
    /// Every entry of the outbox is delivered: `delivered` by this process, of which the vendor
    /// answered `answered_from_keys` from its store of idempotency keys.
    Finished {
        delivered: u64,
        answered_from_keys: u64,
    },
}

/// One line a worker prints on stdout. The first word is its kind; the supervisor stamps it with
/// the sim time and puts it on the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerLine {
    /// `run_id` is `None` for the naive worker, which logs `(none)` as the postmortem's did.
    Start {
        run_id: Option<String>,
        items: u64,
        strategy: Strategy,
        pid: u32,
    },
    Resume(Resume),
    /// The worker is about to SIGKILL itself at a named crash point.
    Crash {
        at: CrashAt,
    },
    /// The worker's claim: the table's row count, `status=ok` whatever it holds, and what this
    /// process inserted. Its word, unchecked.
    Done {
        rows_written: u64,
        inserted: u64,
    },
    /// A gated worker will write next once it may have made `need` writes in all.
    Wait {
        need: u64,
    },
    /// A gated worker has committed its `writes`th item, the last of them `last`.
    Wrote {
        writes: u64,
        last: u64,
    },
    /// A gated claim worker found every item left leased by another worker: it gives back the
    /// write it was granted and asks to be woken at the moment `at` the first lease ends; its
    /// schedule goes on from there (its write a pace later, the clock waiting for it as for any).
    Wake {
        at: Moment,
    },
    /// A gated worker begins the long item's work (`--long-item`): work that takes real time,
    /// `left_ms` milliseconds of it, during which the supervisor's clock runs on rather than
    /// waiting for the write.
    Work {
        task: u64,
        left_ms: u64,
    },
    Step(Step),
    /// A claim worker found every item left leased by another worker: it waits for one to
    /// finish or its lease to end; `until`, on a paced night, the clock's reading when the first
    /// lease ends, in whole seconds after midnight (within a day, as the clock shows it).
    Idle {
        until: Option<u64>,
    },
    /// A claim worker's lease on `task` ended before its commit: another worker took the item,
    /// and this one wrote nothing for it.
    Lost {
        task: u64,
    },
    /// A gated worker stops at `task`'s write (`--pause-at`) until the moment `until`: the
    /// supervisor SIGSTOPs it on this line and SIGCONTs it then; its write is granted again
    /// from there, as after a `wake`.
    Pause {
        task: u64,
        until: Moment,
    },
    Relay(Relay),
    /// Someone else's job reached a crash point (`reclaim-point NAME KEY`).
    Point(Point),
    /// Anything else a worker (or someone else's program) prints.
    Other(String),
}

/// The first word of the line a gated worker prints as it begins the long item's work.
const WORK: &str = "work";
/// The first word of a claim worker's line when every item left is leased by another worker.
const IDLE: &str = "idle";
const IDLE_SAID: &str =
    "every item left is leased by another worker: waiting for one to finish or its lease to end";
const LOST_SAID: &str =
    "its lease ended and another worker took it; this worker wrote nothing for it";
const DELIVERED_ALL: &str = "outbox=all sent";
const SECONDS_A_DAY: u64 = 86_400;

impl WorkerLine {
    /// A claim worker's `idle` line; `until`, the moment the first lease ends on a paced night.
    #[must_use]
    pub fn idle(until: Option<f64>) -> Self {
        Self::Idle {
            until: until.map(|at| SimTime(at).second() % SECONDS_A_DAY),
        }
    }

    /// The long item's `work` line: `left` of work ahead, to the millisecond.
    #[must_use]
    pub fn work(task: u64, left: std::time::Duration) -> Self {
        Self::Work {
            task,
            left_ms: (left.as_secs_f64() * 1000.0).round() as u64,
        }
    }

    /// A line of someone else's job: it speaks no protocol but its crash points, so every
    /// other line is its own (`Other`), whatever its first word.
    #[must_use]
    pub fn of_job(line: &str) -> Self {
        points::parse(line).map_or_else(|| Self::Other(line.to_string()), Self::Point)
    }

    /// The first word: `start`, `resume`, `crash`, `done`, ..., or `log` for any other line.
    #[must_use]
    pub fn word(&self) -> &'static str {
        match self {
            Self::Start { .. } => "start",
            Self::Resume(_) => "resume",
            Self::Crash { .. } => "crash",
            Self::Done { .. } => "done",
            Self::Wait { .. } => "wait",
            Self::Wrote { .. } => "wrote",
            Self::Wake { .. } => "wake",
            Self::Work { .. } => WORK,
            Self::Step(_) => "step",
            Self::Idle { .. } => IDLE,
            Self::Lost { .. } => "lost",
            Self::Pause { .. } => "pause",
            Self::Relay(_) => "relay",
            Self::Point(_) => points::WORD,
            Self::Other(_) => "log",
        }
    }

    /// What follows the first word (for `Other`, the whole line).
    #[must_use]
    pub fn fields(&self) -> String {
        match self {
            Self::Start {
                run_id,
                items,
                strategy,
                pid,
            } => format!(
                "run_id={}  items={items}  strategy={strategy}  pid={pid}",
                run_id.as_deref().unwrap_or("(none)")
            ),
            Self::Resume(Resume::NothingLeft { skipped }) => {
                format!("nothing left: all {skipped} tasks have checkpoints")
            }
            Self::Resume(Resume::From { task, skipped }) => {
                format!("from={}  skipped={skipped}", task_id(*task))
            }
            Self::Crash { at } => format!("at={at}"),
            Self::Done {
                rows_written,
                inserted,
            } => format!("rows_written={rows_written}  status=ok  inserted={inserted}"),
            Self::Wait { need } => format!("need={need}"),
            Self::Wrote { writes, last } => format!("writes={writes}  last={}", task_id(*last)),
            Self::Wake { at } => format!("at={at}"),
            Self::Work { task, left_ms } => format!(
                "{}  {}.{:03} s",
                task_id(*task),
                left_ms / 1000,
                left_ms % 1000
            ),
            Self::Step(Step::Done { task, step, steps }) => {
                format!("{}  {step}/{steps}", task_id(*task))
            }
            Self::Step(Step::ResumesAt { task, step, steps }) => {
                format!("{}  resumes at {step}/{steps}", task_id(*task))
            }
            Self::Idle { until } => match until {
                Some(at) => format!("{IDLE_SAID} (the first ends at {})", SimTime(*at as f64)),
                None => IDLE_SAID.to_string(),
            },
            Self::Lost { task } => format!("{}: {LOST_SAID}", task_id(*task)),
            Self::Pause { task, until } => format!("{}  until={until}", task_id(*task)),
            Self::Relay(Relay::Started { vendor, pid }) => format!("vendor={vendor}  pid={pid}"),
            Self::Relay(Relay::Finished {
                delivered,
                answered_from_keys,
            }) => format!(
                "delivered={delivered}  answered_from_keys={answered_from_keys}  {DELIVERED_ALL}"
            ),
            Self::Point(point) => format!("{} {}", point.name, point.key),
            Self::Other(text) => text.clone(),
        }
    }
}

impl fmt::Display for WorkerLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Other(text) => f.write_str(text),
            // Written before the protocol had them, with two spaces after the word.
            Self::Idle { .. } | Self::Lost { .. } => {
                write!(f, "{}  {}", self.word(), self.fields())
            }
            Self::Point(_) => write!(f, "{} {}", self.word(), self.fields()),
            _ => write!(f, "{:<7} {}", self.word(), self.fields()),
        }
    }
}

/// `key=value` fields of a line, in any order.
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields
        .split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
}

/// `N/M`.
fn fraction(text: &str) -> Option<(u64, u64)> {
    let (n, m) = text.split_once('/')?;
    Some((n.parse().ok()?, m.parse().ok()?))
}

/// `1.400` (three decimals, as `Work` writes them) in milliseconds.
fn millis(text: &str) -> Option<u64> {
    let (whole, part) = text.split_once('.')?;
    if part.len() != 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(whole.parse::<u64>().ok()? * 1000 + part.parse::<u64>().ok()?)
}

/// `HH:MM:SS` in seconds after midnight.
fn clock(text: &str) -> Option<u64> {
    let mut parts = text.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (parts.next()??, parts.next()??, parts.next()??);
    (parts.next().is_none() && h < 24 && m < 60 && s < 60).then_some(h * 3600 + m * 60 + s)
}

impl WorkerLine {
    fn parse_step(rest: &str) -> Option<Self> {
        let words: Vec<&str> = rest.split_whitespace().collect();
        match words.as_slice() {
            [task, done] => {
                let (step, steps) = fraction(done)?;
                Some(Self::Step(Step::Done {
                    task: parse_task_id(task)?,
                    step,
                    steps,
                }))
            }
            [task, "resumes", "at", at] => {
                let (step, steps) = fraction(at)?;
                Some(Self::Step(Step::ResumesAt {
                    task: parse_task_id(task)?,
                    step,
                    steps,
                }))
            }
            _ => None,
        }
    }

    fn parse_relay(rest: &str) -> Option<Self> {
        if let Some(vendor) = field(rest, "vendor") {
            return Some(Self::Relay(Relay::Started {
                vendor: vendor.parse().ok()?,
                pid: field(rest, "pid")?.parse().ok()?,
            }));
        }
        rest.trim_end().ends_with(DELIVERED_ALL).then_some(())?;
        Some(Self::Relay(Relay::Finished {
            delivered: field(rest, "delivered")?.parse().ok()?,
            answered_from_keys: field(rest, "answered_from_keys")?.parse().ok()?,
        }))
    }

    fn parse_idle(rest: &str) -> Option<Self> {
        let said = rest.trim_start();
        if said == IDLE_SAID {
            return Some(Self::Idle { until: None });
        }
        let at = said
            .strip_prefix(IDLE_SAID)?
            .strip_prefix(" (the first ends at ")?
            .strip_suffix(')')?;
        Some(Self::Idle {
            until: Some(clock(at)?),
        })
    }

    fn parse_lost(rest: &str) -> Option<Self> {
        let (task, said) = rest.trim_start().split_once(": ")?;
        (said == LOST_SAID).then_some(())?;
        Some(Self::Lost {
            task: parse_task_id(task)?,
        })
    }
}

impl FromStr for WorkerLine {
    type Err = std::convert::Infallible;

    /// Never fails: a line that is not one of the known kinds, or is garbled, is `Other`.
    fn from_str(line: &str) -> Result<Self, Self::Err> {
        if let Some(point) = points::parse(line) {
            return Ok(Self::Point(point));
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        let number = |key| field(rest, key).and_then(|n| n.parse().ok());
        let parsed = match word {
            "start" => (|| {
                Some(Self::Start {
                    run_id: field(rest, "run_id")
                        .filter(|id| *id != "(none)")
                        .map(ToOwned::to_owned),
                    items: number("items")?,
                    strategy: Strategy::from_name(field(rest, "strategy")?)?,
                    pid: field(rest, "pid")?.parse().ok()?,
                })
            })(),
            "resume" if rest.trim_start().starts_with("nothing left") => {
                let skipped = rest.split_whitespace().find_map(|w| w.parse().ok());
                skipped.map(|skipped| Self::Resume(Resume::NothingLeft { skipped }))
            }
            "resume" => (|| {
                Some(Self::Resume(Resume::From {
                    task: parse_task_id(field(rest, "from")?)?,
                    skipped: number("skipped")?,
                }))
            })(),
            "crash" => field(rest, "at")
                .and_then(|at| at.parse().ok())
                .map(|at| Self::Crash { at }),
            "done" => (|| {
                Some(Self::Done {
                    rows_written: number("rows_written")?,
                    inserted: number("inserted").unwrap_or(0),
                })
            })(),
            "wait" => number("need").map(|need| Self::Wait { need }),
            "wake" => field(rest, "at")
                .and_then(|at| at.parse().ok())
                .map(|at| Self::Wake { at }),
            "wrote" => (|| {
                Some(Self::Wrote {
                    writes: number("writes")?,
                    last: parse_task_id(field(rest, "last")?)?,
                })
            })(),
            WORK => (|| {
                let mut words = rest.split_whitespace();
                let task = parse_task_id(words.next()?)?;
                let left_ms = millis(words.next()?)?;
                (words.next() == Some("s") && words.next().is_none())
                    .then_some(Self::Work { task, left_ms })
            })(),
            "step" => Self::parse_step(rest),
            "relay" => Self::parse_relay(rest),
            IDLE => Self::parse_idle(rest),
            "lost" => Self::parse_lost(rest),
            "pause" => (|| {
                Some(Self::Pause {
                    task: parse_task_id(rest.split_whitespace().next()?)?,
                    until: field(rest, "until")?.parse().ok()?,
                })
            })(),
            _ => None,
        };
        Ok(parsed.unwrap_or_else(|| Self::Other(line.to_string())))
    }
}

/// How a reclaim process (a worker, the relay) says its error on stderr, last before it exits 2:
/// `reclaim: error: REASON`.
pub const ERROR_PREFIX: &str = "reclaim: error: ";

/// The reason a worker's last line on stderr gives for its failure: what follows
/// `ERROR_PREFIX`, or the whole line (someone else's job's error is its own words).
#[must_use]
pub fn error_reason(line: &str) -> &str {
    line.trim_start_matches(ERROR_PREFIX)
}

/// `rows_written=N` in someone else's job's last line, as the postmortem's worker claimed it:
/// the one word of a job's own output reclaim reads as a figure.
#[must_use]
pub fn claimed_rows(line: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|word| word.strip_prefix("rows_written=")?.parse().ok())
}

#[cfg(test)]
mod tests;
