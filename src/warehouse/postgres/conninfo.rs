//! A connection string as reclaim holds it: `Conninfo`, whose only shown form (`Display`,
//! `Debug`) has its password as `***`, so no output can forget to hide it. The string itself
//! (`expose`) goes only to the driver and to reclaim's own children; `redact` is the same rule
//! for text that may hold one (a command line, a driver's error).
//!
//! A password may also come the ways libpq takes one (`Conninfo::config`): `PGPASSWORD`, the
//! password file (`PGPASSFILE` or `~/.pgpass`, ignored when group or others may read it, as
//! libpq does) and a service (`PGSERVICE` or `?service=` / `service=`, from `PGSERVICEFILE` or
//! `~/.pg_service.conf`, then `PGSYSCONFDIR/pg_service.conf`: host, port, dbname, user and
//! password).

use std::fmt;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;

use super::tls::Tls;

/// Why a connection string, a password file or a service cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConninfoError(pub String);

impl From<String> for ConninfoError {
    fn from(said: String) -> Self {
        Self(said)
    }
}

impl From<super::tls::TlsError> for ConninfoError {
    fn from(said: super::tls::TlsError) -> Self {
        Self(said.0)
    }
}

impl From<&str> for ConninfoError {
    fn from(said: &str) -> Self {
        Self(said.to_owned())
    }
}

/// A connection string ready for the driver (`Conninfo::config`).
pub struct Prepared {
    /// The driver's settings, its password filled in as libpq would.
    pub config: postgres::Config,
    /// How the connection is encrypted and the server checked (`sslmode`, `sslrootcert`).
    pub tls: Tls,
    /// Why a password file was passed over, if it was.
    pub note: Option<String>,
}

/// What a password is shown as.
pub const HIDDEN: &str = "***";

/// A libpq connection string (a `postgres://` URL or `key=value` pairs) that may hold a password.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Conninfo(String);

impl Conninfo {
    #[must_use]
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Whether the driver is told to insist on TLS (`require` and the verify modes): then no
    /// proxy of reclaim's can read the answers between the workers and the server.
    #[must_use]
    pub fn insists_on_tls(&self) -> bool {
        (self.config()).is_ok_and(|p| p.tls.driver_mode() == postgres::config::SslMode::Require)
    }

    /// The string with its password: for the driver and reclaim's own children only, never for
    /// anything shown, recorded or exported.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A URL (`postgres://...`), not `key=value` pairs.
    #[must_use]
    pub fn is_url(&self) -> bool {
        self.0.contains("://")
    }

    /// The driver's settings, the password and a service's settings filled in as libpq would
    /// (see the module's header), and its TLS settings (`tls`), taken from the string or from
    /// `PGSSLMODE` and `PGSSLROOTCERT`. An error is said without the password.
    pub fn config(&self) -> Result<Prepared, ConninfoError> {
        let (text, taken) = take_keys(&self.0, &["service", "sslmode", "sslrootcert"]);
        let setting = |key: &str| {
            taken
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let service = setting("service");
        let tls = Tls::from_settings(setting("sslmode"), setting("sslrootcert"))?;
        let mut config: postgres::Config = text.parse().map_err(|e: postgres::Error| {
            // The driver's own words and their cause (for `?bogus=1`, "invalid connection
            // string: unknown option" and its name), where its Display stops before the cause.
            let mut said = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(inner) = cause {
                said = format!("{said}: {inner}");
                cause = inner.source();
            }
            crate::base::text::escape_controls(&redact(&said))
        })?;
        let service = service.or_else(|| std::env::var("PGSERVICE").ok());
        if let Some(name) = service.filter(|s| !s.is_empty()) {
            apply_service(&mut config, &name)?;
        }
        let mut note = None;
        if config.get_password().is_none() {
            if let Some(password) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
                config.password(password.as_encoded_bytes());
            } else {
                match from_pgpass(&config) {
                    Ok(Some(password)) => {
                        config.password(password);
                    }
                    Ok(None) => {}
                    Err(why) => note = Some(why.0),
                }
            }
        }
        config.ssl_mode(tls.driver_mode());
        Ok(Prepared { config, tls, note })
    }
}

/// The only way a connection string is shown: its password as `***`, control characters escaped.
impl fmt::Display for Conninfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::base::text::escape_controls(&redact(&self.0)))
    }
}

impl fmt::Debug for Conninfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Conninfo({:?})", redact(&self.0))
    }
}

/// `text` with every password a connection string in it may carry shown as `***`: a URL's
/// (`scheme://user:PASSWORD@host`), and any `password=VALUE` (`?password=`, `key=value`,
/// `PGPASSWORD=` in a command line; a quoted `'...'` value whole).
#[must_use]
pub fn redact(text: &str) -> String {
    redact_assignments(&redact_userinfo(text))
}

/// `scheme://user:PASSWORD@host` -> `scheme://user:***@host`, for every `://` in `text`.
fn redact_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (head, tail) = rest.split_at(at + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(sign) if authority[..sign].contains(':') => {
                let userinfo = &authority[..sign];
                let colon = userinfo.find(':').unwrap_or(userinfo.len());
                out.push_str(&userinfo[..=colon]);
                out.push_str(HIDDEN);
                out.push_str(&authority[sign..]);
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Every `password=VALUE` (any case) -> `password=***`; the value ends at `&`, white space or,
/// quoted, at its closing quote.
fn redact_assignments(text: &str) -> String {
    const KEY: &str = "password=";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(found) = lower[from..].find(KEY) {
        let start = from + found + KEY.len();
        out.push_str(&text[from..start]);
        let value = &text[start..];
        let len = if let Some(quoted) = value.strip_prefix('\'') {
            let mut escaped = false;
            let close = quoted.char_indices().find(|&(_, c)| {
                let closes = c == '\'' && !escaped;
                escaped = c == '\\' && !escaped;
                closes
            });
            close.map_or(value.len(), |(i, _)| i + 2)
        } else {
            value
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                .unwrap_or(value.len())
        };
        if len > 0 {
            out.push_str(HIDDEN);
        }
        from = start + len;
    }
    out.push_str(&text[from..]);
    out
}

/// The string without the settings named in `keys` (which the driver does not know: `service`,
/// `sslmode`'s libpq values, `sslrootcert`), and those settings in order, a URL's values
/// percent-decoded.
fn take_keys(text: &str, keys: &[&str]) -> (String, Vec<(String, String)>) {
    let mut taken = Vec::new();
    let mut keep = |pair: &str, url: bool| {
        let Some((key, value)) = pair.split_once('=') else {
            return true;
        };
        if !keys.contains(&key) {
            return true;
        }
        let value = if url {
            decode(value)
        } else {
            value.to_string()
        };
        taken.push((key.to_string(), value));
        false
    };
    if let Some((base, query)) = text.split_once('?')
        && text.contains("://")
    {
        let kept: Vec<&str> = query.split('&').filter(|pair| keep(pair, true)).collect();
        let text = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return (text, taken);
    }
    if text.contains("://") {
        return (text.to_string(), taken);
    }
    let kept: Vec<&str> = text
        .split_whitespace()
        .filter(|pair| keep(pair, false))
        .collect();
    (kept.join(" "), taken)
}

/// A URL's `%XX` escapes decoded (a value that is not valid UTF-8 after it is kept as given).
fn decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| value.to_string())
}

/// Fills what `config` lacks from the service `name`'s section (the user's file first).
fn apply_service(config: &mut postgres::Config, name: &str) -> Result<(), ConninfoError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let files = [
        std::env::var_os("PGSERVICEFILE")
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".pg_service.conf"))),
        std::env::var_os("PGSYSCONFDIR").map(|d| PathBuf::from(d).join("pg_service.conf")),
    ];
    for file in files.into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Some(settings) = service_section(&text, name) else {
            continue;
        };
        for (key, value) in settings {
            let unset = match key.as_str() {
                "host" => config.get_hosts().is_empty(),
                "port" => config.get_ports().is_empty(),
                "dbname" => config.get_dbname().is_none(),
                "user" => config.get_user().is_none(),
                "password" => config.get_password().is_none(),
                _ => false,
            };
            if !unset {
                continue;
            }
            match key.as_str() {
                "host" => {
                    config.host(&value);
                }
                "port" => {
                    let port = value.parse::<u16>().map_err(|_| {
                        format!(
                            "service {name} in {}: port {} is not a port number",
                            file.display(),
                            value
                        )
                    })?;
                    config.port(port);
                }
                "dbname" => {
                    config.dbname(&value);
                }
                "user" => {
                    config.user(&value);
                }
                _ => {
                    config.password(value.as_bytes());
                }
            }
        }
        return Ok(());
    }
    Ok(())
}

/// The `key=value` lines of section `[name]` of a service file.
fn service_section(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut inside = false;
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            inside = section.trim() == name;
            if inside {
                found.get_or_insert_with(Vec::new);
            }
            continue;
        }
        if inside && let Some((key, value)) = line.split_once('=') {
            found
                .get_or_insert_with(Vec::new)
                .push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    found
}

/// The password for `config` in the password file, if one matches. `Err` says why the file
/// was passed over (group or others may read it: libpq's rule).
fn from_pgpass(config: &postgres::Config) -> Result<Option<String>, ConninfoError> {
    let file = match std::env::var_os("PGPASSFILE") {
        Some(file) => PathBuf::from(file),
        None => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(".pgpass"),
            None => return Ok(None),
        },
    };
    let Ok(meta) = std::fs::metadata(&file) else {
        return Ok(None);
    };
    let mode = meta.permissions().mode();
    if !meta.is_file() {
        return Ok(None);
    }
    if mode & 0o077 != 0 {
        return Err(format!(
            "password file {} ignored: group or others may read it (mode {:o}); chmod 0600 it",
            crate::base::text::escape_controls(&file.display().to_string()),
            mode & 0o777
        )
        .into());
    }
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(None);
    };
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(name)) => name.clone(),
        Some(postgres::config::Host::Unix(path)) => {
            let path = path.display().to_string();
            if path == "/var/run/postgresql" || path == "/run/postgresql" || path == "/tmp" {
                "localhost".into()
            } else {
                path
            }
        }
        None => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default().to_string();
    let dbname = config.get_dbname().unwrap_or(&user).to_string();
    Ok(pgpass_match(&text, [&host, &port, &dbname, &user]))
}

/// The first line of a password file matching `wanted` (host, port, database, user; `*` matches
/// anything), its fields unescaped (`\:` and `\\`).
fn pgpass_match(text: &str, wanted: [&str; 4]) -> Option<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            if fields.len() < 5 {
                return None;
            }
            let matches = wanted
                .iter()
                .zip(&fields)
                .all(|(want, field)| field == "*" || field == want);
            matches.then(|| fields[4..].join(":"))
        })
}

/// A password file's line split at unescaped `:`.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next()
                    && let Some(field) = fields.last_mut()
                {
                    field.push(next);
                }
            }
            ':' => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_password_is_shown_as_stars() {
        let shown = |text: &str| Conninfo::new(text).to_string();
        assert_eq!(
            shown("postgres://alice:s3cr3t@127.0.0.1:54329/wh"),
            "postgres://alice:***@127.0.0.1:54329/wh"
        );
        assert_eq!(
            shown("postgresql://alice@h/wh?sslmode=disable&password=s3cr3t&port=1"),
            "postgresql://alice@h/wh?sslmode=disable&password=***&port=1"
        );
        assert_eq!(
            shown("host=/tmp/s user=bob password=secret dbname=x"),
            "host=/tmp/s user=bob password=*** dbname=x"
        );
        assert_eq!(
            shown("host=h password='a b\\' c' user=u"),
            "host=h password=*** user=u"
        );
        // A URL without a password is shown whole; the user name's `@`s keep the last one.
        assert_eq!(shown("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(shown("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
        assert!(!format!("{:?}", Conninfo::new("postgres://a:zz9@h/d")).contains("zz9"));
        // In a command line, wherever it is.
        assert_eq!(
            redact("reclaim run --warehouse=postgres://a:pw@h/d --exec 'PGPASSWORD=pw2 job'"),
            "reclaim run --warehouse=postgres://a:***@h/d --exec 'PGPASSWORD=*** job'"
        );
    }

    #[test]
    fn a_url_the_driver_refuses_is_said_with_its_cause_and_no_password() {
        let Err(ConninfoError(said)) = Conninfo::new("postgresql://u:s3cr3t@h/db?bogus=1").config()
        else {
            panic!("an unknown option is refused");
        };
        assert!(said.contains("unknown option"), "{said}");
        assert!(!said.contains("s3cr3t"), "{said}");
    }

    #[test]
    fn tls_settings_are_taken_out_for_reclaim_and_decoded() {
        let keys = ["sslmode", "sslrootcert"];
        let (text, taken) = take_keys(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Ftmp%2Fmy%20ca.pem&port=1",
            &keys,
        );
        assert_eq!(text, "postgres://u@h/db?port=1");
        assert_eq!(taken[1], ("sslrootcert".into(), "/tmp/my ca.pem".into()));
        let (text, taken) = take_keys("host=h sslmode=require user=u", &keys);
        assert_eq!((text.as_str(), taken.len()), ("host=h user=u", 1));
        let prepared = Conninfo::new("postgres://u@h/db?sslmode=verify-ca").config();
        assert_eq!(
            prepared.map(|p| (p.tls.mode, p.config.get_ssl_mode())),
            Ok((
                super::super::tls::SslMode::VerifyCa,
                postgres::config::SslMode::Require
            ))
        );
    }

    #[test]
    fn a_password_file_line_matches_by_host_port_database_and_user() {
        let file = "# comment\nother:5432:*:bob:no\nh:5432:*:bob:pa\\:ss:x\n*:*:*:*:any\n";
        assert_eq!(
            pgpass_match(file, ["h", "5432", "db", "bob"]).as_deref(),
            Some("pa:ss:x")
        );
        assert_eq!(
            pgpass_match(file, ["z", "1", "db", "eve"]).as_deref(),
            Some("any")
        );
        assert_eq!(
            pgpass_match("h:5432:db:bob\n", ["h", "5432", "db", "bob"]),
            None
        );
    }

    #[test]
    fn a_service_section_gives_its_settings_and_the_driver_never_sees_service() {
        let file = "[other]\nhost=x\n[wh]\n# c\nhost = db.example\nport=6543\nuser=bob\n";
        let settings = service_section(file, "wh").unwrap_or_default();
        assert_eq!(settings.len(), 3);
        assert_eq!(settings[1], ("port".into(), "6543".into()));
        assert_eq!(service_section(file, "nope"), None);
        let service = |text| take_keys(text, &["service"]);
        assert_eq!(
            service("postgres://u@h/db?service=wh&sslmode=disable"),
            (
                "postgres://u@h/db?sslmode=disable".into(),
                vec![("service".into(), "wh".into())]
            )
        );
        assert_eq!(
            service("postgres://?service=wh"),
            ("postgres://".into(), vec![("service".into(), "wh".into())])
        );
        assert_eq!(
            service("service=wh user=u"),
            ("user=u".into(), vec![("service".into(), "wh".into())])
        );
    }
}
