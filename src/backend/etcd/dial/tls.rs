//! rustls for etcd: the client config built from the source's TLS settings, and a TLS
//! failure told in words (which certificate, which file, what to change).

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore,
    SignatureScheme,
};

use crate::config::EtcdSource;

/// What a TLS connection to one member needs, and what its messages name.
pub(super) struct Tls {
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
    files: Files,
}

/// The files a TLS failure message points at.
#[derive(Default)]
struct Files {
    cacert: Option<String>,
    cert: Option<String>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The system's CA store, read once: without --cacert the members are checked against it,
/// as etcdctl does.
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

impl Tls {
    /// Reads the files now (a renewed certificate is picked up on the next connect). The
    /// errors name the file, never its contents.
    pub(super) fn new(cfg: &EtcdSource, host: &str) -> Result<Tls, String> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|_| format!("`{host}` is neither a host name nor an IP address"))?;
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if cfg.insecure_skip_tls_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAny(provider())))
        } else {
            let roots = match &cfg.cacert {
                Some(path) => {
                    let mut roots = RootCertStore::empty();
                    for ca in crate::pem::certificates("--cacert", path)? {
                        roots.add(ca).map_err(|e| {
                            format!(
                                "--cacert {}: not a usable CA certificate: {e}",
                                path.display()
                            )
                        })?;
                    }
                    Arc::new(roots)
                }
                None => system_roots(),
            };
            builder.with_root_certificates(roots)
        };
        let mut config = match (&cfg.cert, &cfg.key) {
            (Some(cert), Some(key)) => {
                let chain = crate::pem::certificates("--cert", cert)?;
                let key_der = crate::pem::private_key("--key", key)?;
                builder
                    .with_client_auth_cert(chain, key_der)
                    .map_err(|e| identity_problem(&e, cfg))?
            }
            _ => builder.with_no_client_auth(),
        };
        // etcd serves gRPC over HTTP/2 only, and says so through ALPN.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Tls {
            config: Arc::new(config),
            name,
            files: Files {
                cacert: cfg.cacert.as_ref().map(|p| p.display().to_string()),
                cert: cfg.cert.as_ref().map(|p| p.display().to_string()),
            },
        })
    }

    pub(super) fn describe(&self, e: &rustls::Error, host: &str) -> String {
        self.files.describe(e, host)
    }
}

impl Files {
    /// A failed handshake (or the alert that ended one) in words: what is wrong and which
    /// setting to change. `host` is the name the certificate was checked against.
    fn describe(&self, e: &rustls::Error, host: &str) -> String {
        use rustls::Error as E;
        match e {
            E::InvalidCertificate(c) => self.certificate_problem(c, host),
            E::AlertReceived(a) => self.alert_problem(*a),
            E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
                "TLS: the server does not answer in TLS: if it is plain text, write http:// \
                 and drop the TLS settings"
                    .to_string()
            }
            E::PeerIncompatible(why) => {
                format!("TLS: no TLS version or cipher in common with the server ({why:?})")
            }
            other => format!("TLS: {other}"),
        }
    }

    fn certificate_problem(&self, c: &CertificateError, host: &str) -> String {
        use CertificateError as C;
        match c {
            C::UnknownIssuer => match &self.cacert {
                Some(ca) => format!(
                    "TLS: the server's certificate is not signed by the CA in --cacert {ca} (unknown issuer)"
                ),
                None => "TLS: the server's certificate is not signed by a CA this system trusts: \
                         give its CA with --cacert (unknown issuer)"
                    .to_string(),
            },
            C::NotValidForNameContext { presented, .. } => {
                let names: Vec<String> = presented.iter().filter_map(|n| plain_name(n)).collect();
                if names.is_empty() {
                    format!(
                        "TLS: the certificate names no host or address, and {host} was asked for"
                    )
                } else {
                    format!(
                        "TLS: the certificate is for {}, not {host}",
                        names.join(", ")
                    )
                }
            }
            C::NotValidForName => format!("TLS: the certificate is not for {host}"),
            C::ExpiredContext { not_after, .. } => format!(
                "TLS: the server's certificate expired on {}",
                utc(*not_after)
            ),
            C::Expired => "TLS: the server's certificate has expired".to_string(),
            C::NotValidYetContext { not_before, .. } => format!(
                "TLS: the server's certificate is not valid before {}: check this machine's clock",
                utc(*not_before)
            ),
            C::NotValidYet => "TLS: the server's certificate is not valid yet".to_string(),
            C::BadSignature => "TLS: the server's certificate has a bad signature".to_string(),
            other => format!("TLS: the server's certificate is refused: {other}"),
        }
    }

    fn alert_problem(&self, a: AlertDescription) -> String {
        use AlertDescription as A;
        match (&self.cert, a) {
            (None, A::CertificateRequired | A::HandshakeFailure | A::BadCertificate) => {
                "TLS: the server requires a client certificate: give --cert and --key".to_string()
            }
            (
                Some(cert),
                A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::CertificateExpired,
            ) => format!(
                "TLS: the server refused the client certificate --cert {cert} ({a:?}): is it \
                 signed by a CA the server trusts (etcd's --trusted-ca-file), and still valid?"
            ),
            (_, a) => format!("TLS: the server ended the handshake ({a:?})"),
        }
    }
}

fn identity_problem(e: &rustls::Error, cfg: &EtcdSource) -> String {
    let key = cfg.key.as_ref().map(|p| p.display().to_string());
    let cert = cfg.cert.as_ref().map(|p| p.display().to_string());
    match e {
        rustls::Error::InconsistentKeys(_) => format!(
            "--key {} is not the private key of --cert {}",
            key.unwrap_or_default(),
            cert.unwrap_or_default()
        ),
        // rustls's text here says what kind of key failed, never the key.
        other => format!("--key {}: {other}", key.unwrap_or_default()),
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

/// `--insecure-skip-tls-verify`: any certificate is accepted, but the handshake signatures
/// are still checked, so the connection is at least with the holder of that certificate.
#[derive(Debug)]
pub(super) struct AcceptAny(pub Arc<CryptoProvider>);

impl AcceptAny {
    fn algorithms(&self) -> &WebPkiSupportedAlgorithms {
        &self.0.signature_verification_algorithms
    }
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, self.algorithms())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, self.algorithms())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms().supported_schemes()
    }
}

/// Whether a TLS server answers at `host:port`: asked after a plain-text attempt failed, so
/// the error can say "use https://" instead of a bare "connection closed".
pub(super) async fn speaks_tls(host: &str, port: u16, within: std::time::Duration) -> bool {
    let Ok(name) = ServerName::try_from(host.to_string()) else {
        return false;
    };
    let mut config = match ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
    {
        Ok(b) => b
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider())))
            .with_no_client_auth(),
        Err(_) => return false,
    };
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let probe = async {
        let tcp = tokio::net::TcpStream::connect((host, port)).await?;
        connector.connect(name, tcp).await
    };
    match tokio::time::timeout(within, probe).await {
        Ok(Ok(_)) => true,
        // The server ended the handshake with an alert: that is TLS too.
        Ok(Err(e)) => matches!(
            e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
            Some(rustls::Error::AlertReceived(_))
        ),
        Err(_) => false,
    }
}

/// Whether a plain-text HTTP/2 server answers at `host:port`: asked after a TLS handshake
/// was cut short, so the error can say "use http://". Sends the client preface and an
/// empty SETTINGS frame; an HTTP/2 server answers with its own SETTINGS frame.
pub(super) async fn speaks_plain_http2(host: &str, port: u16, within: std::time::Duration) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    const SETTINGS: u8 = 0x4;
    let probe = async {
        let mut tcp = tokio::net::TcpStream::connect((host, port)).await?;
        tcp.write_all(PREFACE).await?;
        let mut header = [0u8; 9];
        tcp.read_exact(&mut header).await?;
        Ok::<_, std::io::Error>(header[3] == SETTINGS)
    };
    matches!(tokio::time::timeout(within, probe).await, Ok(Ok(true)))
}

/// What a server that is not HTTP/2 answered the client preface with (its first line,
/// cut short), asked after a plain-text connect failed below gRPC: `None` when it answered
/// as HTTP/2, or said nothing (closed, or no answer in time), which proves nothing.
pub(super) async fn not_http2(
    host: &str,
    port: u16,
    within: std::time::Duration,
) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
    const SETTINGS: u8 = 0x4;
    let probe = async {
        let mut tcp = tokio::net::TcpStream::connect((host, port)).await?;
        tcp.write_all(PREFACE).await?;
        let mut answer = Vec::new();
        let mut buf = [0u8; 256];
        // A frame header is 9 bytes; whatever else comes first is no HTTP/2.
        while answer.len() < 9 {
            match tcp.read(&mut buf).await? {
                0 => break,
                n => answer.extend_from_slice(&buf[..n]),
            }
        }
        Ok::<_, std::io::Error>(answer)
    };
    let answer = match tokio::time::timeout(within, probe).await {
        Ok(Ok(answer)) if !answer.is_empty() => answer,
        _ => return None,
    };
    if answer.len() >= 9 && answer[3] == SETTINGS {
        return None;
    }
    let first = answer.split(|&b| b == b'\n').next().unwrap_or_default();
    let first = String::from_utf8_lossy(first);
    let shown: String = first.trim_end().chars().take(40).collect();
    let more = if first.trim_end().chars().count() > 40 {
        "…"
    } else {
        ""
    };
    Some(format!(
        "{}{more}",
        crate::model::escape_bytes(shown.as_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expired() -> rustls::Error {
        let at = |s| UnixTime::since_unix_epoch(std::time::Duration::from_secs(s));
        rustls::Error::InvalidCertificate(CertificateError::ExpiredContext {
            time: at(1_800_000_000),
            not_after: at(1_577_923_200),
        })
    }

    /// A server answering `answer` to the preface (then closing), on a loopback port.
    async fn answering(answer: &'static [u8]) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut preface = [0u8; 24];
            let _ = s.read_exact(&mut preface).await;
            let _ = s.write_all(answer).await;
        });
        port
    }

    #[tokio::test]
    async fn only_an_answer_that_is_no_http2_is_taken_for_another_server() {
        let within = std::time::Duration::from_secs(5);
        let port = answering(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
        assert_eq!(
            not_http2("127.0.0.1", port, within).await.as_deref(),
            Some("HTTP/1.1 400 Bad Request")
        );
        // An HTTP/2 server's SETTINGS frame.
        let port = answering(b"\0\0\0\x04\0\0\0\0\0").await;
        assert_eq!(not_http2("127.0.0.1", port, within).await, None);
        // Closed without a word (a proxy whose upstream is gone): proves nothing.
        let port = answering(b"").await;
        assert_eq!(not_http2("127.0.0.1", port, within).await, None);
    }

    #[test]
    fn each_failure_says_which_in_words() {
        let with_ca = Files {
            cacert: Some("/pki/ca.pem".into()),
            cert: None,
        };
        let unknown = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert_eq!(
            with_ca.describe(&unknown, "h"),
            "TLS: the server's certificate is not signed by the CA in --cacert /pki/ca.pem (unknown issuer)"
        );
        assert!(
            Files::default()
                .describe(&unknown, "h")
                .contains("a CA this system trusts")
        );
        let name = rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("127.0.0.1").expect("ip"),
            presented: vec!["DnsName(\"etcd.example\")".into(), "DirectoryName".into()],
        });
        assert_eq!(
            with_ca.describe(&name, "127.0.0.1"),
            "TLS: the certificate is for etcd.example, not 127.0.0.1"
        );
        assert_eq!(
            with_ca.describe(&expired(), "h"),
            "TLS: the server's certificate expired on 2020-01-02 00:00:00 UTC"
        );
        let required = rustls::Error::AlertReceived(AlertDescription::CertificateRequired);
        assert!(
            with_ca
                .describe(&required, "h")
                .contains("give --cert and --key")
        );
        let with_cert = Files {
            cacert: None,
            cert: Some("/pki/me.pem".into()),
        };
        let bad = rustls::Error::AlertReceived(AlertDescription::BadCertificate);
        assert!(
            with_cert
                .describe(&bad, "h")
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
            utc(UnixTime::since_unix_epoch(std::time::Duration::from_secs(
                0
            ))),
            "1970-01-01 00:00:00 UTC"
        );
    }
}
