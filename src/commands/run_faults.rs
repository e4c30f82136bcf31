//! `run`'s faults beyond the kills: answers lost between the workers and a PostgreSQL server (at
//! row counts, at tasks' commits, at row counts drawn from the seed), the server restarted (at a
//! row count, after a task's commit, at a row count drawn from the seed), and a pause drawn from
//! the seed (`--pause-at` and `--pause-at-rows` are the typed ones). Checked before anything
//! starts, resolved once, and said in the header as the engine will carry them out.

use std::io::Write;

use crate::base::seeded::{Stream, distinct_in};
use crate::cli::RunArgs;
use crate::engine::LaneWorker;
use crate::error::Error;
use crate::queue::Queue;

/// The plan, resolved: every row count and task the engine is given.
#[derive(Debug, Clone, Default)]
pub(super) struct FaultPlan {
    /// The row counts whose answers are lost: named and drawn, ascending.
    pub lose_rows: Vec<u64>,
    /// Of those, the ones drawn from the seed (`--lose-answers`).
    pub drawn_losses: Vec<u64>,
    /// The tasks whose first commit's answer is lost.
    pub lose_tasks: Vec<u64>,
    /// The server restart at a row count: named, or drawn (`restart_drawn`).
    pub restart_rows: Option<u64>,
    pub restart_drawn: bool,
    /// The server restart after a task's commit.
    pub restart_task: Option<u64>,
    /// The pause: typed (`--pause-at`, `--pause-at-rows`) or drawn (`pause_drawn`,
    /// `--pause-at-random`: a task for reclaim's own worker, a row count for a job).
    pub pause_at: Option<crate::worker::PauseAt>,
    pub pause_at_rows: Option<crate::worker::PauseAtRows>,
    pub pause_drawn: bool,
}

/// Checks the flags against the night (the warehouse, the queue, the job's rows) and resolves
/// them with `seed`: one clear refusal, before anything starts, for a plan that cannot happen.
pub(super) fn plan(
    args: &RunArgs,
    (worker, queue): (&LaneWorker, &Queue),
    seed: u64,
) -> Result<FaultPlan, Error> {
    let items = queue.len();
    check_lost_answers(args, items)?;
    let counts_only = worker.job().is_some_and(|j| j.rows.count_sql.is_some());
    let by_key = |(flag, by_rows): (&str, &str), typed: &str| -> Result<u64, Error> {
        if counts_only {
            return Err(Error::Refused(format!(
                "{flag} waits for a key's row, and --count-sql only counts rows: it would never see it; use {by_rows} N"
            )));
        }
        resolve_key(flag, typed, queue)
    };
    if !args.server.lose_answer_at_task.is_empty() || args.server.lose_answers > 0 {
        let flag = if args.server.lose_answers > 0 {
            "--lose-answers"
        } else {
            "--lose-answer-at-task"
        };
        super::answers_can_be_lost(&args.warehouse.warehouse, flag)?;
    }
    if args.server.lose_answers > items {
        return Err(Error::Refused(format!(
            "--lose-answers {} is more than the queue's {items} items: each lost answer is drawn at a row count of its own, 1 to {items}",
            args.server.lose_answers
        )));
    }
    let mut lose_tasks = (args.server.lose_answer_at_task.iter())
        .map(|typed| by_key(("--lose-answer-at-task", "--lose-answer-at"), typed))
        .collect::<Result<Vec<u64>, Error>>()?;
    lose_tasks.sort_unstable();
    lose_tasks.dedup();
    check_server_restart(args, items)?;
    let loses = !args.server.lose_answer_at.is_empty()
        || !args.server.lose_answer_at_task.is_empty()
        || args.server.lose_answers > 0;
    // A retry after a lost answer that writes again (a job's, or a strategy's without a key)
    // adds rows no bound by writes foresees.
    let doubles = (worker.strategy()).is_none_or(|s| s.lost_answer_duplicates() > 0);
    if loses
        && doubles
        && (args.server.restart_server_at_rows.is_some() || args.server.restart_server_at_random)
    {
        return Err(Error::Refused(
            "a server restart placed by rows (--restart-server-at-rows, --restart-server-at-random) cannot land on its row in a night that loses answers: a worker's retry writes its rows twice in one write; place it after a task's commit (--restart-server-at-task)".into(),
        ));
    }
    let restart_task = (args.server.restart_server_at_task.as_deref())
        .map(|typed| {
            by_key(
                ("--restart-server-at-task", "--restart-server-at-rows"),
                typed,
            )
        })
        .transpose()?;
    let drawn_losses = distinct_in(seed, Stream::LostAnswers, args.server.lose_answers, items);
    let mut lose_rows: Vec<u64> = (args.server.lose_answer_at.iter().copied())
        .chain(drawn_losses.iter().copied())
        .collect();
    lose_rows.sort_unstable();
    lose_rows.dedup();
    let drawn_restart = (args.server.restart_server_at_random)
        .then(|| {
            distinct_in(seed, Stream::ServerRestart, 1, items)
                .first()
                .copied()
        })
        .flatten();
    let (pause_at, pause_at_rows) = pause_of(args, worker, items, seed)?;
    Ok(FaultPlan {
        lose_rows,
        drawn_losses,
        lose_tasks,
        restart_rows: args.server.restart_server_at_rows.or(drawn_restart),
        restart_drawn: drawn_restart.is_some(),
        restart_task,
        pause_at,
        pause_at_rows,
        pause_drawn: args.pause_at_random.is_some(),
    })
}

/// The pause, typed or drawn from the seed: for reclaim's own worker at a task's write (one of
/// the queue's), for a job once its table holds a row count (1 to the queue's items).
fn pause_of(
    args: &RunArgs,
    worker: &LaneWorker,
    items: u64,
    seed: u64,
) -> Result<
    (
        Option<crate::worker::PauseAt>,
        Option<crate::worker::PauseAtRows>,
    ),
    Error,
> {
    let Some(secs) = args.pause_at_random else {
        return Ok((args.pause_at, args.pause_at_rows));
    };
    let drawn = distinct_in(seed, Stream::Pause, 1, items)
        .first()
        .copied()
        .unwrap_or(1);
    if worker.job().is_some() {
        return Ok((None, Some(crate::worker::PauseAtRows { rows: drawn, secs })));
    }
    if args.delay_ms == 0.0 {
        return Err(Error::Refused(
            "--pause-at-random lasts SECS of the night's clock, and --delay-ms 0 has none; give --delay-ms above 0".into(),
        ));
    }
    Ok((
        Some(crate::worker::PauseAt {
            task: drawn - 1,
            secs,
        }),
        None,
    ))
}

impl FaultPlan {
    /// Whether anything is planned: `run`'s kill plan then says `no kills`, not "undisturbed".
    pub(super) fn any(&self) -> bool {
        self.pause_at.is_some()
            || self.pause_at_rows.is_some()
            || !self.lose_rows.is_empty()
            || !self.lose_tasks.is_empty()
            || self.restart_rows.is_some()
            || self.restart_task.is_some()
    }

    /// The pause in words, with its real length at `scale`.
    fn pause_said(&self, scale: f64, seed: u64) -> Option<String> {
        let real = |secs: f64| {
            format!(
                "{secs} s of the night, {:.1} s of real time at --scale {scale}",
                secs / scale,
            )
        };
        let drawn = if self.pause_drawn {
            format!(" (drawn from seed {seed})")
        } else {
            String::new()
        };
        if let Some(pause) = self.pause_at {
            return Some(format!(
                "the worker that reaches {}'s write{drawn} is stopped there (SIGSTOP) for {}",
                crate::task::task_id(pause.task),
                real(pause.secs)
            ));
        }
        self.pause_at_rows.map(|pause| {
            format!(
                "the job is stopped (SIGSTOP to its process group) once its table holds {} rows{drawn}, for {}",
                pause.rows,
                real(pause.secs)
            )
        })
    }

    /// The header's lines: the pause, the answers lost and the server restart, as planned.
    pub(super) fn print(&self, queue: &Queue, (seed, scale): (u64, f64), out: &mut dyn Write) {
        if let Some(pause) = self.pause_said(scale, seed) {
            let _ = writeln!(out, "pause plan   {pause}");
        }
        let mut lost = Vec::new();
        let named: Vec<String> = (self.lose_rows.iter())
            .filter(|n| !self.drawn_losses.contains(n))
            .map(u64::to_string)
            .collect();
        let at_rows = |counts: &[String]| match counts {
            [one] => format!("the commit that brings the rows to {one}"),
            many => format!("the commits that bring the rows to {}", many.join(", ")),
        };
        if !named.is_empty() {
            lost.push(at_rows(&named));
        }
        if !self.drawn_losses.is_empty() {
            let drawn: Vec<String> = self.drawn_losses.iter().map(u64::to_string).collect();
            lost.push(format!("{} (drawn from seed {seed})", at_rows(&drawn)));
        }
        for &task in &self.lose_tasks {
            let key = crate::base::text::escape_controls(&queue.key(task));
            lost.push(format!("{key}'s first commit"));
        }
        if !lost.is_empty() {
            let _ = writeln!(
                out,
                "answer plan  the proxy loses the answer to {}: committed on the server, never heard by the worker",
                lost.join("; ")
            );
        }
        let restart = match (self.restart_rows, self.restart_task) {
            (Some(n), _) if self.restart_drawn => Some(format!(
                "when the table holds {n} rows (drawn from seed {seed})"
            )),
            (Some(n), _) => Some(format!("when the table holds {n} rows")),
            (None, Some(task)) => Some(format!(
                "right after {}'s commit",
                crate::base::text::escape_controls(&queue.key(task))
            )),
            (None, None) => None,
        };
        if let Some(when) = restart {
            let _ = writeln!(
                out,
                "server plan  the private cluster restarted at once (pg_ctl restart -m immediate) {when}"
            );
        }
    }
}

/// A server restart (any of the three flags): only a server reclaim started is reclaim's to
/// restart, and only at a row count the night can reach.
fn check_server_restart(args: &RunArgs, items: u64) -> Result<(), Error> {
    let flag = if args.server.restart_server_at_rows.is_some() {
        "--restart-server-at-rows"
    } else if args.server.restart_server_at_task.is_some() {
        "--restart-server-at-task"
    } else if args.server.restart_server_at_random {
        "--restart-server-at-random"
    } else {
        return Ok(());
    };
    match &args.warehouse.warehouse {
        crate::warehouse::Spec::Sqlite => {
            return Err(Error::Refused(format!(
                "{flag} restarts the PostgreSQL server of the night, and SQLite has none: add --warehouse postgres (a private cluster of reclaim's own)"
            )));
        }
        crate::warehouse::Spec::Server(_) => {
            return Err(Error::Refused(format!(
                "{flag} restarts only a server reclaim started (--warehouse postgres), never yours: restart yours yourself mid-night, and reclaim says what it saw"
            )));
        }
        crate::warehouse::Spec::Private => {}
    }
    let reach = items.saturating_mul(u64::from(args.workers));
    if let Some(n) = args.server.restart_server_at_rows
        && n > reach
        && args.kills == 0
        && args.kill_at_rows.is_none()
    {
        return Err(Error::Refused(format!(
            "--restart-server-at-rows {n} is past the {reach} rows a queue of {items} items makes; the restart would never happen"
        )));
    }
    Ok(())
}

/// `--lose-answer-at`: a proxy between the workers and a PostgreSQL server that can read their
/// commits' answers (no TLS it would have to break), at row counts the night can reach.
fn check_lost_answers(args: &RunArgs, items: u64) -> Result<(), Error> {
    let Some(&last) = args.server.lose_answer_at.iter().max() else {
        return Ok(());
    };
    super::answers_can_be_lost(&args.warehouse.warehouse, "--lose-answer-at")?;
    let reach = items.saturating_mul(u64::from(args.workers));
    if last > reach {
        let workers = if args.workers > 1 {
            format!(" by {} workers", args.workers)
        } else {
            String::new()
        };
        return Err(Error::Refused(format!(
            "--lose-answer-at {last} is beyond the {reach} rows a queue of {items} items makes{workers}; it would never happen"
        )));
    }
    Ok(())
}

/// Where a key the user typed stands in the queue; refused (before anything starts) when the
/// queue has no such key: a kill there would never happen.
pub(super) fn resolve_key(
    flag: &str,
    typed: &str,
    queue: &crate::queue::Queue,
) -> Result<u64, Error> {
    queue.resolve(typed).ok_or_else(|| {
        Error::Refused(format!(
            "{flag} {} is not a key of the queue ({}): it is beyond the queue or spelled otherwise, so it would never happen",
            crate::base::text::escape_controls(typed),
            queue.describe()
        ))
    })
}
