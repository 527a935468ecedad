//! TLS to a Redis `tls-port` (`rediss://`): electop makes the handshake itself (rustls with
//! ring, as everywhere in electop) and hands the stream to the Redis client, so every way
//! the handshake fails is told in words naming the setting to change: an untrusted server
//! certificate, a plain port, a client certificate that is needed or refused. Nothing read
//! from a key file reaches a message.

use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::error::RedisError;
use crate::config::RedisSource;

/// What a TLS connection needs: the rustls config and the name the certificate must hold.
pub(crate) struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    /// The `--redis-cacert` and `--redis-cert` as given, for messages.
    cacert: Option<String>,
    cert: Option<String>,
}

impl Tls {
    /// The settings of a `rediss://` source, the files read now (a renewed certificate is
    /// picked up at the next connect); `None` for `redis://`.
    pub(crate) fn new(cfg: &RedisSource, host: &str) -> Result<Option<Tls>, RedisError> {
        let t = cfg.target().map_err(RedisError::Config)?;
        if !t.tls {
            return Ok(None);
        }
        let mut roots = RootCertStore::empty();
        match &cfg.cacert {
            Some(ca) => {
                for c in
                    crate::pem::certificates("--redis-cacert", ca).map_err(RedisError::Config)?
                {
                    roots.add(c).map_err(|e| {
                        RedisError::Config(format!(
                            "--redis-cacert {}: not a usable CA certificate: {e}",
                            ca.display()
                        ))
                    })?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        let builder = ClientConfig::builder_with_provider(crate::crypto::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| RedisError::Config(format!("TLS: {e}")))?
            .with_root_certificates(roots);
        let config = match (&cfg.cert, &cfg.key) {
            (Some(cert), Some(key)) => {
                let chain =
                    crate::pem::certificates("--redis-cert", cert).map_err(RedisError::Config)?;
                let der =
                    crate::pem::private_key("--redis-key", key).map_err(RedisError::Config)?;
                builder.with_client_auth_cert(chain, der).map_err(|_| {
                    RedisError::Config(format!(
                        "--redis-key {} is not a usable key for --redis-cert {}",
                        key.display(),
                        cert.display()
                    ))
                })?
            }
            _ => builder.with_no_client_auth(),
        };
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            RedisError::Config(format!("rediss://: `{host}` is not a host name or address"))
        })?;
        Ok(Some(Tls {
            config: Arc::new(config),
            name,
            cacert: cfg.cacert.as_ref().map(|p| p.display().to_string()),
            cert: cfg.cert.as_ref().map(|p| p.display().to_string()),
        }))
    }

    /// A TLS connection to `ep`, proven by one `PING` answered (with TLS 1.3 a refused
    /// client certificate is only told at the first read). The answer (`+PONG`, or
    /// `-NOAUTH` before the password) is read to its end, so the client starts clean.
    pub(crate) async fn dial(
        &self,
        ep: &str,
        addr: &str,
        within: Duration,
    ) -> Result<TlsStream<TcpStream>, RedisError> {
        let timeout = || RedisError::Timeout(addr.to_string(), within);
        let tcp = tokio::time::timeout(within, TcpStream::connect(ep))
            .await
            .map_err(|_| timeout())?
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::ConnectionRefused => RedisError::Refused(addr.to_string()),
                _ => RedisError::Other(addr.to_string(), e.to_string()),
            })?;
        let _ = tcp.set_nodelay(true);
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        let proven = async {
            let mut s = connector.connect(self.name.clone(), tcp).await?;
            s.write_all(b"*1\r\n$4\r\nPING\r\n").await?;
            let mut line = Vec::new();
            while !line.ends_with(b"\r\n") {
                let b = s.read_u8().await?;
                line.push(b);
            }
            Ok::<_, std::io::Error>(s)
        };
        // A plain port reads the TLS hello as the start of a command and waits for its
        // end, silent: when the hello is not answered soon, a plain PING on another
        // connection tells a plain port (it answers) from a slow server.
        let plain = async {
            tokio::time::sleep(PLAIN_PROBE_AFTER).await;
            if plain_answers(ep, within).await {
                return;
            }
            std::future::pending::<()>().await
        };
        tokio::select! {
            r = tokio::time::timeout(within, proven) => match r {
                Err(_) => Err(timeout()),
                Ok(Ok(s)) => Ok(s),
                Ok(Err(e)) => Err(RedisError::Tls(self.describe(&e, addr))),
            },
            () = plain => Err(RedisError::Tls(not_tls(addr, true))),
        }
    }

    /// A failed handshake or first read, in words naming the setting to change.
    fn describe(&self, err: &std::io::Error, addr: &str) -> String {
        use rustls::Error as E;
        let tls = err
            .get_ref()
            .and_then(|i| i.downcast_ref::<rustls::Error>());
        let ca = match &self.cacert {
            Some(ca) => format!("the CA in --redis-cacert {ca}"),
            None => "the system's CA certificates (no --redis-cacert)".to_string(),
        };
        match tls {
            Some(E::InvalidCertificate(
                CertificateError::UnknownIssuer | CertificateError::BadSignature,
            )) => format!(
                "redis {addr}: certificate not trusted: the server's certificate is not signed \
                 by {ca} (unknown issuer); give --redis-cacert FILE, the CA that signs its \
                 tls-cert-file"
            ),
            Some(E::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => format!(
                "redis {addr}: the server's certificate is not for this host name (no matching \
                 subjectAltName); connect by a name or address the certificate lists"
            ),
            Some(E::InvalidCertificate(c)) => {
                format!("redis {addr}: the server's certificate is refused: {c}")
            }
            Some(E::AlertReceived(a)) => match (&self.cert, a) {
                (
                    None,
                    AlertDescription::CertificateRequired
                    | AlertDescription::BadCertificate
                    | AlertDescription::HandshakeFailure,
                ) => format!(
                    "redis {addr} requires a client certificate (tls-auth-clients yes): give \
                     --redis-cert and --redis-key"
                ),
                (Some(cert), _) => format!(
                    "redis {addr} refused the client certificate --redis-cert {cert} ({a:?}): \
                     is it signed by the server's tls-ca-cert-file, and still valid?"
                ),
                (None, _) => format!("redis {addr} ended the TLS handshake ({a:?})"),
            },
            Some(E::InvalidMessage(_) | E::InappropriateMessage { .. }) | None
                if tls.is_some() || err.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                not_tls(addr, false)
            }
            Some(other) => format!("redis {addr}: TLS: {other}"),
            None => format!("redis {addr}: TLS: {err}"),
        }
    }
}

/// How long a TLS hello goes unanswered before a plain `PING` is tried beside it.
const PLAIN_PROBE_AFTER: Duration = Duration::from_millis(300);

/// `answered`: a plain `PING` was answered there, so it is certainly a plain port.
fn not_tls(addr: &str, answered: bool) -> String {
    let why = if answered {
        "it is the server's plain port (it answered a plain PING):"
    } else {
        "is it the server's plain port?"
    };
    format!(
        "redis {addr} did not speak TLS: {why} rediss:// needs its tls-port, and for the \
         plain port write redis://"
    )
}

/// Whether `ep` answers a plain `PING` (`+PONG`, or an error such as `-NOAUTH`): a plain
/// port.
async fn plain_answers(ep: &str, within: Duration) -> bool {
    let probe = async {
        let mut tcp = TcpStream::connect(ep).await?;
        tcp.write_all(b"PING\r\n").await?;
        tcp.read_u8().await
    };
    matches!(
        tokio::time::timeout(within, probe).await,
        Ok(Ok(b'+' | b'-'))
    )
}

/// Whether `ep` answers a TLS handshake (a certificate, which an empty trust store refuses,
/// or an alert): asked when a `redis://` connection is dropped at its first command.
pub(crate) async fn speaks_tls(ep: &str, host: &str, within: Duration) -> bool {
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
        let tcp = TcpStream::connect(ep).await?;
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
