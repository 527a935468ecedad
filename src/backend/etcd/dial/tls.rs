//! rustls for etcd: the client config built from the source's TLS settings (the shared
//! `backend::tls`, with ALPN's `h2`), a TLS failure told in etcd's words, and the probes
//! that tell a plain HTTP/2 server, or another kind of server, at a port.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::ClientConfig;
use rustls::pki_types::ServerName;

use crate::backend::tls::{self as shared, Files, Trust, Words};
use crate::config::EtcdSource;

/// What a TLS connection to one member needs, and what its messages name.
pub(super) struct Tls {
    pub config: Arc<ClientConfig>,
    pub name: ServerName<'static>,
    cacert: Option<PathBuf>,
    cert: Option<PathBuf>,
}

/// The flags naming the CA, the certificate and the key in messages.
const FLAGS: [&str; 3] = ["--cacert", "--cert", "--key"];

impl Tls {
    /// Reads the files now (a renewed certificate is picked up on the next connect). The
    /// errors name the file, never its contents.
    pub(super) fn new(cfg: &EtcdSource, host: &str) -> Result<Tls, String> {
        let name = shared::server_name(host)?;
        let trust = match cfg.insecure_skip_tls_verify {
            true => Trust::Anyone,
            false => Trust::System,
        };
        let given = Files::new(
            FLAGS,
            [
                cfg.cacert.as_deref(),
                cfg.cert.as_deref(),
                cfg.key.as_deref(),
            ],
        );
        let mut config = shared::client_config(&given, trust)?;
        // etcd serves gRPC over HTTP/2 only, and says so through ALPN.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Tls {
            config: Arc::new(config),
            name,
            cacert: cfg.cacert.clone(),
            cert: cfg.cert.clone(),
        })
    }

    /// A failed handshake in words; `host` is the name the certificate was checked against.
    pub(super) fn describe(&self, e: &rustls::Error, host: &str) -> String {
        let given = Files::new(FLAGS, [self.cacert.as_deref(), self.cert.as_deref(), None]);
        let words = Words {
            lead: String::new(),
            files: &given,
            server_cert: "--cert-file",
            server_ca: "--trusted-ca-file",
            client_auth: "",
            not_tls: "the server does not answer in TLS: if it is plain text, write http:// and \
                      drop the TLS settings",
        };
        shared::describe(e, host, &words)
    }
}

/// Whether a TLS server answers at `host:port`: asked after a plain-text attempt failed, so
/// the error can say "use https://" instead of a bare "connection closed".
pub(super) async fn speaks_tls(host: &str, port: u16, within: std::time::Duration) -> bool {
    shared::speaks_tls((host, port), host, within).await
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

/// What a server that is not HTTP/2 answered (in words: Redis, PostgreSQL, HTTP/1), asked
/// after a plain-text connect failed below gRPC: `None` when it answered as HTTP/2 or in
/// TLS (said otherwise), or said nothing (closed, or no answer in time), which proves
/// nothing.
pub(super) async fn not_http2(
    host: &str,
    port: u16,
    within: std::time::Duration,
) -> Option<String> {
    use crate::backend::probe::{Answerer, what_answers};
    match what_answers(host, port, within).await? {
        Answerer::Http2 | Answerer::Tls => None,
        other => Some(other.said()),
    }
}
