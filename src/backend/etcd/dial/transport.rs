//! The byte stream under the gRPC channel: TCP, then rustls when the source uses TLS. Built
//! here rather than by tonic so that certificate checks can be turned off for labs and so a
//! TLS failure keeps its type: tonic turns I/O errors into a `Status` that drops their
//! source, so the stream notes the first rustls error where the connect code can read it.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::tls::Tls;

/// The first TLS failure seen on a member's connections.
#[derive(Clone, Default)]
pub(super) struct TlsFailure {
    error: Arc<Mutex<Option<rustls::Error>>>,
    /// The server hung up in the middle of the handshake without a word of TLS.
    hung_up: Arc<AtomicBool>,
}

impl TlsFailure {
    fn note(&self, e: &io::Error) {
        let Some(tls) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
            return;
        };
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(tls.clone());
        }
    }

    fn note_handshake(&self, e: &io::Error) {
        self.note(e);
        if e.kind() == io::ErrorKind::UnexpectedEof {
            self.hung_up.store(true, Ordering::Relaxed);
        }
    }

    pub(super) fn get(&self) -> Option<rustls::Error> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(super) fn hung_up_in_handshake(&self) -> bool {
        self.hung_up.load(Ordering::Relaxed)
    }
}

/// How long to wait for the server's first bytes after a TLS handshake; see
/// [`Stream::hear_first`].
const FIRST_WORD: Duration = Duration::from_secs(1);

/// Where to dial, and how.
pub(super) struct Dial {
    pub host: String,
    pub port: u16,
    pub tls: Option<Tls>,
    pub failure: TlsFailure,
}

impl Dial {
    pub(super) async fn connect(self: Arc<Self>) -> io::Result<TokioIo<Stream>> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port)).await?;
        // gRPC sends small frames that must not wait for Nagle.
        tcp.set_nodelay(true)?;
        let io = match &self.tls {
            None => Io::Plain(tcp),
            Some(tls) => {
                let connector = tokio_rustls::TlsConnector::from(tls.config.clone());
                let stream = connector
                    .connect(tls.name.clone(), tcp)
                    .await
                    .inspect_err(|e| self.failure.note_handshake(e))?;
                Io::Tls(Box::new(stream))
            }
        };
        let mut conn = Stream {
            io,
            failure: self.failure.clone(),
            early: Vec::new(),
        };
        if self.tls.is_some() {
            conn.hear_first().await?;
        }
        Ok(TokioIo::new(conn))
    }
}

enum Io {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// A member connection that notes TLS failures (e.g. the alert a server sends after the
/// handshake when it refuses the client certificate) as they pass.
pub(super) struct Stream {
    io: Io,
    failure: TlsFailure,
    /// Bytes read by `hear_first`, handed out before anything else.
    early: Vec<u8>,
}

impl Stream {
    /// In TLS 1.3 the server judges the client certificate after the client thinks the
    /// handshake is done, and a refusal is an alert on the next read. If HTTP/2 wrote first,
    /// the server would close with our bytes unread, its kernel would reset the connection
    /// and the alert would be lost: "connection closed" instead of "give --cert". etcd (as
    /// any HTTP/2 server may) sends its SETTINGS first, so listening first hears the verdict.
    async fn hear_first(&mut self) -> io::Result<()> {
        let mut buf = vec![0u8; 4096];
        match tokio::time::timeout(FIRST_WORD, self.read(&mut buf)).await {
            Ok(Ok(0)) => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection right after the TLS handshake",
            )),
            Ok(Ok(n)) => {
                buf.truncate(n);
                self.early = buf;
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            // A server that waits for the client to speak first: go on without the check.
            Err(_) => Ok(()),
        }
    }

    fn noted<T>(&self, p: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &p {
            self.failure.note(e);
        }
        p
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.early.is_empty() {
            let n = this.early.len().min(buf.remaining());
            buf.put_slice(&this.early[..n]);
            this.early.drain(..n);
            return Poll::Ready(Ok(()));
        }
        let p = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        };
        this.noted(p)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let p = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        };
        this.noted(p)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let p = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        };
        this.noted(p)
    }

    fn is_write_vectored(&self) -> bool {
        match &self.io {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let p = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        };
        this.noted(p)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let p = match &mut this.io {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        };
        this.noted(p)
    }
}
