//! What TLS means to every store electop dials itself (etcd, Redis, ZooKeeper's own
//! handshakes): the rustls client config built from the certificate files a source names,
//! a failed handshake told in words naming the setting to change, and the probe that says
//! whether a port speaks TLS at all. Each store only says how its settings are spelt and
//! what its server calls them. Nothing read from a key file reaches a message.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};

/// A source's certificate files, each with the flag that names it in messages.
pub(crate) struct Files<'a> {
    pub ca: (&'static str, Option<&'a Path>),
    pub cert: (&'static str, Option<&'a Path>),
    pub key: (&'static str, Option<&'a Path>),
}

impl<'a> Files<'a> {
    /// The files at `paths` (CA, certificate, key), named by `flags` in messages.
    pub(crate) fn new(flags: [&'static str; 3], paths: [Option<&'a Path>; 3]) -> Files<'a> {
        let ([ca, cert, key], [ca_at, cert_at, key_at]) = (flags, paths);
        Files {
            ca: (ca, ca_at),
            cert: (cert, cert_at),
            key: (key, key_at),
        }
    }
}

/// Whom a server is checked against when no CA file is given.
#[derive(Clone, Copy)]
pub(crate) enum Trust {
    /// The system's CA store, as etcdctl and redis-cli do.
    System,
    /// Any certificate (`--insecure-skip-tls-verify`); the handshake's signatures are still
    /// checked, so the connection is at least with that certificate's holder.
    Anyone,
}

/// The rustls config for `files`, the files read now (a renewed certificate is picked up
/// at the next connect). The errors name the file, never what it holds.
pub(crate) fn client_config(files: &Files, trust: Trust) -> Result<ClientConfig, String> {
    let builder = ClientConfig::builder_with_provider(crate::crypto::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match (files.ca, trust) {
        ((flag, Some(path)), _) => {
            let mut roots = RootCertStore::empty();
            for ca in crate::pem::certificates(flag, path)? {
                roots.add(ca).map_err(|e| {
                    format!(
                        "{flag} {}: not a usable CA certificate: {e}",
                        path.display()
                    )
                })?;
            }
            builder.with_root_certificates(roots)
        }
        ((_, None), Trust::System) => builder.with_root_certificates(system_roots()),
        ((_, None), Trust::Anyone) => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny)),
    };
    match (files.cert, files.key) {
        ((cert_flag, Some(cert)), (key_flag, Some(key))) => {
            let chain = crate::pem::certificates(cert_flag, cert)?;
            let der = crate::pem::private_key(key_flag, key)?;
            builder
                .with_client_auth_cert(chain, der)
                .map_err(|e| match e {
                    rustls::Error::InconsistentKeys(_) => format!(
                        "{key_flag} {} is not the private key of {cert_flag} {}",
                        key.display(),
                        cert.display()
                    ),
                    // rustls's text here says what kind of key failed, never the key.
                    other => format!("{key_flag} {}: {other}", key.display()),
                })
        }
        _ => Ok(builder.with_no_client_auth()),
    }
}

/// The system's CA store, read once.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            Arc::new(roots)
        })
        .clone()
}

/// The name a server's certificate must hold.
pub(crate) fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string())
        .map_err(|_| format!("`{host}` is neither a host name nor an IP address"))
}

/// How a store's settings and its server's are called, for the messages.
pub(crate) struct Words<'a> {
    /// Before every message: which server (`redis 127.0.0.1:6380: `), or empty where the
    /// caller says it.
    pub lead: String,
    pub files: &'a Files<'a>,
    /// The server's setting holding its certificate (`tls-cert-file`).
    pub server_cert: &'static str,
    /// The server's setting holding the CAs it trusts for clients (`tls-ca-cert-file`).
    pub server_ca: &'static str,
    /// The server's setting that asks for a client certificate (` (tls-auth-clients
    /// yes)`), or empty.
    pub client_auth: &'static str,
    /// What to do when the answer is no TLS record (a plain port).
    pub not_tls: &'static str,
}

/// A failed handshake (or the alert that ended one) in words: what is wrong and which
/// setting to change. `host` is the name the certificate was checked against.
pub(crate) fn describe(e: &rustls::Error, host: &str, w: &Words) -> String {
    use rustls::Error as E;
    let why = match e {
        E::InvalidCertificate(c) => certificate_problem(c, host, w),
        E::AlertReceived(a) => alert_problem(*a, w),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => w.not_tls.to_string(),
        E::PeerIncompatible(why) => {
            format!("no TLS version or cipher in common with the server ({why:?})")
        }
        other => other.to_string(),
    };
    format!("{}TLS: {why}", w.lead)
}

fn certificate_problem(c: &CertificateError, host: &str, w: &Words) -> String {
    use CertificateError as C;
    let (ca_flag, ca) = w.files.ca;
    match c {
        C::UnknownIssuer | C::BadSignature => {
            let by = match ca {
                Some(ca) => format!("the CA in {ca_flag} {}", ca.display()),
                None => "a CA this system trusts".to_string(),
            };
            format!(
                "certificate not trusted: the server's certificate is not signed by {by} \
                 (unknown issuer); give {ca_flag} FILE, the CA that signs its {}",
                w.server_cert
            )
        }
        C::NotValidForNameContext { presented, .. } => {
            let names: Vec<String> = presented.iter().filter_map(|n| plain_name(n)).collect();
            if names.is_empty() {
                format!("the certificate names no host or address, and {host} was asked for")
            } else {
                format!(
                    "the certificate is for {}, not {host}; connect by a name or address it lists",
                    names.join(", ")
                )
            }
        }
        C::NotValidForName => format!("the certificate is not for {host}"),
        C::ExpiredContext { not_after, .. } => {
            format!("the server's certificate expired on {}", utc(*not_after))
        }
        C::Expired => "the server's certificate has expired".to_string(),
        C::NotValidYetContext { not_before, .. } => format!(
            "the server's certificate is not valid before {}: check this machine's clock",
            utc(*not_before)
        ),
        C::NotValidYet => "the server's certificate is not valid yet".to_string(),
        other => format!("the server's certificate is refused: {other}"),
    }
}

fn alert_problem(a: AlertDescription, w: &Words) -> String {
    use AlertDescription as A;
    let (cert_flag, cert) = w.files.cert;
    match (cert, a) {
        (None, A::CertificateRequired | A::HandshakeFailure | A::BadCertificate) => format!(
            "the server requires a client certificate{}: give {cert_flag} and {}",
            w.client_auth, w.files.key.0
        ),
        (
            Some(cert),
            A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::CertificateExpired,
        ) => format!(
            "the server refused the client certificate {cert_flag} {} ({a:?}): is it signed by \
             a CA in the server's {}, and still valid?",
            cert.display(),
            w.server_ca
        ),
        (_, a) => format!("the server ended the handshake ({a:?})"),
    }
}

/// webpki reports names as `DnsName("x")` / `IpAddress(1.2.3.4)`; the user wants `x`.
fn plain_name(debug: &str) -> Option<String> {
    if let Some(rest) = debug.strip_prefix("DnsName(\"") {
        return Some(rest.trim_end_matches("\")").to_string());
    }
    if let Some(rest) = debug.strip_prefix("IpAddress(") {
        return Some(rest.trim_end_matches(')').to_string());
    }
    None
}

fn utc(t: UnixTime) -> String {
    let format =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second] UTC");
    i64::try_from(t.as_secs())
        .ok()
        .and_then(|s| time::OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|d| d.format(&format).ok())
        .unwrap_or_else(|| format!("{} s after 1970", t.as_secs()))
}

/// The rustls error inside an I/O error from a handshake or a read over TLS.
pub(crate) fn inner(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>())
}

/// Whether a TLS server answers at `addr` (`host` is its name): it sends a certificate
/// (which an empty trust store refuses) or ends the hello with an alert. Asked after a
/// plain-text attempt failed, so the error can say "use TLS" instead of "connection closed".
pub(crate) async fn speaks_tls(
    addr: impl tokio::net::ToSocketAddrs,
    host: &str,
    within: Duration,
) -> bool {
    let Ok(name) = ServerName::try_from(host.to_string()) else {
        return false;
    };
    let Ok(builder) = ClientConfig::builder_with_provider(crate::crypto::provider())
        .with_safe_default_protocol_versions()
    else {
        return false;
    };
    let config = builder
        .with_root_certificates(RootCertStore::empty())
        .with_no_client_auth();
    let probe = async {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
    };
    match tokio::time::timeout(within, probe).await {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => matches!(
            inner(&e),
            Some(rustls::Error::InvalidCertificate(_) | rustls::Error::AlertReceived(_))
        ),
        Err(_) => false,
    }
}

/// `Trust::Anyone`'s verifier: any certificate, but the handshake signatures checked.
#[derive(Debug)]
struct AcceptAny;

fn algorithms() -> &'static WebPkiSupportedAlgorithms {
    static ALGS: OnceLock<WebPkiSupportedAlgorithms> = OnceLock::new();
    ALGS.get_or_init(|| crate::crypto::provider().signature_verification_algorithms)
}

impl ServerCertVerifier for AcceptAny {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        algorithms().supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words<'a>(files: &'a Files<'a>) -> Words<'a> {
        Words {
            lead: String::new(),
            files,
            server_cert: "--cert-file",
            server_ca: "--trusted-ca-file",
            client_auth: "",
            not_tls: "plain",
        }
    }

    #[test]
    fn each_failure_says_which_in_words() {
        let ca = Path::new("/pki/ca.pem");
        let with_ca = Files {
            ca: ("--cacert", Some(ca)),
            cert: ("--cert", None),
            key: ("--key", None),
        };
        let w = words(&with_ca);
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert_eq!(
            describe(&unknown, "h", &w),
            "TLS: certificate not trusted: the server's certificate is not signed by the CA in \
             --cacert /pki/ca.pem (unknown issuer); give --cacert FILE, the CA that signs its \
             --cert-file"
        );
        let system = Files {
            ca: ("--cacert", None),
            ..with_ca
        };
        assert!(describe(&unknown, "h", &words(&system)).contains("a CA this system trusts"));
        let name = rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("127.0.0.1").expect("ip"),
            presented: vec!["DnsName(\"etcd.example\")".into(), "DirectoryName".into()],
        });
        assert!(
            describe(&name, "127.0.0.1", &w)
                .starts_with("TLS: the certificate is for etcd.example, not 127.0.0.1")
        );
        let at = |s| UnixTime::since_unix_epoch(Duration::from_secs(s));
        let expired = rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
            time: at(1_800_000_000),
            not_after: at(1_577_923_200),
        });
        assert_eq!(
            describe(&expired, "h", &w),
            "TLS: the server's certificate expired on 2020-01-02 00:00:00 UTC"
        );
        let required = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        assert!(describe(&required, "h", &w).contains("give --cert and --key"));
        let me = Path::new("/pki/me.pem");
        let with_cert = Files {
            ca: ("--cacert", None),
            cert: ("--cert", Some(me)),
            key: ("--key", None),
        };
        let bad = rustls::Error::AlertReceived(AlertDescription::BadCertificate);
        assert!(
            describe(&bad, "h", &words(&with_cert))
                .contains("refused the client certificate --cert /pki/me.pem")
        );
    }

    #[test]
    fn names_and_times_read_as_words() {
        assert_eq!(
            plain_name("DnsName(\"etcd.example\")").as_deref(),
            Some("etcd.example")
        );
        assert_eq!(
            plain_name("IpAddress(127.0.0.1)").as_deref(),
            Some("127.0.0.1")
        );
        assert_eq!(plain_name("DirectoryName"), None);
        assert_eq!(
            utc(UnixTime::since_unix_epoch(Duration::from_secs(0))),
            "1970-01-01 00:00:00 UTC"
        );
    }
}
