//! Who may read what `electop serve` serves, and over what: a bearer token or a basic-auth
//! user from a file (never from the command line, where `ps` shows it), and TLS from a
//! certificate and key. Anything not on loopback must have one of them: leader names and
//! hosts are no one else's business.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// What a request must carry.
pub(crate) enum Auth {
    Open,
    Bearer(String),
    /// `Authorization: Basic base64(user:password)`, as the header carries it.
    Basic(String),
}

impl Auth {
    /// From the files given (at most one): the token or `user:password` is the file's first
    /// line.
    pub(crate) fn load(bearer: Option<&Path>, basic: Option<&Path>) -> Result<Auth, String> {
        let first_line = |flag: &str, p: &Path| -> Result<String, String> {
            let text = std::fs::read_to_string(p)
                .map_err(|e| format!("{flag} {}: cannot read it: {e}", p.display()))?;
            let line = text.lines().next().unwrap_or("").trim().to_string();
            if line.is_empty() {
                return Err(format!("{flag} {}: the file is empty", p.display()));
            }
            Ok(line)
        };
        match (bearer, basic) {
            (Some(_), Some(_)) => {
                Err("give --bearer-token-file or --basic-auth-file, not both".to_string())
            }
            (Some(p), None) => Ok(Auth::Bearer(first_line("--bearer-token-file", p)?)),
            (None, Some(p)) => {
                let pair = first_line("--basic-auth-file", p)?;
                if !pair.contains(':') {
                    return Err(format!(
                        "--basic-auth-file {}: write one line `user:password`",
                        p.display()
                    ));
                }
                use base64::Engine;
                Ok(Auth::Basic(
                    base64::engine::general_purpose::STANDARD.encode(pair),
                ))
            }
            (None, None) => Ok(Auth::Open),
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        matches!(self, Auth::Open)
    }

    /// Whether the request may be answered; if not, the 401 that says how to ask.
    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let (scheme, want) = match self {
            Auth::Open => return Ok(()),
            Auth::Bearer(t) => ("Bearer", t),
            Auth::Basic(b) => ("Basic", b),
        };
        let ok = given
            .strip_prefix(scheme)
            .and_then(|rest| rest.strip_prefix(' '))
            .is_some_and(|v| same(v.trim().as_bytes(), want.as_bytes()));
        if ok {
            return Ok(());
        }
        let challenge = match self {
            Auth::Basic(_) => "Basic realm=\"electop\"",
            _ => "Bearer",
        };
        Err(Box::new(
            (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, challenge)],
                "unauthorized\n",
            )
                .into_response(),
        ))
    }
}

/// Compares in time that does not depend on where the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A listener off loopback must ask who is reading (TLS alone still serves anyone).
pub(crate) fn check_exposure(listen: SocketAddr, auth: &Auth) -> Result<(), String> {
    if listen.ip().is_loopback() || !auth.is_open() {
        return Ok(());
    }
    Err(format!(
        "--listen {listen} is reachable from other hosts, and would serve the elections, their \
         holders and hosts to anyone: give --bearer-token-file or --basic-auth-file (with \
         --tls-cert and --tls-key), or listen on 127.0.0.1"
    ))
}

/// The TLS settings for the listener, from PEM files.
pub(crate) fn tls(cert: &Path, key_path: &Path) -> Result<tokio_rustls::TlsAcceptor, String> {
    let chain = crate::pem::certificates("--tls-cert", cert)?;
    let key = crate::pem::private_key("--tls-key", key_path)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| {
            format!(
                "--tls-cert {} and --tls-key {} do not make a usable pair: {e}",
                cert.display(),
                key_path.display()
            )
        })?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// A TCP listener whose connections are TLS: a handshake that fails or stalls is dropped
/// (logged), and the next connection is taken.
pub(crate) struct TlsListener {
    pub tcp: tokio::net::TcpListener,
    pub acceptor: tokio_rustls::TlsAcceptor,
}

/// How long a client may take over its handshake.
const HANDSHAKE: Duration = Duration::from_secs(10);

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (tcp, addr) = match self.tcp.accept().await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(%e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            match tokio::time::timeout(HANDSHAKE, self.acceptor.accept(tcp)).await {
                Ok(Ok(tls)) => return (tls, addr),
                Ok(Err(e)) => tracing::info!(%addr, %e, "TLS handshake failed"),
                Err(_) => tracing::info!(%addr, "TLS handshake timed out"),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, v.parse().expect("header"));
        h
    }

    #[test]
    fn a_token_or_a_user_must_match_and_loopback_alone_may_be_open() {
        let bearer = Auth::Bearer("s3cret".into());
        assert!(bearer.check(&headers("Bearer s3cret")).is_ok());
        assert!(bearer.check(&headers("Bearer s3cre")).is_err());
        assert!(bearer.check(&HeaderMap::new()).is_err());
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("basic");
        std::fs::write(&file, "ops:pw\n").expect("write");
        let basic = Auth::load(None, Some(&file)).expect("load");
        // base64("ops:pw")
        assert!(basic.check(&headers("Basic b3BzOnB3")).is_ok());
        assert!(basic.check(&headers("Bearer b3BzOnB3")).is_err());
        let open: SocketAddr = "0.0.0.0:9477".parse().expect("addr");
        let err = check_exposure(open, &Auth::Open).expect_err("refused");
        assert!(err.contains("--bearer-token-file"), "{err}");
        assert!(check_exposure(open, &bearer).is_ok());
        let local: SocketAddr = "127.0.0.1:9477".parse().expect("addr");
        assert!(check_exposure(local, &Auth::Open).is_ok());
    }
}
