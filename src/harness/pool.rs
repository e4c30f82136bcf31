//! Nights in parallel: a few threads, each driving one headless night at a time (two real
//! worker processes, a kill, a restart, the verdict), their results streamed back in the order
//! they finish. `map` and `shrink` run their nights here; the dashboard's map screen reads the
//! same stream without blocking.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::{self, JoinHandle};

use crate::base::signals;
use crate::error::{Context as _, Error};

/// One finished night: the index of its job and what it ended with.
pub type Finished<R> = (usize, Result<R, Error>);

/// A running set of nights. Dropping it stops handing out jobs, tells the nights in flight to
/// end (their workers killed) and waits for them, so no thread and no worker outlives it.
pub struct Pool<R> {
    results: mpsc::Receiver<Finished<R>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    total: usize,
}

/// How many nights to keep in flight: one per core (each night is two processes taking turns,
/// plus the driving thread that mostly sleeps), at least 2 and at most 8.
#[must_use]
pub fn default_threads() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8))
}

/// How many of reclaim's own map nights to keep in flight: two per core, at least 2 and at most
/// 8. A night is one chain (a start, the writes, the kill, a start again, the verdict) with gaps
/// in which neither of its processes runs, and two chains a core fill them: on two cores the
/// full map took 25.3 to 27.9 s at four against 27.9 to 38.9 s at two
/// (docs/history/benchmarks.md, "Four nights in flight"). Its workers die at their own crash
/// points, so a busier machine moves no kill. (A job of the user's own, killed from outside at a
/// row count, keeps `default_threads`.)
#[must_use]
pub fn own_map_threads() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get().saturating_mul(2).clamp(2, 8))
}

impl<R: Send + 'static> Pool<R> {
    /// Starts `threads` threads over `jobs`; `night` drives one job to its result, and should
    /// end early (its workers killed) once the flag it is given is set: the pool sets it when
    /// stopped or dropped.
    pub fn start<J, F>(jobs: Vec<J>, threads: usize, night: F) -> Result<Self, Error>
    where
        J: Send + Sync + 'static,
        F: Fn(&J, &AtomicBool) -> Result<R, Error> + Send + Sync + 'static,
    {
        // Installed once here, not by each thread's first night: two threads racing to install
        // would register two flags and only one would be read.
        signals::install().context(|| "cannot install signal handlers".into())?;
        let total = jobs.len();
        let jobs = Arc::new(jobs);
        let night = Arc::new(night);
        let next = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, results) = mpsc::channel();
        let mut handles = Vec::new();
        for n in 0..threads.max(1).min(total.max(1)) {
            let (jobs, night, next, halt, tx) = (
                Arc::clone(&jobs),
                Arc::clone(&night),
                Arc::clone(&next),
                Arc::clone(&stop),
                tx.clone(),
            );
            let handle = thread::Builder::new()
                .name(format!("reclaim-night-{n}"))
                .spawn(move || {
                    loop {
                        if halt.load(Ordering::SeqCst) || signals::received().is_some() {
                            break;
                        }
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(job) = jobs.get(i) else { break };
                        let result = night(job, &halt);
                        // A stopped night ends the pool: the signal is for all of them.
                        let stopped = matches!(result, Err(Error::Stopped(_)));
                        if tx.send((i, result)).is_err() || stopped {
                            break;
                        }
                    }
                })
                .context(|| "cannot start a thread for the nights".into());
            match handle {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    // The threads already started are stopped and joined by the drop.
                    drop(Self {
                        results,
                        stop,
                        threads: handles,
                        total,
                    });
                    return Err(error);
                }
            }
        }
        Ok(Self {
            results,
            stop,
            threads: handles,
            total,
        })
    }

    /// How many jobs the pool was given.
    #[must_use]
    pub fn total(&self) -> usize {
        self.total
    }

    /// The next finished night, waiting for it; `None` once every thread has ended.
    #[must_use]
    pub fn next(&self) -> Option<Finished<R>> {
        self.results.recv().ok()
    }

    /// A finished night if one is ready, without waiting (for the dashboard's loop).
    #[must_use]
    pub fn try_next(&self) -> Option<Finished<R>> {
        self.results.try_recv().ok()
    }

    /// Hands out no more jobs and tells the nights in flight to end now.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl<R> Drop for Pool<R> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for handle in self.threads.drain(..) {
            let _ = handle.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_job_comes_back_once_whatever_the_order() {
        let pool = Pool::start((0..50u64).collect(), 3, |&n, _| Ok(n * 2))
            .unwrap_or_else(|e| panic!("{e}"));
        let mut seen = Vec::new();
        while let Some((i, result)) = pool.next() {
            let value = result.unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(value, i as u64 * 2);
            seen.push(i);
        }
        seen.sort_unstable();
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_stopped_pool_tells_the_nights_in_flight() {
        let pool = Pool::start((0..2u64).collect(), 2, |_, stop: &AtomicBool| {
            // A night that would never end on its own.
            while !stop.load(Ordering::SeqCst) {
                thread::sleep(std::time::Duration::from_millis(1));
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        // Dropping returns only once both nights have seen the flag and ended.
        drop(pool);
    }

    #[test]
    fn a_stopped_pool_hands_out_no_more_jobs() {
        // The first night ends at once; every other one waits for the stop, so when the stop
        // comes exactly one night per thread is in flight, however slow the machine.
        let threads = 2;
        let pool = Pool::start((0..1000u64).collect(), threads, |&n, stop: &AtomicBool| {
            while n > 0 && !stop.load(Ordering::SeqCst) {
                thread::sleep(std::time::Duration::from_millis(1));
            }
            Ok(n)
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let first = pool.next().map(|(i, _)| i);
        assert_eq!(first, Some(0));
        pool.stop();
        let mut rest = 0;
        while pool.next().is_some() {
            rest += 1;
        }
        assert!(rest <= threads, "{rest} nights ran after the stop");
    }
}
