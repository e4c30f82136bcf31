//! The night's PostgreSQL as a command holds it: the server checked (or a private cluster
//! started), each lane's schema claimed, and at the end the closing lines that say where the
//! rows are. On a server the night's schemas go as its folder goes: dropped at the end unless
//! the folder is kept (`keep_with`) or a map was asked to keep them (`decide`), and the kept
//! ones carry the verdict (`catalogue`).

use std::path::Path;

use super::{Server, catalogue, check_server, cluster, schema};
use crate::warehouse::Spec;
use crate::warehouse::error::WarehouseError;

/// The night's PostgreSQL, held by the command for as long as the night runs: dropping it
/// stops the private cluster (and removes it, unless kept).
#[derive(Debug)]
pub struct Night {
    pub server: Server,
    pub cluster: Option<cluster::Cluster>,
    /// The lanes' schemas, as claimed.
    pub schemas: Vec<String>,
    /// On a server: what becomes of the night's schemas when it closes.
    fate: Fate,
    /// On a server: the night's advisory lock, held while it runs (`catalogue::hold`).
    holder: Option<Holder>,
    /// When the night opened (seconds since the epoch), as its schemas' marks say.
    made: u64,
}

/// What becomes of a night's schemas on a server when it closes; until a command decides (a
/// `run --db`, whose night has no folder), they are kept, as they always were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Undecided,
    /// Kept, and why (the night's verdict is written on them).
    Keep {
        why: String,
        verdict: Option<String>,
    },
    /// Dropped, and why.
    Drop(String),
}

/// The connection that holds the night's lock (a `postgres::Client` says nothing of itself).
struct Holder(#[allow(dead_code)] postgres::Client);

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Holder")
    }
}

impl Night {
    /// Opens the warehouse `spec` names: checks an existing server, or starts a private
    /// cluster (`Warehouse::of` is then the night's warehouse). `schema` is the user's `--pg-schema`.
    /// Returns `None` for SQLite.
    pub fn open(
        spec: &Spec,
        schema: Option<&str>,
        keep: bool,
        wait: std::time::Duration,
    ) -> Result<Option<Self>, WarehouseError> {
        let made = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let night = match spec {
            Spec::Sqlite => return Ok(None),
            Spec::Private => {
                let cluster = cluster::Cluster::start(keep)?;
                let server = Server {
                    conninfo: cluster.conninfo(),
                    prefix: schema.unwrap_or("night").to_string(),
                    wait,
                    restarter: Some(cluster.restarter()),
                };
                Self {
                    server,
                    cluster: Some(cluster),
                    schemas: Vec::new(),
                    fate: Fate::Undecided,
                    holder: None,
                    made,
                }
            }
            Spec::Server(url) => {
                let prefix = schema.map_or_else(
                    || format!("reclaim_{made}_{}", std::process::id()),
                    str::to_string,
                );
                let server = Server {
                    conninfo: url.clone(),
                    prefix,
                    wait,
                    restarter: None,
                };
                check_server(&server)?;
                let Some(holder) = catalogue::hold(&server)? else {
                    return Err(WarehouseError::Flags(format!(
                        "a night named {} is running on {} now: name yours otherwise (--pg-schema)",
                        server.prefix,
                        server.target()
                    )));
                };
                if schema.is_some() {
                    refuse_taken_prefix(&server)?;
                }
                Self {
                    server,
                    cluster: None,
                    schemas: Vec::new(),
                    fate: Fate::Undecided,
                    holder: Some(Holder(holder)),
                    made,
                }
            }
        };
        Ok(Some(night))
    }

    /// Claims each lane's schema (`schema::claim_schema`) before the night starts.
    pub fn claim<'a>(
        &mut self,
        lanes: impl IntoIterator<Item = &'a Path>,
    ) -> Result<(), WarehouseError> {
        for db in lanes {
            let schema = self.server.schema_for(db);
            schema::claim_schema(&self.server, &schema)?;
            self.schemas.push(schema);
        }
        Ok(())
    }

    /// Ends the night's PostgreSQL (the private cluster stopped, and removed unless kept) and
    /// says where the rows are and how to look at them.
    #[must_use]
    pub fn close(mut self) -> Vec<String> {
        // Every schema the night made, as the server lists them (whoever claimed them: a
        // dashboard's lanes, prove's or a map's nights); what was claimed here if it cannot say.
        if let Ok(made) = self.made_schemas()
            && !made.is_empty()
        {
            self.schemas = made;
        }
        if let Some(cluster) = self.cluster.as_mut() {
            cluster.stop();
            return cluster.closing_lines(&self.schemas);
        }
        let line = self.settle_schemas();
        // The night is over: its lock goes with its connection.
        self.holder = None;
        vec![line]
    }

    /// A map's decision (`map --keep`): its nights' schemas kept or dropped as one.
    pub fn decide(&mut self, keep: bool) {
        self.fate = if keep {
            Fate::Keep {
                why: "--keep".into(),
                verdict: Some("kept by map --keep (a map's verdict is its cells')".into()),
            }
        } else {
            Fate::Drop("--keep always keeps them".into())
        };
    }

    /// On a server, the night's schemas dropped or kept (with the verdict written on them) as
    /// decided, and the closing line that says which.
    fn settle_schemas(&self) -> String {
        let target = self.server.target();
        let list = list_schemas(&self.schemas);
        let listing = format!(
            "`reclaim schemas --warehouse URL` lists them, `--drop {}` drops them",
            self.server.prefix
        );
        if self.schemas.is_empty() {
            return format!("postgres     {target} schemas none");
        }
        match &self.fate {
            Fate::Drop(why) => {
                // Only what carries this night's mark: a schema someone else made under the
                // night's name is left (and said).
                let dropped = self.server.connect(None).and_then(|mut client| {
                    let ours =
                        catalogue::marked_for(&mut client, &self.server.prefix, &self.schemas)?;
                    catalogue::refuse_dependents(&mut client, &ours)?;
                    catalogue::drop_schemas(&mut client, &ours).map(|()| ours)
                });
                match dropped {
                    Ok(ours) if ours.len() == self.schemas.len() => {
                        format!("postgres     {target} schemas {list} dropped ({why})")
                    }
                    Ok(ours) => {
                        let left: Vec<String> = (self.schemas.iter())
                            .filter(|s| !ours.contains(s))
                            .cloned()
                            .collect();
                        format!(
                            "postgres     {target} schemas {} dropped ({why}); {} left: not marked as this night's",
                            list_schemas(&ours),
                            list_schemas(&left)
                        )
                    }
                    Err(e) => format!(
                        "postgres     {target} schemas {list}: not all dropped ({e}); {listing}"
                    ),
                }
            }
            Fate::Keep { why, verdict } => {
                let recorded = verdict.as_deref().map(|verdict| {
                    self.server.connect(None).and_then(|mut client| {
                        catalogue::record_verdict(
                            &mut client,
                            &self.schemas,
                            &self.server.prefix,
                            self.made,
                            verdict,
                        )
                    })
                });
                let unrecorded = match recorded {
                    Some(Err(e)) => format!(" (its verdict was not written on them: {e})"),
                    _ => String::new(),
                };
                format!("postgres     {target} schemas {list} kept ({why}){unrecorded}: {listing}")
            }
            Fate::Undecided => format!("postgres     {target} schemas {list} kept: {listing}"),
        }
    }

    /// The private cluster's folder, to be kept with the night's own folder if that is kept
    /// (`NightDir::attach`); `None` on a server.
    #[must_use]
    pub fn cluster_dir(&self) -> Option<&Path> {
        self.cluster.as_ref().map(cluster::Cluster::dir)
    }

    /// The night's folder was kept as `settled` says: the private cluster, with the failed
    /// night's rows, is kept beside it and said so; on a server the night's schemas are kept
    /// with `verdict` written on them, or dropped with a folder not kept.
    pub fn keep_with(&mut self, settled: &crate::base::kept::Settled, verdict: &str) {
        if self.cluster.is_none() {
            let policy = settled.policy;
            let keep = |why: String| Fate::Keep {
                why,
                verdict: Some(verdict.into()),
            };
            self.fate = match (settled.kept, policy, &settled.held) {
                (true, crate::base::kept::Keep::Always, _) => keep("--keep always".into()),
                (true, _, Some(held)) => keep(format!("--keep {policy}, but {held}")),
                (true, _, None) => keep(format!("--keep {policy}: the night failed")),
                (false, crate::base::kept::Keep::Never, _) => Fate::Drop("--keep never".into()),
                (false, _, _) => Fate::Drop(format!(
                    "--keep {policy}: nothing failed; --keep always keeps them"
                )),
            };
        }
        if !settled.kept {
            return;
        }
        if let Some(cluster) = self.cluster.as_mut() {
            let policy = settled.policy;
            let why = match policy {
                crate::base::kept::Keep::Always => "--keep always".to_string(),
                _ if settled.held.is_some() => format!("--keep {policy}, kept with its night"),
                _ => format!(
                    "--keep {policy}: the night failed; removed with its night by `reclaim kept --remove`"
                ),
            };
            cluster.keep_as(&why);
        }
    }

    /// Whether closing removes the private cluster and its rows (not kept).
    #[must_use]
    pub fn removes_cluster(&self) -> bool {
        self.cluster.as_ref().is_some_and(|c| !c.kept())
    }

    /// The schemas the night made, whoever claimed them (a dashboard's lanes, prove's or a
    /// map's nights): those named by its prefix (`NAME`, `NAME_...`) whose mark names it, so a
    /// night `ci` never counts, drops or marks a `ci_pr42` running beside it.
    fn made_schemas(&self) -> Result<Vec<String>, WarehouseError> {
        let mut client = self.server.connect(None)?;
        let pattern = format!("{}\\_%", self.server.prefix);
        let rows = client
            .query(
                "SELECT nspname::text FROM pg_namespace WHERE nspname = $1 OR nspname LIKE $2 ORDER BY 1",
                &[&self.server.prefix, &pattern],
            )
            .map_err(|e| WarehouseError::query("listing the night's schemas", &e))?;
        let named: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        catalogue::marked_for(&mut client, &self.server.prefix, &named)
    }
}

/// Schemas as a closing line names them: all of a few, the first of many and how many in all.
#[must_use]
pub fn list_schemas(schemas: &[String]) -> String {
    const SHOWN: usize = 6;
    match schemas.len() {
        0 => "none".into(),
        n if n <= SHOWN => schemas.join(", "),
        n => format!("{}, ... ({n} in all)", schemas[..SHOWN].join(", ")),
    }
}

/// A user-named night must not share its name with any schema there already (`NAME`, or a
/// lane's `NAME_...`): checked before anything is created.
fn refuse_taken_prefix(server: &Server) -> Result<(), WarehouseError> {
    let mut client = server.connect(None)?;
    let pattern = format!("{}\\_%", server.prefix);
    let taken = client
        .query_opt(
            "SELECT n.nspname::text, EXISTS (SELECT 1 FROM pg_tables t
                 WHERE t.schemaname = n.nspname AND t.tablename = 'records')
             FROM pg_namespace n WHERE n.nspname = $1 OR n.nspname LIKE $2
             ORDER BY 2 DESC LIMIT 1",
            &[&server.prefix, &pattern],
        )
        .map_err(|e| WarehouseError::query("looking for the schema", &e))?;
    match taken {
        None => Ok(()),
        Some(row) => Err(WarehouseError::SchemaExists {
            target: server.target(),
            schema: crate::base::text::escape_controls(&row.get::<_, String>(0)),
            holding: if row.get(1) {
                " and holds a records table reclaim did not create tonight"
            } else {
                ""
            },
        }),
    }
}
