//! TLS to a Redis `tls-port` (`rediss://`): electop makes the handshake itself (the shared
//! `backend::tls`) and hands the stream to the Redis client, so every way the handshake
//! fails is told in words naming the setting to change: an untrusted server certificate, a
//! plain port, a client certificate that is needed or refused.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::error::RedisError;
use crate::backend::tls::{self as shared, Files, Trust, Words};
use crate::config::RedisSource;

/// What a TLS connection needs: the rustls config and the name the certificate must hold.
pub(crate) struct Tls {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    /// The `--redis-cacert` and `--redis-cert` as given, for messages.
    cacert: Option<PathBuf>,
    cert: Option<PathBuf>,
}

/// The flags naming the CA, the certificate and the key in messages.
const FLAGS: [&str; 3] = ["--redis-cacert", "--redis-cert", "--redis-key"];

impl Tls {
    /// The settings of a `rediss://` source, the files read now (a renewed certificate is
    /// picked up at the next connect); `None` for `redis://`.
    pub(crate) fn new(cfg: &RedisSource, host: &str) -> Result<Option<Tls>, RedisError> {
        let t = cfg.target().map_err(RedisError::Config)?;
        if !t.tls {
            return Ok(None);
        }
        let given = Files::new(
            FLAGS,
            [
                cfg.cacert.as_deref(),
                cfg.cert.as_deref(),
                cfg.key.as_deref(),
            ],
        );
        let config = shared::client_config(&given, Trust::System).map_err(RedisError::Config)?;
        let name =
            shared::server_name(host).map_err(|e| RedisError::Config(format!("rediss://: {e}")))?;
        Ok(Some(Tls {
            config: Arc::new(config),
            name,
            cacert: cfg.cacert.clone(),
            cert: cfg.cert.clone(),
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
        let given = Files::new(FLAGS, [self.cacert.as_deref(), self.cert.as_deref(), None]);
        let words = Words {
            lead: format!("redis {addr}: "),
            files: &given,
            server_cert: "tls-cert-file",
            server_ca: "tls-ca-cert-file",
            client_auth: " (tls-auth-clients yes)",
            not_tls: "",
        };
        match shared::inner(err) {
            Some(rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. }) => {
                not_tls(addr, false)
            }
            Some(e) => shared::describe(e, &self.name.to_str(), &words),
            None if err.kind() == std::io::ErrorKind::UnexpectedEof => not_tls(addr, false),
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

/// Whether `ep` answers a TLS handshake: asked when a `redis://` connection is dropped at
/// its first command.
pub(crate) async fn speaks_tls(ep: &str, host: &str, within: Duration) -> bool {
    shared::speaks_tls(ep, host, within).await
}
