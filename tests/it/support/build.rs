//! The package's build script: it only looks for the programs some tests need beyond Rust's, so
//! that on a machine without one those tests are reported as ignored, with the reason, instead
//! of passing without running. It sets `cfg(reclaim_no_pg)` when PostgreSQL's server programs
//! (`initdb`, `pg_ctl`, under `RECLAIM_PG_BIN` or `/usr/lib/postgresql/N/bin`) or `psql` are
//! missing, `cfg(reclaim_no_openssl)` without `openssl` (the TLS test makes its certificates
//! with it) and `cfg(reclaim_no_rsvg)` without `rsvg-convert` (a test renders a slide with it).
//! The program itself does not read the cfgs.

use std::path::{Path, PathBuf};

/// Where Debian's `postgresql` package puts the server's programs, newest first (the same list
/// as `src/warehouse/postgres/cluster.rs`).
const BIN_DIRS: [&str; 4] = [
    "/usr/lib/postgresql/17/bin",
    "/usr/lib/postgresql/16/bin",
    "/usr/lib/postgresql/15/bin",
    "/usr/lib/postgresql/14/bin",
];

fn server_programs() -> Option<PathBuf> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Some(dir) = std::env::var_os("RECLAIM_PG_BIN") {
        return Some(PathBuf::from(dir)).filter(|d| has(d));
    }
    BIN_DIRS.iter().map(PathBuf::from).find(|d| has(d))
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

fn main() {
    println!("cargo::rerun-if-changed=tests/it/support/build.rs");
    println!("cargo::rerun-if-env-changed=RECLAIM_PG_BIN");
    let pg = (server_programs(), on_path("psql"));
    let openssl = on_path("openssl");
    let rsvg = on_path("rsvg-convert");
    // What was found is watched, so a removal is noticed; an installation after this build is
    // not (run `touch tests/it/support/build.rs`, or `cargo clean`), as the ignore reason says.
    for program in [&pg.0, &pg.1, &openssl, &rsvg].into_iter().flatten() {
        println!("cargo::rerun-if-changed={}", program.display());
    }
    for (cfg, found) in [
        ("reclaim_no_pg", pg.0.is_some() && pg.1.is_some()),
        ("reclaim_no_openssl", openssl.is_some()),
        ("reclaim_no_rsvg", rsvg.is_some()),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if !found {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
