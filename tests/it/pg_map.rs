//! `map` and `--exec` on PostgreSQL: the same cells as on SQLite, and someone's own job writing
//! to the server through `psql`.

use std::time::Duration;

use crate::common::{json_of, reclaim_in_dir};
use crate::warehouse_pg::{folder, pg_bin};

const LIMIT: Duration = Duration::from_secs(300);

/// A map's cells without what differs between runs (its kept paths).
fn cells(json: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut cells: Vec<serde_json::Value> = json["cells"]
        .as_array()
        .unwrap_or_else(|| panic!("no cells: {json}"))
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if let Some(o) = c.as_object_mut() {
                o.remove("db");
            }
            c
        })
        .collect();
    cells.sort_by_key(std::string::ToString::to_string);
    cells
}

#[test]
fn a_map_on_postgres_has_the_cells_of_the_map_on_sqlite() {
    if pg_bin().is_none() {
        eprintln!("PostgreSQL server programs not installed: not run (.ci/run installs them)");
        return;
    }
    let args = [
        "map",
        "--items",
        "12",
        "--tasks",
        "4..6",
        "--strategy",
        "naive,two-commit,guarded,claim",
        "--json",
    ];
    let dir = folder();
    let sqlite = reclaim_in_dir(dir.path(), &args, LIMIT);
    let mut on_pg = args.to_vec();
    on_pg.extend(["--warehouse", "postgres"]);
    let pg = reclaim_in_dir(dir.path(), &on_pg, LIMIT);
    // Some cells are wrong (naive's, two-commit's gap): exit 1 on both.
    assert_eq!(sqlite.code, Some(1), "{}\n{}", sqlite.stdout, sqlite.stderr);
    assert_eq!(pg.code, Some(1), "{}\n{}", pg.stdout, pg.stderr);
    let (sqlite, pg) = (json_of(&sqlite), json_of(&pg));
    assert_eq!(cells(&pg).len(), 4 * 4 * 3);
    assert_eq!(cells(&pg), cells(&sqlite));
    // Naive killed before task-004's write rewrites tasks 0..4: duplicates are there to see.
    assert!(
        cells(&pg)
            .iter()
            .any(|c| c["strategy"] == "naive" && c["duplicated_task_ids"] == 4),
        "{pg}"
    );
    // Nothing of the map is left behind: the cluster went with it.
    assert!(
        crate::warehouse_pg::cluster_folder(dir.path()).is_none(),
        "the map's cluster is left"
    );
}
