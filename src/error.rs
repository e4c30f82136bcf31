//! The application's error: what a command (or the dashboard) ends with when it cannot go on.
//!
//! Each layer below has its own `thiserror` enum (`PathError`, `StoreError`, `EngineError`,
//! `ScenarioError`, `RecordingError`, `WorkerError`); this one wraps them, adds what the layer
//! could not know (which file, which step) as context, and is printed by the glue as one line
//! on stderr with exit 2.

use std::io;

use thiserror::Error;

use crate::engine::EngineError;
use crate::fake_vendor::VendorError;
use crate::paths::PathError;
use crate::record::RecordingError;
use crate::scenario::ScenarioError;
use crate::store::StoreError;
use crate::worker::WorkerError;
use crate::worker::relay::RelayError;

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error(transparent)]
    Recording(#[from] RecordingError),
    #[error(transparent)]
    Worker(#[from] WorkerError),
    #[error(transparent)]
    Vendor(#[from] VendorError),
    #[error(transparent)]
    Relay(#[from] RelayError),
    /// Input refused, in a sentence that names the value and what to do.
    #[error("{0}")]
    Refused(String),
    /// An operation on the system failed; `context` says which.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// A caught signal ended the night early.
    #[error("stopped by {0}; every worker was killed")]
    Stopped(&'static str),
    /// A worker ended with an error of its own (its last stderr line).
    #[error("the worker failed: {0}")]
    WorkerFailed(String),
    /// An external worker that never got going (no such command, an error at once).
    #[error("the worker could not start: {0}")]
    CouldNotStart(String),
}

impl From<String> for Error {
    fn from(sentence: String) -> Self {
        Self::Refused(sentence)
    }
}

/// `.context("cannot ...")` on an I/O result: the failure with what was being done.
pub trait Context<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> Context<T> for io::Result<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Io {
            context: context(),
            source,
        })
    }
}
