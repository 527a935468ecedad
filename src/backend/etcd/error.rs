//! Typed etcd errors: what kind of failure it was decides what the backend does next
//! (retry soon, try another member, stop and say what to fix), so nothing downstream
//! matches on message text.

use std::time::Duration;

/// How a failure should be handled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The member (or the network to it) may come back: retry, try another member.
    Transient,
    /// Nothing listens at the member's address: retried like a transient failure, but a
    /// one-shot read (`status`) takes it as final rather than waiting out its timeout.
    Refused,
    /// Settings that cannot work (bad endpoint, missing password): waiting will not help.
    Lasting,
    /// Credentials refused.
    Auth,
    /// TLS failed: wrong CA, wrong name, expired certificate, plain text against TLS.
    Tls,
    /// The revision asked for is gone from etcd's history.
    Compacted,
    /// A response larger than electop accepts (even one key per page).
    TooLarge,
}

impl ErrorKind {
    /// What the failure means for the connection's life cycle.
    pub(crate) fn failure(self) -> crate::backend::engine::lifecycle::Failure {
        use crate::backend::engine::lifecycle::Failure;
        match self {
            ErrorKind::Transient | ErrorKind::Refused => Failure::Transient,
            ErrorKind::Compacted => Failure::Resnapshot,
            ErrorKind::Lasting | ErrorKind::Auth | ErrorKind::Tls | ErrorKind::TooLarge => {
                Failure::Lasting
            }
        }
    }
}

#[derive(Clone, Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("etcd {endpoint}: {message}")]
    Failed {
        kind: ErrorKind,
        endpoint: String,
        message: String,
    },
    #[error("no answer from {endpoint} within {timeout:?}")]
    Timeout { endpoint: String, timeout: Duration },
    /// The connection's keep-alive pings went unanswered: the member is hung or cut off.
    #[error("no answer from {endpoint} to keep-alive pings within {timeout:?}")]
    PingTimeout { endpoint: String, timeout: Duration },
    #[error("etcd {endpoint}: history before revision {revision} was compacted")]
    Compacted { endpoint: String, revision: i64 },
    #[error("etcd {endpoint}: watch cancelled by the server: {reason}")]
    WatchCancelled { endpoint: String, reason: String },
    #[error("etcd {endpoint}: watch stream ended")]
    WatchEnded { endpoint: String },
}

impl EtcdError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            EtcdError::Failed { kind, .. } => *kind,
            EtcdError::Compacted { .. } => ErrorKind::Compacted,
            EtcdError::Timeout { .. }
            | EtcdError::PingTimeout { .. }
            | EtcdError::WatchCancelled { .. }
            | EtcdError::WatchEnded { .. } => ErrorKind::Transient,
        }
    }

    /// Final for a read that answers once (`status`): waiting will not help, or nothing
    /// listens there now.
    pub(crate) fn ends_one_shot(&self) -> bool {
        self.is_lasting() || self.kind() == ErrorKind::Refused
    }

    /// Waiting will not make it go away.
    pub fn is_lasting(&self) -> bool {
        matches!(
            self.kind(),
            ErrorKind::Lasting | ErrorKind::Auth | ErrorKind::Tls | ErrorKind::TooLarge
        )
    }

    pub fn lasting(endpoint: &str, message: impl Into<String>) -> EtcdError {
        EtcdError::Failed {
            kind: ErrorKind::Lasting,
            endpoint: endpoint.to_string(),
            message: message.into(),
        }
    }

    pub fn transient(endpoint: &str, message: impl Into<String>) -> EtcdError {
        EtcdError::Failed {
            kind: ErrorKind::Transient,
            endpoint: endpoint.to_string(),
            message: message.into(),
        }
    }

    /// Classifies a client error by its type and its gRPC status code, never by its text.
    pub fn from_client(endpoint: &str, e: etcd_client::Error) -> EtcdError {
        use etcd_client::Error as E;
        if let Some(unanswered) = no_answer(endpoint, inner(&e)) {
            return unanswered;
        }
        let message = describe(&e);
        let kind = match &e {
            E::InvalidArgs(_) | E::InvalidUri(_) | E::InvalidMetadataValue(_) => ErrorKind::Lasting,
            E::GRpcStatus(s) => status_kind(s),
            E::TransportError(_) | E::IoError(_) => tls_in_chain(inner(&e)).unwrap_or_else(|| {
                match io_in_chain(inner(&e)).map(std::io::Error::kind) {
                    Some(std::io::ErrorKind::ConnectionRefused) => ErrorKind::Refused,
                    _ => ErrorKind::Transient,
                }
            }),
            _ => ErrorKind::Transient,
        };
        EtcdError::Failed {
            kind,
            endpoint: endpoint.to_string(),
            message,
        }
    }
}

/// A request or the connection under it that got no answer in time, found by the type of
/// its cause: our request deadline, tonic's (should one be set), or hyper's keep-alive.
fn no_answer(endpoint: &str, e: &(dyn std::error::Error + 'static)) -> Option<EtcdError> {
    let endpoint = endpoint.to_string();
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(n) = s.downcast_ref::<super::dial::NoAnswer>() {
            let timeout = n.within;
            return Some(EtcdError::Timeout { endpoint, timeout });
        }
        if s.is::<tonic::TimeoutExpired>() {
            let message = "no answer within the request's deadline".to_string();
            let kind = ErrorKind::Transient;
            return Some(EtcdError::Failed {
                kind,
                endpoint,
                message,
            });
        }
        if s.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_timeout)
        {
            let timeout = super::dial::KEEP_ALIVE_TIMEOUT;
            return Some(EtcdError::PingTimeout { endpoint, timeout });
        }
        src = s.source();
    }
    None
}

fn status_kind(s: &tonic::Status) -> ErrorKind {
    use tonic::Code;
    match s.code() {
        Code::Unauthenticated | Code::PermissionDenied => ErrorKind::Auth,
        // etcd answers a wrong user or password with InvalidArgument.
        Code::InvalidArgument if s.message().contains("authentication failed") => ErrorKind::Auth,
        Code::OutOfRange if s.message().contains("compacted") => ErrorKind::Compacted,
        // tonic's own decode limit: the only mark it leaves is its message.
        Code::OutOfRange if s.message().contains("message length too large") => ErrorKind::TooLarge,
        Code::Unimplemented => ErrorKind::Lasting,
        _ => ErrorKind::Transient,
    }
}

/// Where the cause chain starts: etcd_client::Error has no `source()` of its own, the
/// errors it wraps do.
fn inner(e: &etcd_client::Error) -> &(dyn std::error::Error + 'static) {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(s) => s,
        E::TransportError(t) => t,
        E::IoError(io) => io,
        other => other,
    }
}

/// A TLS failure somewhere in the error's source chain.
fn tls_in_chain(e: &(dyn std::error::Error + 'static)) -> Option<ErrorKind> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if s.downcast_ref::<rustls::Error>().is_some() {
            return Some(ErrorKind::Tls);
        }
        // `io::Error::source` skips the error it wraps (it returns that error's source), and
        // rustls's errors reach tokio wrapped in one.
        if let Some(inner) = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .filter(|inner| inner.is::<rustls::Error>())
        {
            src = Some(inner);
            continue;
        }
        src = s.source();
    }
    None
}

/// An error of an etcd call, with whatever context it was given, in words: the client's own
/// text would say `h2 protocol error: error reading a body from connection` for an etcd
/// that went away.
pub(crate) fn in_words(e: &anyhow::Error) -> String {
    let mut parts = Vec::new();
    for cause in e.chain() {
        if let Some(c) = cause.downcast_ref::<etcd_client::Error>() {
            parts.push(describe(c));
            break;
        }
        parts.push(cause.to_string());
    }
    parts.join(": ")
}

/// In words: the common network failures by their io error kind, the server's own message
/// for a gRPC status, and the whole source chain only for the rest.
fn describe(e: &etcd_client::Error) -> String {
    if let Some(io) = io_in_chain(inner(e)) {
        use std::io::ErrorKind as K;
        let what = match io.kind() {
            K::ConnectionRefused => "connection refused (is etcd running and listening there?)",
            K::ConnectionReset => "connection reset by the server",
            K::ConnectionAborted => "connection aborted",
            K::TimedOut => "connection timed out",
            // Said when either end closes it: h2 tells its streams so whichever did.
            K::BrokenPipe => "connection lost",
            K::AddrNotAvailable | K::NotFound => "address not available",
            _ => "",
        };
        if !what.is_empty() {
            return what.to_string();
        }
    }
    // A request the client's connection dropped under it (its keep-alive gave up, the
    // member hung up): hyper cancels it, and tonic says "operation was canceled".
    if cancelled_by_the_connection(inner(e)) {
        return "connection lost".to_string();
    }
    match e {
        etcd_client::Error::GRpcStatus(s) if !s.message().is_empty() => {
            format!("{} ({:?})", s.message(), s.code())
        }
        _ => chain(inner(e)),
    }
}

fn cancelled_by_the_connection(e: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(e), |s| s.source()).any(|s| {
        s.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_canceled)
    })
}

fn io_in_chain<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        // A stream cut by its connection's end (a keep-alive timeout among others): h2
        // keeps the io error out of its source chain.
        if let Some(io) = s.downcast_ref::<h2::Error>().and_then(h2::Error::get_io) {
            return Some(io);
        }
        src = s.source();
    }
    None
}

/// tonic's Display for transport errors is terse; the source chain has the reason.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut message = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        let more = s.to_string();
        if !message.contains(&more) {
            message.push_str(": ");
            message.push_str(&more);
        }
        src = s.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_codes_decide_the_kind() {
        let auth = tonic::Status::invalid_argument(
            "etcdserver: authentication failed, invalid user ID or password",
        );
        assert_eq!(status_kind(&auth), ErrorKind::Auth);
        assert_eq!(
            status_kind(&tonic::Status::unavailable("no leader")),
            ErrorKind::Transient
        );
        let e = EtcdError::from_client("a:1", etcd_client::Error::InvalidArgs("x".into()));
        assert!(e.is_lasting());
        let io = std::io::Error::other(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer,
        ));
        assert_eq!(tls_in_chain(&io), Some(ErrorKind::Tls), "inside io::Error");
        assert!(
            !EtcdError::WatchEnded {
                endpoint: "a:1".into()
            }
            .is_lasting()
        );
    }

    #[test]
    fn a_request_without_an_answer_says_whose_and_how_long() {
        let within = Duration::from_secs(2);
        let ours =
            tonic::Status::from_error(Box::new(crate::backend::etcd::dial::NoAnswer { within }));
        let e = EtcdError::from_client("10.0.0.5:2379", etcd_client::Error::GRpcStatus(ours));
        assert_eq!(e.to_string(), "no answer from 10.0.0.5:2379 within 2s");
        assert_eq!(e.kind(), ErrorKind::Transient);
        // tonic's own deadline, should one be set: its words are not shown.
        let theirs = tonic::Status::from_error(Box::new(tonic::TimeoutExpired(())));
        assert_eq!(theirs.code(), tonic::Code::Cancelled);
        let e = EtcdError::from_client("a:1", etcd_client::Error::GRpcStatus(theirs));
        assert_eq!(
            e.to_string(),
            "etcd a:1: no answer within the request's deadline"
        );
        assert!(!e.ends_one_shot());
    }
}
