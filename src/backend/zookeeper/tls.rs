//! TLS to ZooKeeper's `secureClientPort`: the options the ZooKeeper client is given, the
//! same settings as a rustls config for electop's own handshakes (the four-letter words and
//! the diagnosis), and a failed connect told in words. The client says only "connection
//! loss" whatever went wrong in its handshake, so when a connect fails electop makes the
//! handshake itself and says what it found: an untrusted certificate, a member that does
//! not speak TLS, or one that speaks only TLS.

use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use zookeeper_client::TlsOptions;

use super::error::ZkError;
use crate::backend::tls::{self as shared, Files, Trust, Words};
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
    if cfg.cacert.is_none() {
        return Ok(None);
    }
    let config = shared::client_config(&files(cfg), Trust::System)?;
    Ok(Some(Arc::new(config)))
}

fn files(cfg: &ZkSource) -> Files<'_> {
    Files::new(
        ["--zk-cacert", "--zk-cert", "--zk-key"],
        [
            cfg.cacert.as_deref(),
            cfg.cert.as_deref(),
            cfg.key.as_deref(),
        ],
    )
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
    let given = files(cfg);
    let words = Words {
        lead: format!("ZooKeeper at {ep}: "),
        files: &given,
        server_cert: "ssl.keyStore",
        server_ca: "ssl.trustStore",
        client_auth: " (ssl.clientAuth=need)",
        not_tls: "it did not speak TLS (its answer is not a TLS record): is it the plain \
                  clientPort? With --zk-cacert give its secureClientPort",
    };
    shared::describe(e, host, &words)
}

/// Whether `ep` answers a TLS handshake. Asked after a plain connect failed.
async fn speaks_tls(ep: &str, within: Duration) -> bool {
    let Some((host, _)) = ep.rsplit_once(':') else {
        return false;
    };
    shared::speaks_tls(ep, host, within).await
}
