//! A server that takes only TLS connections, its certificate made here by a test CA: reclaim
//! reaches it as libpq would (`sslmode=require`, `verify-ca`, `verify-full` with `sslrootcert`),
//! its workers and a user's job too, and a certificate it must not trust, or one naming another host, is one
//! line and exit 2 before anything starts.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::KeptServer;
use crate::support::{assert_one_line_error, folder, pg_bin, reclaim_in_dir};
use crate::support::{start_kept_with, stop_kept};

/// `openssl ARGS` in `dir`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("openssl: {e}"));
    assert!(
        output.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// In `dir`: a CA (`ca.pem`), a server certificate it signed for `localhost` only
/// (`server.pem`, `server.key`), and a CA that signed nothing (`other.pem`).
fn certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for (name, subject) in [("ca", "/CN=reclaim test CA"), ("other", "/CN=someone else")] {
        let (key, pem) = (format!("{name}.key"), format!("{name}.pem"));
        let mut args = vec!["req", "-x509", "-days", "2", "-subj", subject];
        args.extend(ec);
        args.extend(["-keyout", &key, "-out", &pem]);
        openssl(dir, &args);
    }
    let mut args = vec!["req", "-subj", "/CN=localhost"];
    args.extend(ec);
    args.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(dir, &args);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// The kept server restarted on `127.0.0.1:PORT`, TLS on with `server.pem`, and every
/// connection over TCP without TLS refused by its `pg_hba.conf`.
fn tls_only(bin: &Path, server: &KeptServer, certs: &Path) -> u16 {
    let cluster = &server.cluster;
    assert!(stop_kept(bin, cluster), "pg_ctl stop failed");
    let data = cluster.join("data");
    for file in ["server.pem", "server.key"] {
        std::fs::copy(certs.join(file), data.join(file)).unwrap_or_else(|e| panic!("{e}"));
    }
    let key = data.join("server.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("{e}"));
    if nix::unistd::Uid::effective().is_root() {
        let owner = std::fs::metadata(&data).unwrap_or_else(|e| panic!("{e}"));
        let uid = std::os::unix::fs::MetadataExt::uid(&owner);
        std::os::unix::fs::chown(&key, Some(uid), None).unwrap_or_else(|e| panic!("{e}"));
    }
    std::fs::write(
        data.join("pg_hba.conf"),
        "local all reclaim trust\nhostnossl all all 0.0.0.0/0 reject\n\
         hostssl all reclaim 127.0.0.1/32 trust\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or_else(|e| panic!("{e}"), |a| a.port());
    start_kept_with(
        bin,
        cluster,
        &format!(
            "-c listen_addresses=127.0.0.1 -p {port} -k {} -c ssl=on \
             -c ssl_cert_file=server.pem -c ssl_key_file=server.key",
            cluster.display()
        ),
    );
    port
}

#[test]
#[cfg_attr(
    any(reclaim_no_pg, reclaim_no_openssl),
    ignore = "needs PostgreSQL (initdb, pg_ctl, psql) and openssl, not all found when the tests were built"
)]
fn a_tls_only_server_is_reached_as_libpq_reaches_it_and_a_wrong_certificate_is_refused() {
    let bin = pg_bin();
    let server = KeptServer::start(&bin);
    let dir = folder();
    certificates(dir.path());
    let port = tls_only(&bin, &server, dir.path());
    let ca = dir.path().join("ca.pem").display().to_string();
    let other = dir.path().join("other.pem").display().to_string();
    let url =
        |host: &str, query: &str| format!("postgresql://reclaim@{host}:{port}/postgres?{query}");
    let reclaim = |args: &[&str]| reclaim_in_dir(dir.path(), args, Duration::from_secs(300));
    let night = |url: &str, name: &str| {
        let args = [
            "run",
            "--strategy",
            "guarded",
            "--items",
            "12",
            "--kill-at-rows",
            "5",
            "--pg-schema",
            name,
            "--warehouse",
            url,
        ];
        let run = reclaim(&args);
        assert_eq!(run.code, Some(0), "{url}\n{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("result       PASS"), "{}", run.stdout);
    };
    // Without TLS the server refuses, so every night below went over TLS, its workers' too.
    let plain = reclaim(&[
        "schemas",
        "--warehouse",
        &url("127.0.0.1", "sslmode=disable"),
    ]);
    assert_one_line_error(&plain, "no encryption");
    night(&url("127.0.0.1", "sslmode=require"), "required");
    night(
        &url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
        "verified",
    );
    // A job of the user's is handed the same settings (`DATABASE_URL`, `PGSSLMODE`,
    // `PGSSLROOTCERT`): its psql gets through too.
    let job = format!("sh {}/examples/psql_job.sh", env!("CARGO_MANIFEST_DIR"));
    let verified = url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let exec = reclaim(&[
        "run",
        "--exec",
        &job,
        "--items",
        "10",
        "--kills",
        "1",
        "--seed",
        "5",
        "--warehouse",
        &verified,
    ]);
    assert_eq!(exec.code, Some(0), "{}\n{}", exec.stdout, exec.stderr);
    assert!(
        exec.stdout.contains("rows=10 duplicated_task_ids=0"),
        "{}",
        exec.stdout
    );
    // verify-ca checks the chain only; verify-full also the name, and the certificate names
    // localhost, not 127.0.0.1.
    let chain_only = reclaim(&[
        "schemas",
        "--warehouse",
        &url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}")),
    ]);
    assert_eq!(chain_only.code, Some(0), "{}", chain_only.stderr);
    let wrong_name = reclaim(&[
        "schemas",
        "--warehouse",
        &url(
            "127.0.0.1",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        ),
    ]);
    assert_one_line_error(&wrong_name, "certificate");
    let wrong_ca = reclaim(&[
        "run",
        "--strategy",
        "guarded",
        "--warehouse",
        &url(
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={other}"),
        ),
    ]);
    assert_one_line_error(&wrong_ca, "certificate");
    assert!(!wrong_ca.stdout.contains("02:00"), "{}", wrong_ca.stdout);
}
