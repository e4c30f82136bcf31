//! The night's PostgreSQL as a command holds it: the server checked (or a private cluster
//! started), each lane's schema claimed, and at the end the closing lines that say where the
//! rows are.

use std::path::Path;

use super::{Server, check_server, cluster, schema};
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
}

impl Night {
    /// Opens the warehouse `spec` names: checks an existing server, or starts a private
    /// cluster (`Warehouse::of` is then the night's warehouse). `schema` is the user's `--pg-schema`.
    /// Returns `None` for SQLite.
    pub fn open(
        spec: &Spec,
        schema: Option<&str>,
        keep: bool,
    ) -> Result<Option<Self>, WarehouseError> {
        let night = match spec {
            Spec::Sqlite => return Ok(None),
            Spec::Private => {
                let cluster = cluster::Cluster::start(keep)?;
                let server = Server {
                    conninfo: cluster.conninfo(),
                    prefix: schema.unwrap_or("night").to_string(),
                };
                Self {
                    server,
                    cluster: Some(cluster),
                    schemas: Vec::new(),
                }
            }
            Spec::Server(url) => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                let prefix = schema.map_or_else(
                    || format!("reclaim_{stamp}_{}", std::process::id()),
                    str::to_string,
                );
                let server = Server {
                    conninfo: url.clone(),
                    prefix,
                };
                check_server(&server)?;
                if schema.is_some() {
                    refuse_taken_prefix(&server)?;
                }
                Self {
                    server,
                    cluster: None,
                    schemas: Vec::new(),
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
        }
        self.closing_lines()
    }

    /// The private cluster's folder, to be kept with the night's own folder if that is kept
    /// (`NightDir::attach`); `None` on a server.
    #[must_use]
    pub fn cluster_dir(&self) -> Option<&Path> {
        self.cluster.as_ref().map(cluster::Cluster::dir)
    }

    /// The night's folder was kept as `settled` says: the private cluster, with the failed
    /// night's rows, is kept beside it and said so (nothing to do on a server, or unless kept).
    pub fn keep_with(&mut self, settled: &crate::base::kept::Settled) {
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

    /// The schemas named by the night's prefix (`NAME`, `NAME_...`), read on the server: all
    /// the night's own (a private cluster's, or a prefix refused when it was taken already).
    fn made_schemas(&self) -> Result<Vec<String>, WarehouseError> {
        let mut client = self.server.connect(None)?;
        let pattern = format!("{}\\_%", self.server.prefix);
        let rows = client
            .query(
                "SELECT nspname::text FROM pg_namespace WHERE nspname = $1 OR nspname LIKE $2 ORDER BY 1",
                &[&self.server.prefix, &pattern],
            )
            .map_err(|e| WarehouseError::query("listing the night's schemas", &e))?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn closing_lines(&self) -> Vec<String> {
        match &self.cluster {
            Some(cluster) => cluster.closing_lines(&self.schemas),
            None => vec![format!(
                "postgres     {} schemas {} (kept: reclaim never drops what it made on your server)",
                self.server.target(),
                list_schemas(&self.schemas)
            )],
        }
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
