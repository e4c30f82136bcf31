//! TLS to a server, as libpq reads its settings: `sslmode` (`disable`, `allow`, `prefer`,
//! `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file, or `system` for the
//! system's roots), from the connection string or from `PGSSLMODE` and `PGSSLROOTCERT`.
//!
//! As libpq: `prefer` (the default) and `require` encrypt without checking the certificate,
//! unless a root certificate is given or `~/.postgresql/root.crt` exists, when they check its
//! chain as `verify-ca` does; `verify-ca` checks the chain; `verify-full` the chain and that the
//! certificate names the host. Unlike libpq, a `verify-*` with no root certificate at all uses
//! the system's roots where libpq would refuse. `allow` is taken as `prefer`. A self-signed
//! server certificate given as its own root is trusted as OpenSSL trusts it (within its dates,
//! and its names under `verify-full`), though webpki takes no CA's certificate for a server's.
//! The TLS is rustls's (with ring), so no system OpenSSL is needed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// Why the TLS settings cannot be used: one line, for the connection's refusal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(pub String);

impl From<&str> for TlsError {
    fn from(said: &str) -> Self {
        Self(said.to_owned())
    }
}

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// libpq's name for it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Allow => "allow",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// Where the trusted roots come from (`sslrootcert`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// `sslrootcert=system`: the system's store.
    System,
    /// A PEM file of one or more certificates.
    File(PathBuf),
}

impl RootCert {
    /// As `sslrootcert` gives it.
    #[must_use]
    pub fn as_str(&self) -> String {
        match self {
            Self::System => "system".into(),
            Self::File(file) => file.display().to_string(),
        }
    }
}

/// A connection's TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tls {
    pub mode: SslMode,
    /// Given in the string or `PGSSLROOTCERT`; `None` when neither gave one.
    pub rootcert: Option<RootCert>,
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Encrypted, the certificate not checked (`prefer` and `require` without a root).
    Nothing,
    /// Its chain to a trusted root (`verify-ca`).
    Chain,
    /// Its chain, and that it names the host reclaim connected to (`verify-full`).
    ChainAndName,
}

impl Tls {
    /// The settings from the string's values, else libpq's variables, else `prefer`.
    pub fn from_settings(mode: Option<String>, rootcert: Option<String>) -> Result<Self, TlsError> {
        let env = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let mode = match mode.or_else(|| env("PGSSLMODE")).as_deref() {
            None | Some("prefer") => SslMode::Prefer,
            Some("disable") => SslMode::Disable,
            Some("allow") => SslMode::Allow,
            Some("require") => SslMode::Require,
            Some("verify-ca") => SslMode::VerifyCa,
            Some("verify-full") => SslMode::VerifyFull,
            Some(other) => {
                return Err(TlsError(format!(
                    "sslmode={} is not one of disable, allow, prefer, require, verify-ca, verify-full",
                    crate::base::text::escape_controls(other)
                )));
            }
        };
        let rootcert =
            rootcert
                .or_else(|| env("PGSSLROOTCERT"))
                .map(|given| match given.as_str() {
                    "system" => RootCert::System,
                    _ => RootCert::File(PathBuf::from(given)),
                });
        Ok(Self { mode, rootcert })
    }

    /// The driver's own mode: whether it asks for TLS, and whether it may go on without it.
    #[must_use]
    pub fn driver_mode(&self) -> postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Allow | SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                postgres::config::SslMode::Require
            }
        }
    }

    /// The roots to trust and how much to check, as the module's header says.
    fn plan(&self) -> (Check, Option<RootCert>) {
        let default_file = std::env::var_os("HOME")
            .map(|home| Path::new(&home).join(".postgresql/root.crt"))
            .filter(|file| file.exists())
            .map(RootCert::File);
        let roots = self.rootcert.clone().or(default_file);
        match self.mode {
            SslMode::VerifyFull => (Check::ChainAndName, roots.or(Some(RootCert::System))),
            SslMode::VerifyCa => (Check::Chain, roots.or(Some(RootCert::System))),
            _ if roots.is_some() => (Check::Chain, roots),
            _ => (Check::Nothing, None),
        }
    }

    /// `detail` (a driver's failure to connect) with, when a certificate was refused, the roots
    /// it was checked against and the ways to give others.
    #[must_use]
    pub fn explain(&self, detail: String) -> String {
        if !detail.contains("invalid peer certificate") {
            return detail;
        }
        // webpki's name for a CA's certificate presented as the server's, put in words.
        let detail = detail.replace(
            "Other(OtherError(CaUsedAsEndEntity))",
            "the server presents a CA's certificate (a self-signed one?) that the roots do not hold as it is",
        );
        if detail.contains("not valid for name") {
            return format!(
                "{detail} (the chain held: connect by a name the certificate carries, or use \
                 sslmode=verify-ca to check the chain only)"
            );
        }
        let roots = match self.plan().1 {
            Some(RootCert::File(file)) => format!(
                "the certificates in {}",
                crate::base::text::escape_controls(&file.display().to_string())
            ),
            _ => "the system's roots".to_string(),
        };
        format!(
            "{detail} (checked against {roots}: give the server's CA with sslrootcert=FILE, or \
             sslmode=require to encrypt without checking the certificate)"
        )
    }

    /// The driver's TLS connector for these settings, built once per process and setting.
    pub fn connector(&self) -> Result<MakeRustlsConnect, TlsError> {
        static BUILT: Mutex<Vec<(Tls, Arc<ClientConfig>)>> = Mutex::new(Vec::new());
        let mut built = BUILT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, config)) = built.iter().find(|(tls, _)| tls == self) {
            return Ok(MakeRustlsConnect::new((**config).clone()));
        }
        let config = Arc::new(self.client_config()?);
        built.push((self.clone(), Arc::clone(&config)));
        Ok(MakeRustlsConnect::new((*config).clone()))
    }

    fn client_config(&self) -> Result<ClientConfig, TlsError> {
        // ring is deprecated in rustls 0.23.48 for lacking post-quantum key exchange; the
        // other provider (aws-lc-rs) builds a C library with cmake, which a fresh machine
        // lacks. A server's classical key exchange (X25519, P-256) is what libpq gets too.
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError(format!("cannot set up TLS: {e}")))?;
        let (check, roots) = self.plan();
        let verifier: Arc<dyn ServerCertVerifier> = match roots {
            None => Arc::new(Unchecked(provider)),
            Some(roots) => {
                let (store, pinned) = load(&roots)?;
                let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
                    .build()
                    .map_err(|e| TlsError(format!("cannot set up TLS: {e}")))?;
                Arc::new(Roots {
                    webpki,
                    pinned,
                    names: check == Check::ChainAndName,
                })
            }
        };
        Ok(builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth())
    }
}

/// The trusted roots: the system's, or a PEM file's (one line if it cannot be read or holds
/// none), and the file's certificates as they are (a server may present one of them itself).
fn load(roots: &RootCert) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), TlsError> {
    let mut store = RootCertStore::empty();
    let mut pinned = Vec::new();
    match roots {
        RootCert::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(TlsError::from(
                    "no system root certificates found (give one with sslrootcert=FILE)",
                ));
            }
        }
        RootCert::File(file) => {
            let shown = crate::base::text::escape_controls(&file.display().to_string());
            let pem = read_bounded(file, &shown)?;
            let certs = CertificateDer::pem_slice_iter(&pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| TlsError(format!("sslrootcert {shown}: cannot read it: {e}")))?;
            store.add_parsable_certificates(certs.iter().cloned());
            if store.is_empty() {
                return Err(TlsError(format!(
                    "sslrootcert {shown}: no certificate in it (a PEM file is expected)"
                )));
            }
            pinned = certs;
        }
    }
    Ok((store, pinned))
}

/// The most a root certificate file may hold: a CA bundle is a few hundred KB.
const MAX_ROOTS_FILE: u64 = 4 << 20;

/// A root certificate file's bytes: a regular file only (a FIFO, a device or a folder would
/// block, never end or mean nothing), at most `MAX_ROOTS_FILE`.
/// `shown` is the file's name as the refusal prints it.
fn read_bounded(file: &Path, shown: &str) -> Result<Vec<u8>, TlsError> {
    use std::io::Read as _;
    let refused = |why: &dyn std::fmt::Display| {
        TlsError(format!("sslrootcert {shown}: cannot read it: {why}"))
    };
    let meta = std::fs::metadata(file).map_err(|e| refused(&e))?;
    if !meta.is_file() {
        return Err(refused(&"not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_ROOTS_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| refused(&e))?;
    if bytes.len() as u64 > MAX_ROOTS_FILE {
        return Err(refused(&format!(
            "larger than {} MiB",
            MAX_ROOTS_FILE >> 20
        )));
    }
    Ok(bytes)
}

/// `prefer` and `require` with no root: encrypted, the certificate taken as it is (the
/// handshake's signatures are still checked).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca` and `verify-full` against given roots: the chain checked, and the host's name
/// too under `verify-full`. A server certificate the root file holds itself (a self-signed
/// one given as its own root, as PostgreSQL's docs make one) is trusted as it stands, as libpq
/// (OpenSSL) trusts it: within its dates, and naming the host under `verify-full`.
#[derive(Debug)]
struct Roots {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    /// `verify-full`: the certificate must name the host.
    names: bool,
}

impl Roots {
    /// The checks left for a certificate the root file holds: its dates, and its names.
    fn pinned_holds(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use x509_cert::der::Decode as _;
        let cert = x509_cert::Certificate::from_der(end_entity.as_ref())
            .map_err(|_| rustls::Error::InvalidCertificate(CertificateError::BadEncoding))?;
        let validity = cert.tbs_certificate.validity;
        let now = Duration::from_secs(now.as_secs());
        if now < validity.not_before.to_unix_duration() {
            return Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidYet,
            ));
        }
        if now > validity.not_after.to_unix_duration() {
            return Err(rustls::Error::InvalidCertificate(CertificateError::Expired));
        }
        if self.names {
            let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }
}

impl ServerCertVerifier for Roots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|root| root.as_ref() == end_entity.as_ref())
        {
            return self.pinned_holds(end_entity, server_name, now);
        }
        // The chain is checked before the name, so a name error means the chain held.
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpq_modes_are_read_and_a_wrong_one_is_refused() {
        let tls = |mode: &str| Tls::from_settings(Some(mode.into()), None);
        assert_eq!(tls("verify-full").map(|t| t.mode), Ok(SslMode::VerifyFull));
        assert_eq!(
            tls("require").map(|t| t.driver_mode()),
            Ok(postgres::config::SslMode::Require)
        );
        assert_eq!(
            tls("allow").map(|t| t.driver_mode()),
            Ok(postgres::config::SslMode::Prefer)
        );
        let Err(TlsError(said)) = tls("verify_full") else {
            panic!("a mode libpq does not know is refused");
        };
        assert!(
            said.starts_with("sslmode=verify_full is not one of"),
            "{said}"
        );
        let system = Tls::from_settings(Some("verify-ca".into()), Some("system".into()));
        assert_eq!(system.map(|t| t.rootcert), Ok(Some(RootCert::System)));
    }

    #[test]
    fn what_is_checked_follows_the_mode_and_a_given_root() {
        let file = Some(RootCert::File("/nonexistent/ca.pem".into()));
        let plan = |mode, rootcert| Tls { mode, rootcert }.plan().0;
        assert_eq!(plan(SslMode::VerifyFull, None), Check::ChainAndName);
        assert_eq!(plan(SslMode::VerifyCa, None), Check::Chain);
        assert_eq!(plan(SslMode::Require, file.clone()), Check::Chain);
        assert_eq!(plan(SslMode::Prefer, file), Check::Chain);
    }

    #[test]
    fn an_unreadable_root_file_is_one_line_naming_it() {
        let tls = Tls {
            mode: SslMode::VerifyFull,
            rootcert: Some(RootCert::File("/nonexistent/ca.pem".into())),
        };
        let Err(TlsError(said)) = tls.connector() else {
            panic!("a missing root file is refused");
        };
        assert!(
            said.starts_with("sslrootcert /nonexistent/ca.pem: cannot read it"),
            "{said}"
        );
        // A folder or a device is never read: it would mean nothing, or never end.
        for path in ["/", "/dev/zero"] {
            assert_eq!(
                read_bounded(Path::new(path), path),
                Err(TlsError(format!(
                    "sslrootcert {path}: cannot read it: not a regular file"
                )))
            );
        }
    }

    /// A self-signed server certificate given as its own root (a CA's, as `openssl req -x509`
    /// makes one, for `localhost`, valid 2020 to 2030): trusted within its dates, and under
    /// `verify-full` only for the name it carries; one the roots do not hold goes to the chain.
    #[test]
    fn a_self_signed_certificate_given_as_its_root_is_trusted_within_its_dates_and_names() {
        let pem = include_bytes!("../../../tests/fixtures/tls/self-signed-2020-2030.pem");
        let cert = CertificateDer::from_pem_slice(pem).unwrap_or_else(|e| panic!("{e}"));
        let (store, pinned) = {
            let mut store = RootCertStore::empty();
            store.add_parsable_certificates([cert.clone()]);
            (store, vec![cert.clone()])
        };
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let roots = |names: bool, pinned: Vec<CertificateDer<'static>>| Roots {
            webpki: Arc::clone(&webpki),
            pinned,
            names,
        };
        let year =
            |y: u64| UnixTime::since_unix_epoch(Duration::from_secs((y - 1970) * 31_557_600));
        let name = |n: &'static str| ServerName::try_from(n).unwrap_or_else(|e| panic!("{e}"));
        let verify =
            |roots: &Roots, host, now| roots.verify_server_cert(&cert, &[], &name(host), &[], now);
        let full = roots(true, pinned.clone());
        assert!(verify(&full, "localhost", year(2026)).is_ok());
        let refused = |result: Result<ServerCertVerified, rustls::Error>| match result {
            Err(rustls::Error::InvalidCertificate(why)) => why,
            other => panic!("not refused: {other:?}"),
        };
        assert_eq!(
            refused(verify(&full, "localhost", year(2019))),
            CertificateError::NotValidYet
        );
        assert_eq!(
            refused(verify(&full, "localhost", year(2031))),
            CertificateError::Expired
        );
        assert!(matches!(
            refused(verify(&full, "db.example", year(2026))),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        ));
        // verify-ca: the name is not checked, the dates are.
        let chain = roots(false, pinned);
        assert!(verify(&chain, "db.example", year(2026)).is_ok());
        assert_eq!(
            refused(verify(&chain, "db.example", year(2031))),
            CertificateError::Expired
        );
        // Not held as it is: webpki's chain check, which takes no CA for a server.
        let said = format!(
            "{:?}",
            refused(verify(&roots(true, Vec::new()), "localhost", year(2026)))
        );
        assert!(said.contains("CaUsedAsEndEntity"), "{said}");
    }
}
