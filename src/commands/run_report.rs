//! What `reclaim run` prints: the header (who works, the queue, the kill plan), the verdict's
//! lines (the claim beside the rows' status, what never fired, where each kill landed, the
//! vendor's count) and the `--json` report, and the exit code `--strict` decides.

use std::io::Write;
use std::path::Path;

use crate::base::kept::Settled;
use crate::cli::RunArgs;
use crate::engine::{KillWindow, KillWindows, LaneWorker};
use crate::error::Error;
use crate::harness::RunReport;
use crate::supervisor::schedule::KillPlan;

/// The report as JSON or the verdict's lines, and the exit code: the night's account judged by
/// the one rule (`verdict::account`), `--strict` failing what it left untested.
/// `settled`: what became of the night's folder (`None`: the warehouse is the user's `--db`).
pub(super) fn finish(
    report: &RunReport,
    args: &RunArgs,
    (settled, warehouse): (Option<&Settled>, &crate::warehouse::Warehouse),
    out: &mut dyn Write,
) -> Result<u8, Error> {
    let judged = report.account().judge(args.strict);
    if args.json {
        let mut value = with_judgement(report, &judged)?;
        if let (Some(object), Some(settled)) = (value.as_object_mut(), settled) {
            object.insert("folder".into(), folder_json(settled));
        }
        let _ = writeln!(out, "{value}");
    } else {
        print_verdict(report, &judged, (settled, warehouse), out);
    }
    Ok(judged.exit_code())
}

/// What became of a night's folder, for `--json`.
pub(super) fn folder_json(settled: &Settled) -> serde_json::Value {
    serde_json::json!({
        "path": settled.path.display().to_string(),
        "kept": settled.kept,
        "policy": settled.policy,
        "said": settled.said(),
    })
}

/// The line naming where the rows are and what became of them: a folder reclaim made is kept
/// or removed as `--keep` says; a `--db` is the user's. On PostgreSQL the folder holds only
/// heartbeats.
fn storage_line(
    db: &Path,
    (settled, warehouse): (Option<&Settled>, &crate::warehouse::Warehouse),
) -> String {
    let on_pg = !warehouse.files_kept();
    match settled {
        None if on_pg => String::new(),
        None => format!("database     {} (yours: --db)", display(db)),
        Some(s) if on_pg && s.kept => format!(
            "files        {} {} (heartbeats only: the rows are on PostgreSQL)",
            display(&s.path),
            s.said()
        ),
        Some(s) if on_pg => format!("files        {}", s.said()),
        Some(s) if s.kept => format!("database     {} {}", display(db), s.said()),
        Some(s) => format!("database     {}", s.said()),
    }
}

/// A report as JSON, with the one rule's judgement beside its facts (`outcome`, `judgement`)
/// and, as before, the sentences it left untested (`untested`).
pub(super) fn with_judgement(
    report: &impl serde::Serialize,
    judged: &crate::verdict::account::Judgement,
) -> Result<serde_json::Value, Error> {
    let mut value = serde_json::to_value(report).map_err(Error::json("the report"))?;
    let judgement = serde_json::to_value(judged).map_err(Error::json("the judgement"))?;
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "outcome".into(),
            judged.outcome.mark().to_lowercase().into(),
        );
        object.insert(
            "untested".into(),
            (judged.untested.iter())
                .map(|e| e.said.clone())
                .collect::<Vec<_>>()
                .into(),
        );
        object.insert("judgement".into(), judgement);
    }
    Ok(value)
}

/// The lines before the night: who works, its rows and queue, the side effect, the kill plan.
pub(super) fn print_header(
    args: &RunArgs,
    (worker, queue): (&LaneWorker, &crate::queue::Queue),
    (plan, server): (&KillPlan, &super::run_faults::FaultPlan),
    seed: u64,
    out: &mut dyn Write,
) {
    let who = match worker {
        LaneWorker::Strategy(strategy) => format!("strategy={strategy}"),
        LaneWorker::Exec(job) => format!("exec={:?}", job.command),
    };
    // An external job is only told its pace (RECLAIM_DELAY_MS); it keeps it or not.
    let delay = match worker {
        LaneWorker::Strategy(_) => format!("  delay={}ms", args.delay_ms),
        // What the job's environment holds, in the same spelling.
        LaneWorker::Exec(_) => format!(
            "  RECLAIM_DELAY_MS={}",
            crate::worker::protocol::delay_ms(std::time::Duration::from_secs_f64(
                args.delay_ms / 1000.0
            ))
        ),
    };
    let _ = writeln!(
        out,
        "reclaim run  {who}  items={}{delay}  workers={}  seed={seed}  scale={}x",
        queue.len(),
        args.workers,
        args.scale
    );
    if let LaneWorker::Exec(job) = worker {
        let _ = writeln!(
            out,
            "rows         table {} keyed by {}{}",
            crate::base::text::escape_controls(&job.rows.table),
            crate::base::text::escape_controls(&job.rows.key),
            if job.rows.count_sql.is_some() {
                " (counted by --count-sql)"
            } else {
                ""
            }
        );
        let _ = writeln!(out, "queue        {}", queue.describe());
        let _ = writeln!(
            out,
            "checkpoints  {}",
            match &job.rows.checkpoints {
                Some(c) => format!(
                    "table {} keyed by {}: where each kill lands is read from it",
                    crate::base::text::escape_controls(&c.table),
                    crate::base::text::escape_controls(&c.key)
                ),
                None => "not named (--checkpoint-table): a kill after a commit cannot be placed before or after its checkpoint".into(),
            }
        );
        // How what the job starts is ended with it (a cgroup, or the subreaper's stop-then-kill).
        let _ = writeln!(out, "descendants  {}", crate::base::cgroup::way().line());
    }
    let relays = worker
        .strategy()
        .is_some_and(crate::worker::Strategy::relays);
    if args.vendor.side_effect.is_some() || relays {
        let how = if relays {
            "each row's email through its outbox and a relay, with the row's idempotency key"
        } else {
            "each item emails its customer before the row commits, without a key"
        };
        let _ = writeln!(
            out,
            "side effect  {how}; the vendor on 127.0.0.1 {} keys{}",
            match args
                .vendor
                .vendor_keys
                .unwrap_or(crate::fake_vendor::Keys::Honour)
            {
                crate::fake_vendor::Keys::Honour => "honours".to_string(),
                crate::fake_vendor::Keys::Ignore => "ignores".to_string(),
                crate::fake_vendor::Keys::Expire(secs) => format!("forgets after {secs} s its"),
            },
            match args.vendor.vendor_drop_responses {
                Some(p) if p > 0.0 => format!(" and drops {:.0}% of its responses", p * 100.0),
                _ => String::new(),
            }
        );
    }
    if let Some(long) = args.long.long_item {
        let steps = if args.long.split > 1 {
            format!("in {} committed steps", args.long.split)
        } else {
            "in one piece".to_string()
        };
        let _ = writeln!(
            out,
            "long item    {} takes {:.3} s of work before its commit, {steps}",
            crate::task::task_id(long.task),
            long.work.as_secs_f64()
        );
    }
    if args.warehouse.warehouse.is_postgres() {
        let _ = writeln!(
            out,
            "warehouse    {}; a server that goes away is waited for up to {} s (--server-wait), the night's clock with it",
            args.warehouse.describe(),
            args.warehouse.server_wait
        );
    }
    print_plans(args, queue, (plan, server), seed, out);
}

/// The kill plan, and the faults planned beside the kills: a pause, lost answers, a server
/// restart.
fn print_plans(
    args: &RunArgs,
    queue: &crate::queue::Queue,
    (plan, server): (&KillPlan, &super::run_faults::FaultPlan),
    seed: u64,
    out: &mut dyn Write,
) {
    let _ = writeln!(
        out,
        "kill plan    {}",
        describe_plan(plan, args, queue, server.any())
    );
    server.print(queue, (seed, args.scale), out);
}

/// The kill plan in words, each planned kill named by the queue's own keys.
fn describe_plan(
    plan: &KillPlan,
    args: &RunArgs,
    queue: &crate::queue::Queue,
    other_faults: bool,
) -> String {
    let mut parts = Vec::new();
    if let Some(crash) = &args.crash_at {
        parts.push(format!(
            "the worker dies at {} on its first attempt{}",
            crate::base::text::escape_controls(crash),
            if args.job.exec.is_some() {
                " (the job announces the point; the host kills it there)"
            } else {
                ""
            }
        ));
    }
    if let Some(n) = plan.at_message {
        parts.push(format!(
            "the host kills the job once the vendor has message {n}, which it holds unanswered"
        ));
    }
    if let Some(rows) = plan.at_rows {
        parts.push(format!(
            "the host reclaims the instance as soon as the table holds {rows} rows"
        ));
    }
    if let Some(task) = plan.at_task {
        parts.push(format!(
            "the host reclaims the instance once {} is written",
            crate::base::text::escape_controls(&queue.key(task))
        ));
    }
    if let Some((lo, hi)) = plan.rows.filter(|_| plan.random > 0) {
        let rows: Vec<String> = plan.first_rows(8).iter().map(u64::to_string).collect();
        let more = if plan.random > 8 { ", ..." } else { "" };
        // Placed by rows without asking: say so, and how to place them by time instead.
        let why = if args.kill_rows.is_none() {
            "; the default for --exec, --kill-window A..B places them by time"
        } else {
            ""
        };
        // Several of reclaim's own workers: each kill is one worker's (`engine::victim`).
        // At full speed a worker is granted all its writes at its spawn, so the kill is for the
        // worker last started, the only one it can still hold at its row.
        let since = match (
            args.workers > 1 && args.job.exec.is_none(),
            args.delay_ms > 0.0,
        ) {
            (true, true) => "writes of one worker, the workers in turn",
            (true, false) => "writes of the worker last started",
            (false, _) => "rows written since a spawn",
        };
        parts.push(format!(
            "up to {} placed by rows, each after {lo}..{hi} {since} ({}{more}; seed {}{why})",
            crate::base::text::count(u64::from(plan.random), "random kill", "random kills"),
            rows.join(", "),
            plan.seed
        ));
    } else if plan.random > 0 {
        let delays: Vec<String> = plan
            .first_delays(8)
            .iter()
            .map(|d| format!("{:.2}s", d.as_secs_f64()))
            .collect();
        let more = if plan.random > 8 { ", ..." } else { "" };
        parts.push(format!(
            "up to {} placed by time, each {:.2}..{:.2}s after a spawn ({}{more}; seed {})",
            crate::base::text::count(u64::from(plan.random), "random kill", "random kills"),
            plan.window.0.as_secs_f64(),
            plan.window.1.as_secs_f64(),
            delays.join(", "),
            plan.seed
        ));
    }
    if !plan.replayed.is_empty() {
        let times: Vec<String> = plan
            .replayed
            .iter()
            .take(8)
            .map(|moment| match moment {
                // Named by the queue's own keys (ord-00004), as the job names its work.
                crate::supervisor::schedule::KillMoment::AfterTask(t) => {
                    format!(
                        "after {}",
                        crate::base::text::escape_controls(&queue.key(*t))
                    )
                }
                other @ crate::supervisor::schedule::KillMoment::At(_) => other.to_string(),
            })
            .collect();
        let more = if plan.replayed.len() > 8 { ", ..." } else { "" };
        parts.push(format!(
            "{} replayed from a recording: {}{more}",
            crate::base::text::count(plan.replayed.len() as u64, "kill", "kills"),
            times.join(", ")
        ));
    }
    if parts.is_empty() && other_faults {
        "no kills".to_string()
    } else if parts.is_empty() {
        "no kills: the job runs undisturbed".to_string()
    } else {
        parts.join("; ")
    }
}

/// The verdict's lines: the claim beside the rows' status, what never fired, where the kills
/// landed, the vendor's count, the database, the one rule's result; last, the postmortem's own
/// figures.
fn print_verdict(
    report: &RunReport,
    judged: &crate::verdict::account::Judgement,
    (settled, warehouse): (Option<&Settled>, &crate::warehouse::Warehouse),
    out: &mut dyn Write,
) {
    let _ = writeln!(out);
    let _ = writeln!(out, "verdict      {}", report.verdict());
    for lesson in report.lessons() {
        let _ = writeln!(out, "             {lesson}");
    }
    if let Some(reason) = report.never_completed() {
        let _ = writeln!(out, "             {reason}");
    }
    for note in report.queue_notes() {
        let _ = writeln!(out, "queue        {note}");
    }
    for said in report.not_fired() {
        let _ = writeln!(out, "not fired    {said}");
    }
    if let Some((sent, landed)) = report.kill_at_rows {
        let _ = writeln!(
            out,
            "kill         sent when the table held {sent} rows; landed with {landed} rows written"
        );
    }
    let rows = &report.inspection;
    let _ = writeln!(
        out,
        "run          kills={}  restarts={}  completed={}  missing={}  elapsed={:.1}s",
        report.kills,
        report.restarts,
        if report.completed { "yes" } else { "NO" },
        rows.missing,
        report.elapsed_ms as f64 / 1000.0
    );
    let pauses = describe_pauses(report);
    if report.kills > 0 {
        let _ = writeln!(
            out,
            "windows      {}{}",
            describe_windows(
                &report.kills_in_window,
                report.kills_after_points.values().sum()
            ),
            pauses
                .as_deref()
                .map_or(String::new(), |p| format!("; {p}"))
        );
    } else if let Some(pauses) = pauses {
        let _ = writeln!(out, "windows      {pauses}");
    }
    if let Some(landed) = &report.kill_rows_landed {
        let _ = writeln!(out, "kill rows    {}", describe_rows_landings(landed));
    }
    print_answers(report, out);
    if !report.points_announced.is_empty() {
        let points: Vec<String> = (report.points_announced.iter())
            .map(|(name, n)| format!("{name}={n}"))
            .collect();
        let after: Vec<String> = (report.kills_after_points.iter())
            .map(|(name, n)| format!("{name}={n}"))
            .collect();
        let _ = writeln!(
            out,
            "points       the job announced {}{}",
            points.join(", "),
            if after.is_empty() {
                String::new()
            } else {
                format!("; kills after its own points: {}", after.join(", "))
            }
        );
    }
    if let (Some(m), Some(said)) = (report.messages, report.messages_verdict()) {
        let _ = writeln!(out, "vendor       {said}");
        let _ = writeln!(
            out,
            "messages     sent={}  keys={}  duplicated={}  missing={}  outside={}  requests={}  (at the vendor: {})",
            m.received,
            m.distinct,
            m.duplicated,
            m.missing,
            m.outside,
            m.requests,
            display(&crate::fake_vendor::db_path(&rows.db))
        );
    }
    if let Some(state) = &report.state {
        let _ = writeln!(out, "state        {}", state.line());
    }
    // On PostgreSQL the rows are in the lane's schema, named after the night (`warehouse`).
    let storage = storage_line(&rows.db, (settled, warehouse));
    if !storage.is_empty() {
        let _ = writeln!(out, "{storage}");
    }
    let _ = writeln!(out, "result       {}", judged.line());
    let _ = writeln!(out, "{}", rows.summary_line());
}

/// Where the kills placed by rows landed, against their plan.
fn describe_rows_landings(landed: &crate::engine::RowsLandings) -> String {
    let kills = crate::base::text::count(landed.count(), "kill", "kills");
    let first: Vec<String> = (landed.first.iter().take(8))
        .map(|(planned, at)| format!("{planned}->{at}"))
        .collect();
    let more = if landed.first.len() > 8 { ", ..." } else { "" };
    let past = if landed.past_plan > 0 {
        format!(
            ", {} past it (at most {}: a batch commits whole, and a job reclaim does not pace writes on while the kill is on its way)",
            landed.past_plan,
            crate::base::text::count(landed.most_past_plan, "row", "rows")
        )
    } else {
        String::new()
    };
    let listed = if first.is_empty() {
        String::new()
    } else {
        format!(" (planned->landed: {}{more})", first.join(", "))
    };
    format!(
        "{kills} placed by rows: {} on their planned row{past}{listed}",
        landed.at_plan
    )
}

/// The answers lost of those planned (`--lose-answer-at`, `--lose-answer-at-task`,
/// `--lose-answers`), with the keys of their commits.
fn print_answers(report: &RunReport, out: &mut dyn Write) {
    if !report.answers_were_planned() {
        return;
    }
    let lost = report.answers_lost.len();
    let _ = writeln!(
        out,
        "answers      {lost} lost of {} planned{}",
        report.answers_planned.len() + report.answers_planned_keys.len(),
        if lost == 0 {
            String::new()
        } else {
            format!(": {}", report.lost_keys())
        }
    );
}

/// The pauses that landed, said beside the kills' windows: how many, and how many held a
/// claim worker's lease past its end (`None`: no pause planned or made).
fn describe_pauses(report: &RunReport) -> Option<String> {
    let p = report.pauses;
    if report.pause_planned.is_none() && report.pause_rows_planned.is_none() && p.landed == 0 {
        return None;
    }
    let landed = crate::base::text::count(u64::from(p.landed), "pause landed", "pauses landed");
    Some(
        if report
            .strategy
            .is_some_and(crate::worker::Strategy::claims_items)
        {
            format!("{landed}, {} of them past a lease it held", p.past_lease)
        } else {
            landed
        },
    )
}

/// The kills by window, and the windows no kill landed in (named: a green night that never
/// reached a window says nothing about it). `own_points`: kills that landed at points of the
/// job's own (the `points` line names them), placed in the windows from the rows and
/// checkpoints like any other kill, so counted among them.
pub(super) fn describe_windows(windows: &KillWindows, own_points: u32) -> String {
    let hit: Vec<String> = KillWindow::ALL
        .into_iter()
        .filter(|&w| windows.get(w) > 0)
        .map(|w| format!("{w}={}", windows.get(w)))
        .collect();
    let never: Vec<&str> = (windows.never_hit().into_iter())
        .map(|w| match w {
            // A job's own design, which reclaim cannot know: said as the condition it is.
            KillWindow::AfterRelaySend if windows.relays_unknown => {
                "after-relay-send (a window only if the job sends after its commits)"
            }
            w => w.name(),
        })
        .collect();
    let placed_apart = windows.unplaced + windows.after_checkpoint;
    let mut said = if hit.is_empty() && placed_apart == 0 {
        "no kill landed".to_string()
    } else if hit.is_empty() {
        String::new()
    } else {
        format!("kills landed in {}", hit.join(", "))
    };
    // The kills placed apart from reclaim's windows, each with what it means.
    for (n, meaning) in [
        (
            windows.after_checkpoint,
            " after a checkpoint's commit and before its row's (after-checkpoint-commit: the job commits its checkpoint first, and a resume that trusts it loses that item)",
        ),
        (
            windows.unplaced,
            if windows.checkpoints_not_keyed {
                " after a commit, not placed: the checkpoint table's keys are not keys of the queue (a cursor, not a checkpoint per item; --checkpoint-key names the column of each item's key), so after-row-commit and after-commit cannot be told apart"
            } else {
                " after a commit, not placed: reclaim cannot see the job's checkpoints, so after-row-commit and after-commit cannot be told apart (name them with --checkpoint-table)"
            },
        ),
    ] {
        if n == 0 {
            continue;
        }
        if !said.is_empty() {
            said.push_str("; ");
        }
        said.push_str(&crate::base::text::count(u64::from(n), "kill", "kills"));
        said.push_str(meaning);
    }
    if own_points > 0 {
        said.push_str("; ");
        said.push_str(&own_points.to_string());
        said.push_str(" of them at the job's own points (the points line)");
    }
    if never.is_empty() {
        said
    } else {
        format!("{said}; never hit: {}", never.join(", "))
    }
}

/// A path on a line of its own: a line break in it (a `--db` may hold one) is escaped, so it
/// cannot split the `database` line in two.
pub(super) fn display(path: &Path) -> String {
    crate::base::text::escape_controls(&path.display().to_string())
}
