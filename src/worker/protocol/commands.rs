//! The commands a worker reads on stdin: `SetDelay` for a worker that paces itself, `Grant`
//! (with the moment of the write granted) and `StepGrant` for one the supervisor gates.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A command on the worker's stdin: the pause after each item, for a worker that paces itself
/// (the supervisor's workers are gated by `Grant` instead; the command stays for any other
/// program driving a worker).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetDelay {
    pub delay: Duration,
}

impl fmt::Display for SetDelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delay-us {}", self.delay.as_micros())
    }
}

/// A line on a worker's stdin that is not the command it was read as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a {what}: {line:?}")]
pub struct NotACommand {
    /// The command expected: `pace command`, `grant`.
    pub what: &'static str,
    pub line: String,
}

impl FromStr for SetDelay {
    type Err = NotACommand;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let us = line
            .strip_prefix("delay-us ")
            .and_then(|n| n.trim().parse().ok())
            .ok_or_else(|| NotACommand {
                what: "pace command",
                line: line.to_string(),
            })?;
        Ok(Self {
            delay: Duration::from_micros(us),
        })
    }
}

/// A moment of the night's clock, in sim seconds after midnight, as the wire carries it: Rust's
/// shortest text for an `f64` reads back to the same bits, so both sides hold the same moment
/// and two of them compare as the engine compared them.
#[derive(Debug, Clone, Copy)]
pub struct Moment(pub f64);

impl PartialEq for Moment {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Moment {}

impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Moment {
    type Err = std::num::ParseFloatError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        text.parse().map(Self)
    }
}

/// A command on a gated worker's stdin: it may have made `upto` writes in all, the last of them
/// at the night's moment `at` (for a paced night; a night without a pace has no moments to
/// give). The claim worker claims at that moment and times its lease from it, so which item it
/// takes, and when a dead worker's lease ends, are the night's, not the machine's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub upto: u64,
    pub at: Option<Moment>,
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "grant {}", self.upto)?;
        match self.at {
            Some(at) => write!(f, " at={at}"),
            None => Ok(()),
        }
    }
}

impl FromStr for Grant {
    type Err = NotACommand;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        let refused = || NotACommand {
            what: "grant",
            line: line.to_string(),
        };
        let mut words = line
            .strip_prefix("grant ")
            .ok_or_else(refused)?
            .split_whitespace();
        let upto = words
            .next()
            .and_then(|n| n.parse().ok())
            .ok_or_else(refused)?;
        let at = match words.next() {
            None => None,
            Some(word) => {
                Some((word.strip_prefix("at=").and_then(|m| m.parse().ok())).ok_or_else(refused)?)
            }
        };
        if words.next().is_some() {
            return Err(refused());
        }
        Ok(Self { upto, at })
    }
}

/// A command on a gated worker's stdin: of its long item's work (`--long-item`), it may finish
/// `steps` steps in all (this process's; one, in one piece). Each is granted as the
/// supervisor's clock reaches the step's end, so a kill lands between the same two steps at any
/// speed and load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StepGrant {
    pub steps: u64,
}

impl fmt::Display for StepGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "steps {}", self.steps)
    }
}

impl FromStr for StepGrant {
    type Err = NotACommand;

    fn from_str(line: &str) -> Result<Self, Self::Err> {
        line.strip_prefix("steps ")
            .and_then(|n| n.trim().parse().ok())
            .map(|steps| Self { steps })
            .ok_or_else(|| NotACommand {
                what: "step grant",
                line: line.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pace_command_round_trips() {
        let pace = SetDelay {
            delay: Duration::from_micros(1250),
        };
        assert_eq!(pace.to_string(), "delay-us 1250");
        assert_eq!(pace.to_string().parse::<SetDelay>(), Ok(pace));
        assert!("delay-us x".parse::<SetDelay>().is_err());
        let grant = Grant {
            upto: 112,
            at: None,
        };
        assert_eq!(grant.to_string(), "grant 112");
        assert_eq!(grant.to_string().parse::<Grant>(), Ok(grant));
        // A moment reads back to the same bits, whatever its digits.
        for at in [7200.0, 7203.0 + 6.3 * 7.0, 0.1 + 0.2, 1e-7] {
            let grant = Grant {
                upto: 3,
                at: Some(Moment(at)),
            };
            let back = grant.to_string().parse::<Grant>();
            assert_eq!(back, Ok(grant), "{grant}");
            assert_eq!(
                back.ok().and_then(|g| g.at).map(|m| m.0.to_bits()),
                Some(at.to_bits())
            );
        }
        assert!("grant".parse::<Grant>().is_err());
        assert!("grant 3 at=x".parse::<Grant>().is_err());
        assert!("grant 3 at=1 more".parse::<Grant>().is_err());
        let steps = StepGrant { steps: 3 };
        assert_eq!(steps.to_string().parse::<StepGrant>(), Ok(steps));
        assert!("grant 3".parse::<StepGrant>().is_err());
    }
}
