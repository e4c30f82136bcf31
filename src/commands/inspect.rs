//! `reclaim inspect`: what a warehouse holds, and the status derived from its rows.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::base::exit::{DATA_WRONG, OK};
use crate::cli::InspectArgs;
use crate::error::Error;
use crate::warehouse::sqlite::inspect;

pub(super) fn run(args: &InspectArgs) -> Result<u8, Error> {
    if let Some(table) = &args.table {
        return own_job(args, table);
    }
    // The lane's warehouse, as a worker of its night names it: handed through the environment
    // by the night that spawned this process, SQLite files otherwise.
    let warehouse = crate::warehouse::Warehouse::from_env();
    let ids = if args.ids {
        Some(warehouse.duplicated_ids(&args.db, usize::MAX)?.0)
    } else {
        None
    };
    let inspection = warehouse.inspect(&args.db, items(args))?;
    let mut out = crate::base::out::stdout();
    let text = if args.json {
        let mut value = serde_json::to_value(&inspection).map_err(Error::json("the inspection"))?;
        value["derived_status"] = inspection.derived().label().into();
        if let Some(ids) = &ids {
            value["duplicated_ids"] =
                serde_json::to_value(ids).map_err(Error::json("the duplicate ids"))?;
        }
        format!("{value}\n")
    } else {
        let mut text = crate::warehouse::inspection::render(&inspection);
        if let Some(ids) = &ids {
            let _ = write!(
                text,
                "\nduplicated task ids ({}): rows each, then the runs that wrote them, oldest first\n",
                ids.len()
            );
            for id in ids {
                let _ = writeln!(
                    text,
                    "{}",
                    crate::warehouse::inspection::duplicated_line(id)
                );
            }
        }
        text
    };
    let _ = out.write_all(text.as_bytes());
    Ok(exit_code(inspection.derived()))
}

/// The queue size asked for, or the default.
fn items(args: &InspectArgs) -> u64 {
    args.items.unwrap_or(DEFAULT_ITEMS)
}

/// `inspect`'s queue when none is named: 200 tasks, as every command's.
const DEFAULT_ITEMS: u64 = 200;

/// The queue a night of reclaim's wrote beside an external job's database (`DB.keys`, what the
/// night judged its rows against), when a regular file is there; one that does not read as a
/// queue is refused, never replaced by a queue nobody named.
fn nights_queue(db: &std::path::Path) -> Result<Option<crate::queue::Queue>, Error> {
    let path = crate::engine::keys_path(db);
    if !matches!(
        crate::base::paths::look(&path),
        Ok(crate::base::paths::PathKind::File(_))
    ) {
        return Ok(None);
    }
    crate::queue::Queue::from_file(&path).map(Some).map_err(|e| {
        Error::Refused(format!(
            "{} (the queue a night wrote beside the database) does not read as a queue: {e}; name the queue with --items, --key-format or --keys-from",
            crate::base::paths::shown(&path)
        ))
    })
}

/// The exit code of a verdict, the one `inspect` prints: 0 when it holds, 1 otherwise.
fn exit_code(derived: crate::verdict::Derived) -> u8 {
    if derived.is_ok() { OK } else { DATA_WRONG }
}

/// `inspect --table T --key K`: someone else's job's rows, judged against its queue by the
/// rule `run --exec` uses, as a finished night. `--db` is the job's own SQLite file, whatever
/// warehouse a night of reclaim's used, so it is read as one (`warehouse::sqlite`).
fn own_job(args: &InspectArgs, table: &str) -> Result<u8, Error> {
    use crate::queue::{KeyFormat, Queue};
    let source = crate::warehouse::RowSource {
        table: table.to_string(),
        key: args
            .key
            .clone()
            .unwrap_or_else(|| crate::warehouse::DEFAULT_KEY.into()),
        ..crate::warehouse::RowSource::default()
    };
    let queue = if let Some(file) = &args.keys_from {
        Queue::from_file(file)?
    } else if let Some(sql) = &args.keys_sql {
        let real = crate::base::paths::existing_file(&args.db, "--db")?;
        let snapshot = crate::warehouse::sqlite::Snapshot::open(&real)?;
        crate::warehouse::sqlite::keys_sql::keys_from_sql(&snapshot.conn, sql)?
    } else if let Some(night) = (args.items.is_none() && args.key_format.is_none())
        .then(|| nights_queue(&args.db))
        .transpose()?
        .flatten()
    {
        night
    } else if let Some(format) = &args.key_format {
        let format = KeyFormat::parse(format)?;
        Queue::formatted(format, items(args))
    } else {
        Queue::tasks(items(args))
    };
    let inspection = inspect::inspect_rows(&args.db, &queue, &source)?;
    let ids = if args.ids {
        Some(crate::warehouse::sqlite::key_ids::key_ids(
            &args.db, &queue, &source,
        )?)
    } else {
        None
    };
    let derived = inspection.derived().once_ended();
    let mut out = crate::base::out::stdout();
    let text = if args.json {
        let mut value = serde_json::to_value(&inspection).map_err(Error::json("the inspection"))?;
        value["derived_status"] = derived.label().into();
        value["verdict"] = derived.to_string().into();
        if let Some(ids) = &ids {
            value["keys"] = serde_json::to_value(ids).map_err(Error::json("the keys"))?;
        }
        format!("{value}\n")
    } else {
        let i = &inspection;
        let mut text = String::new();
        let _ = writeln!(
            text,
            "database     {}",
            crate::base::text::escape_controls(&i.db.display().to_string())
        );
        let _ = writeln!(
            text,
            "rows         {} in {} keyed by {}",
            i.rows,
            crate::base::text::escape_controls(&source.table),
            crate::base::text::escape_controls(&source.key)
        );
        let _ = writeln!(text, "queue        {}", queue.describe());
        let _ = writeln!(text, "distinct     {} keys of the queue", i.distinct);
        let _ = writeln!(
            text,
            "duplicated   {} keys with more than one row ({} extra rows)",
            i.duplicated_task_ids, i.extra_rows
        );
        let _ = writeln!(
            text,
            "missing      {} keys of the queue with no row",
            i.missing
        );
        let _ = writeln!(
            text,
            "outside      {} rows whose key is not in the queue",
            i.unexpected
        );
        for note in i.queue_notes() {
            let _ = writeln!(text, "             {note}");
        }
        let _ = writeln!(text, "integrity    {}", i.integrity);
        let _ = writeln!(text, "verdict      {derived}");
        if let Some(ids) = &ids {
            list_keys(&mut text, ids);
        }
        text
    };
    let _ = out.write_all(text.as_bytes());
    Ok(exit_code(derived))
}

/// `--ids` beside `--table`: each wrong key by name, under a heading with its count.
fn list_keys(text: &mut String, ids: &crate::warehouse::sqlite::key_ids::KeyIds) {
    let _ = write!(
        text,
        "\nmissing keys ({}): keys of the queue with no row, in the queue's order\n",
        ids.missing.len()
    );
    for key in &ids.missing {
        let _ = writeln!(text, "{key}");
    }
    for (heading, keys) in [
        ("duplicated keys", &ids.duplicated),
        ("keys outside the queue", &ids.outside),
    ] {
        let _ = write!(text, "\n{heading} ({}): rows each\n", keys.len());
        for (key, count) in keys {
            let _ = writeln!(text, "{key}  x{count}");
        }
    }
}
