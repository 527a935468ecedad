//! TLS to ZooKeeper's `secureClientPort`: the options the ZooKeeper client is given, the
//! same settings as a rustls config for electop's own handshakes (the four-letter words and
//! the diagnosis), and a failed connect told in words. The client says only "connection
//! loss" whatever went wrong in its handshake, so when a connect fails electop makes the
//! handshake itself and says what it found: an untrusted certificate, a member that does
//! not speak TLS, or one that speaks only TLS.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use zookeeper_client::TlsOptions;

use super::error::ZkError;
use crate::config::ZkSource;

/// The ZooKeeper client's TLS options, from the files read now (a renewed certificate is
/// picked up at the next connect); `None` without TLS. Errors name the file, never what a
/// key file holds.
pub(super) fn options(cfg: &ZkSource) -> Result<Option<TlsOptions>, ZkError> {
    let Some(ca) = &cfg.cacert else {
        return Ok(None);
    };
    // The client builds its rustls config with the process's default provider.
    crate::crypto::install_default_provider();
    let read = |flag: &str, p: &std::path::Path| {
        std::fs::read_to_string(p)
            .map_err(|e| ZkError::Credentials(format!("{flag} {}: cannot read: {e}", p.display())))
    };
    let mut o = TlsOptions::new()
        .with_pem_ca(&read("--zk-cacert", ca)?)
        .map_err(|_| {
            ZkError::Credentials(format!(
                "--zk-cacert {}: no CA certificate in it",
                ca.display()
            ))
        })?;
    if let (Some(cert), Some(key)) = (&cfg.cert, &cfg.key) {
        o = o
            .with_pem_identity(&read("--zk-cert", cert)?, &read("--zk-key", key)?)
            .map_err(|_| {
                ZkError::Credentials(format!(
                    "--zk-cert {} / --zk-key {}: not a usable certificate and key",
                    cert.display(),
                    key.display()
                ))
            })?;
    }
    Ok(Some(o))
}

/// The same settings as a rustls config, for electop's own handshakes with the members.
pub(crate) fn client_config(cfg: &ZkSource) -> Result<Option<Arc<ClientConfig>>, String> {
    let Some(ca) = &cfg.cacert else {
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for c in crate::pem::certificates("--zk-cacert", ca)? {
        roots.add(c).map_err(|e| {
            format!(
                "--zk-cacert {}: not a usable CA certificate: {e}",
                ca.display()
            )
        })?;
    }
    let builder = ClientConfig::builder_with_provider(crate::crypto::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots);
    let config = match (&cfg.cert, &cfg.key) {
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(
                crate::pem::certificates("--zk-cert", cert)?,
                crate::pem::private_key("--zk-key", key)?,
            )
            .map_err(|_| {
                format!(
                    "--zk-key {} is not a usable key for --zk-cert {}",
                    key.display(),
                    cert.display()
                )
            })?,
        _ => builder.with_no_client_auth(),
    };
    Ok(Some(Arc::new(config)))
}

/// Why connecting to the members failed, when a handshake of electop's own finds out: with
/// TLS settings, the first member whose TLS handshake fails; without, the first member that
/// speaks TLS. `None`: nothing found (the client's own error stands).
pub(super) async fn diagnose(cfg: &ZkSource, within: Duration) -> Option<ZkError> {
    let config = match client_config(cfg) {
        Ok(c) => c,
        Err(e) => return Some(ZkError::Credentials(e)),
    };
    for ep in &cfg.endpoints {
        let said = match &config {
            Some(c) => tls_fails(cfg, c.clone(), ep, within).await,
            None => speaks_tls(ep, within).await.then(|| {
                format!(
                    "ZooKeeper at {ep} speaks TLS (a secureClientPort), and electop was given no \
                     TLS settings: give --zk-cacert FILE (the CA that signs its certificate), or \
                     connect to its plain clientPort"
                )
            }),
        };
        if let Some(text) = said {
            return Some(ZkError::Tls(text));
        }
    }
    None
}

/// What went wrong in a TLS handshake with `ep`, in words; `None` when it succeeds or the
/// member cannot be reached at all (that is not TLS's doing).
async fn tls_fails(
    cfg: &ZkSource,
    config: Arc<ClientConfig>,
    ep: &str,
    within: Duration,
) -> Option<String> {
    let (host, _) = ep.rsplit_once(':')?;
    let name = ServerName::try_from(host.to_string()).ok()?;
    let tcp = tokio::time::timeout(within, tokio::net::TcpStream::connect(ep))
        .await
        .ok()?
        .ok()?;
    let hs = tokio_rustls::TlsConnector::from(config).connect(name, tcp);
    let err = match tokio::time::timeout(within, hs).await {
        Ok(Ok(_)) => return None,
        Ok(Err(e)) => e,
        // A frozen or overloaded member: not TLS's doing, and not lasting.
        Err(_) => return None,
    };
    let tls = err
        .get_ref()
        .and_then(|i| i.downcast_ref::<rustls::Error>());
    Some(match tls {
        Some(e) => describe(cfg, e, ep, host),
        // A reset or the like may be a member restarting; closed at the hello is a plain
        // port (ZooKeeper reads the hello as a length far too large and hangs up).
        None if err.kind() != std::io::ErrorKind::UnexpectedEof => return None,
        None => format!(
            "ZooKeeper at {ep} did not speak TLS: it closed the connection at the TLS handshake \
             ({err}). Is {ep} ZooKeeper's plain clientPort? With --zk-cacert give its \
             secureClientPort; for the plain port leave the --zk-cacert/--zk-cert/--zk-key out"
        ),
    })
}

/// A rustls failure with `ep` in words: what is wrong and which setting to change.
fn describe(cfg: &ZkSource, e: &rustls::Error, ep: &str, host: &str) -> String {
    use rustls::Error as E;
    let ca = cfg
        .cacert
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    match e {
        E::InvalidCertificate(CertificateError::UnknownIssuer | CertificateError::BadSignature) => {
            format!(
                "certificate not trusted: ZooKeeper at {ep} presented a certificate not signed by \
                 the CA in --zk-cacert {ca} (unknown issuer); give the CA that signs its \
                 ssl.keyStore"
            )
        }
        E::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => format!(
            "ZooKeeper at {ep}: its certificate is not for {host} (no matching subjectAltName); \
             connect by a name or address the certificate lists"
        ),
        E::InvalidCertificate(c) => format!("ZooKeeper at {ep}: its certificate is refused: {c}"),
        E::AlertReceived(a) => match (&cfg.cert, a) {
            (
                None,
                AlertDescription::CertificateRequired
                | AlertDescription::BadCertificate
                | AlertDescription::HandshakeFailure,
            ) => format!(
                "ZooKeeper at {ep} requires a client certificate (ssl.clientAuth=need): give \
                 --zk-cert and --zk-key"
            ),
            (Some(cert), _) => format!(
                "ZooKeeper at {ep} refused the client certificate --zk-cert {} ({a:?}): is it \
                 signed by a CA in ZooKeeper's ssl.trustStore, and still valid?",
                cert.display()
            ),
            (None, _) => format!("ZooKeeper at {ep} ended the TLS handshake ({a:?})"),
        },
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => format!(
            "ZooKeeper at {ep} did not speak TLS (its answer is not a TLS record): is it the \
             plain clientPort? With --zk-cacert give its secureClientPort"
        ),
        other => format!("ZooKeeper at {ep}: TLS: {other}"),
    }
}

/// Whether `ep` answers a TLS handshake: it sends a certificate (which an empty trust store
/// refuses) or a TLS alert. Asked after a plain connect failed.
async fn speaks_tls(ep: &str, within: Duration) -> bool {
    let Some(name) = ep
        .rsplit_once(':')
        .and_then(|(h, _)| ServerName::try_from(h.to_string()).ok())
    else {
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
        let tcp = tokio::net::TcpStream::connect(ep).await?;
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
    };
    match tokio::time::timeout(within, probe).await {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => matches!(
            e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
            Some(rustls::Error::InvalidCertificate(_) | rustls::Error::AlertReceived(_))
        ),
        Err(_) => false,
    }
}
