//! What answers at a port, told apart by a few bytes: asked when a store's client failed in
//! a way that says nothing (a dropped connection, a wait for an answer that never comes), so
//! its error can name the server that is there instead (etcd at `--redis`, Redis at a
//! `postgres://` URL) and the flag that reads it. One probe for every store; a store that
//! tells its own servers by their first line says how in its folder
//! ([`crate::backend::Store::recognise`]).
//!
//! Three connections at once, each sending what one kind of server answers at once and the
//! others do not: PostgreSQL's SSLRequest (answered `S` or `N`), the HTTP/2 client preface
//! (a SETTINGS frame from HTTP/2, an error line from Redis, a status line from HTTP/1), and
//! ZooKeeper's `srvr` word. MySQL and MariaDB greet first, on each. A server that says
//! nothing (frozen, or one that closes without a word) proves nothing: `None`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, ToSocketAddrs};

use crate::model::StoreKind;

/// PostgreSQL's SSLRequest: length 8, code 80877103.
const SSL_REQUEST: &[u8] = b"\0\0\0\x08\x04\xd2\x16\x2f";
/// The HTTP/2 client preface and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
/// ZooKeeper's four-letter word allowed by default.
const SRVR: &[u8] = b"srvr";
/// The frame type of SETTINGS, byte 3 of an HTTP/2 frame header.
const SETTINGS: u8 = 0x4;

/// The kind of server that answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answerer {
    /// An HTTP/2 server: etcd's client port (gRPC).
    Http2,
    /// An HTTP/1 server, with its status line.
    Http1(String),
    /// A server a store told by its first line ([`crate::backend::Store::recognise`]: Redis,
    /// or a server speaking its protocol), with what it said of it in words.
    Recognised {
        store: StoreKind,
        said: String,
    },
    Postgres,
    /// MySQL or MariaDB, with the version its greeting names.
    MySql(String),
    ZooKeeper,
    /// A TLS server (it answered a plain-text preface with a TLS record).
    Tls,
    /// Something else, with what it said first.
    Other(String),
}

impl Answerer {
    /// What answered, in words, with the flag that reads it when electop reads it.
    pub(crate) fn said(&self) -> String {
        match self {
            Answerer::Http2 => "it speaks HTTP/2 (gRPC), as etcd's client port does (for etcd: \
                                --etcd HOST:PORT)"
                .to_string(),
            Answerer::Http1(line) => format!("it answered `{line}`: an HTTP server"),
            Answerer::Recognised { said, .. } => said.clone(),
            Answerer::Postgres => "it answered as PostgreSQL does (for PostgreSQL: --sql \
                                   postgres://USER@HOST:PORT/DB)"
                .to_string(),
            Answerer::MySql(version) => format!(
                "it greeted as MySQL/MariaDB {version} does (for MySQL or MariaDB: --sql \
                 mysql://USER@HOST:PORT/DB)"
            ),
            Answerer::ZooKeeper => {
                "it answered as ZooKeeper does (for ZooKeeper: --zk HOST:PORT)".to_string()
            }
            Answerer::Tls => "it answered in TLS".to_string(),
            Answerer::Other(first) => format!("it answered `{first}`"),
        }
    }
}

/// What answers at `host:port` within `within`, or `None` when nothing said a word.
pub(crate) async fn what_answers(host: &str, port: u16, within: Duration) -> Option<Answerer> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addr = (host.to_string(), port);
    let mut asked = tokio::task::JoinSet::new();
    for (i, send) in [SSL_REQUEST, PREFACE, SRVR].into_iter().enumerate() {
        let addr = addr.clone();
        asked.spawn(async move { (i, exchange(addr, send, within).await) });
    }
    // The first to say anything is enough: no server answers two of the three.
    let mut said: [Vec<u8>; 3] = Default::default();
    while let Some(Ok((i, got))) = asked.join_next().await {
        said[i] = got;
        if !said[i].is_empty() {
            break;
        }
    }
    let [ssl, preface, srvr] = &said;
    classify(ssl, preface, srvr)
}

/// What the server said after `send`, until it closed, said enough, or `within` passed.
async fn exchange<A: ToSocketAddrs>(addr: A, send: &[u8], within: Duration) -> Vec<u8> {
    let mut got = Vec::new();
    let talk = async {
        let mut tcp = TcpStream::connect(addr).await?;
        tcp.write_all(send).await?;
        let mut buf = [0u8; 256];
        while !enough(&got) {
            match tcp.read(&mut buf).await? {
                0 => break,
                n => got.extend_from_slice(&buf[..n]),
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = tokio::time::timeout(within, talk).await;
    got
}

/// Whether `got` already tells its server apart.
fn enough(got: &[u8]) -> bool {
    matches!(got, [b'S' | b'N'])
        || mysql_packet(got).is_some()
        || http2(got)
        || got.contains(&b'\n')
        || got.len() >= 128
}

/// The three answers, told apart: a MySQL greeting on any, PostgreSQL's one byte to the
/// SSLRequest, what the preface drew, ZooKeeper's answer to `srvr`; then the first thing
/// said, as TLS, as a store tells its own servers, or as HTTP/1.
fn classify(ssl: &[u8], preface: &[u8], srvr: &[u8]) -> Option<Answerer> {
    if let Some(version) = [ssl, preface, srvr].into_iter().find_map(mysql_packet) {
        return Some(Answerer::MySql(version));
    }
    if matches!(ssl, [b'S' | b'N']) {
        return Some(Answerer::Postgres);
    }
    if srvr.starts_with(b"Zookeeper version") || srvr.windows(9).any(|w| w == b"whitelist") {
        return Some(Answerer::ZooKeeper);
    }
    if http2(preface) {
        return Some(Answerer::Http2);
    }
    let first = [preface, ssl, srvr].into_iter().find(|a| !a.is_empty())?;
    if matches!(first[0], 0x15 | 0x16) {
        return Some(Answerer::Tls);
    }
    if let Some(known) = crate::backend::recognise(first) {
        return Some(known);
    }
    Some(match first.starts_with(b"HTTP/") {
        true => Answerer::Http1(first_line(first)),
        false => Answerer::Other(first_line(first)),
    })
}

/// An HTTP/2 frame header whose type is SETTINGS.
fn http2(got: &[u8]) -> bool {
    got.len() >= 9 && got[3] == SETTINGS
}

/// A whole first MySQL packet (sequence 0): a greeting (protocol 10, its version) or an
/// error (0xff, its message: "Host … is not allowed to connect", "Too many connections").
fn mysql_packet(got: &[u8]) -> Option<String> {
    let [a, b, c, 0, kind, rest @ ..] = got else {
        return None;
    };
    let len = usize::from(*a) | usize::from(*b) << 8 | usize::from(*c) << 16;
    if len == 0 || got.len() < 4 + len {
        return None;
    }
    match kind {
        0x0a => {
            let version = rest.split(|&b| b == 0).next().unwrap_or_default();
            Some(crate::model::escape_bytes(version))
        }
        // Code (2 bytes), then (protocol 4.1) '#' and a 5-character SQL state.
        0xff if len > 3 => {
            let message = &rest[2..len - 1];
            let message = message
                .strip_prefix(b"#")
                .map_or(message, |m| &m[5.min(m.len())..]);
            Some(format!(
                "(refusing: {})",
                crate::model::escape_bytes(message)
            ))
        }
        _ => None,
    }
}

/// The first line of `got`, escaped and cut to 40 characters.
pub(crate) fn first_line(got: &[u8]) -> String {
    let line = got.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = crate::model::escape_bytes(line);
    let line = line.trim_end_matches("\\r").trim_end();
    if line.chars().count() > 40 {
        format!("{}…", line.chars().take(40).collect::<String>())
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_is_told_apart_by_its_answer() {
        let greeting = b"\x0b\0\0\0\x0a11.4.2-M\0\0";
        assert_eq!(
            classify(greeting, greeting, greeting),
            Some(Answerer::MySql("11.4.2-M".into()))
        );
        assert_eq!(classify(b"N", b"", b""), Some(Answerer::Postgres));
        let settings = b"\0\0\x06\x04\0\0\0\0\0\0\x03\0\0\0\x64";
        assert_eq!(classify(b"", settings, b""), Some(Answerer::Http2));
        let err = b"-ERR unknown command 'PRI', with args beginning with: '*' 'HTTP/2.0'\r\n";
        let said = "it answered `-ERR unknown command 'PRI', with args be…`, as Redis does \
                    (for Redis: --redis redis://HOST:PORT)";
        assert_eq!(
            classify(b"", err, b""),
            Some(Answerer::Recognised {
                store: StoreKind::Redis,
                said: said.into()
            })
        );
        assert_eq!(
            classify(b"", b"", b"Zookeeper version: 3.8.4\n"),
            Some(Answerer::ZooKeeper)
        );
        assert_eq!(
            classify(b"", b"HTTP/1.1 400 Bad Request\r\n", b""),
            Some(Answerer::Http1("HTTP/1.1 400 Bad Request".into()))
        );
        assert_eq!(
            classify(b"", b"\x15\x03\x01\0\x02\x02\x46", b""),
            Some(Answerer::Tls)
        );
        assert_eq!(classify(b"", b"", b""), None);
    }

    #[test]
    fn a_mysql_refusal_is_mysql_with_its_message() {
        let mut p = vec![0u8, 0, 0, 0, 0xff, 0x6a, 0x04];
        p.extend_from_slice(b"Host 'x' is not allowed");
        p[0] = (p.len() - 4) as u8;
        let said = mysql_packet(&p).expect("a MySQL packet");
        assert!(said.contains("Host 'x' is not allowed"), "{said}");
    }

    /// A loopback server answering `answer` to the HTTP/2 preface, then closing; closing
    /// any other connection without a word.
    async fn answering(answer: &'static [u8]) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut first = [0u8; 4];
                    let _ = s.read_exact(&mut first).await;
                    if &first == b"PRI " {
                        let _ = s.write_all(answer).await;
                    }
                });
            }
        });
        port
    }

    #[tokio::test]
    async fn only_what_a_server_says_names_it() {
        let within = Duration::from_secs(5);
        let at = |port| what_answers("127.0.0.1", port, within);
        let port = answering(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
        let http1 = Answerer::Http1("HTTP/1.1 400 Bad Request".into());
        assert_eq!(at(port).await, Some(http1));
        let port = answering(b"\0\0\0\x04\0\0\0\0\0").await;
        assert_eq!(at(port).await, Some(Answerer::Http2));
        // Closed without a word (a proxy whose upstream is gone): proves nothing.
        let port = answering(b"").await;
        assert_eq!(at(port).await, None);
    }
}
