//! Connections to etcd members, one member per client: electop picks the member itself so a
//! dead one is skipped (and retried in the background) instead of failing the whole client.
//! The channel under each client is built here (TCP, then rustls for TLS sources) so that a
//! TLS failure is told in words and is a lasting error, not one retried as if transient.

mod deadline;
mod tls;
mod transport;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use etcd_client::Client;
use tonic::transport::{Endpoint, Uri};

pub(crate) use self::deadline::NoAnswer;
use self::transport::{Dial, TlsFailure};
use super::error::{ErrorKind, EtcdError};
use crate::config::{EtcdSource, read_password};

/// HTTP/2 pings, sent after this long without a frame from the member: one that stops
/// answering (hung, partitioned) is given up even when no request is in flight, so a reader
/// moves to a live member and shows what changed within the 2 s the conformance cell asks.
/// A ping is answered by the member's HTTP/2 layer, not after its disk or raft, so a busy
/// member still answers well within the timeout.
const KEEP_ALIVE_INTERVAL: Duration = Duration::from_millis(500);
pub(crate) const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(1);

/// Whether a connection sends those pings. etcd's gRPC server enforces a keep-alive policy
/// (`--grpc-keepalive-min-time`, 5 s by default): a third ping with nothing sent by the
/// server since the first is answered with GOAWAY `too_many_pings`, and the connection
/// closes. Only a reader's connection, which the member answers every heartbeat, may ping
/// as often as the move off a frozen member needs; a connection that idles between requests
/// (the member probe every 2 s, a participant between renewals, an admin action waiting out
/// its hold) would be closed by etcd every few seconds, and bounds each request instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pings {
    /// After [`KEEP_ALIVE_INTERVAL`] without a frame, given up after [`KEEP_ALIVE_TIMEOUT`].
    Often,
    /// None: each request's deadline finds a member that stopped answering.
    Never,
}

/// What the source's label adds when its members are not authenticated.
pub(crate) fn security_note(cfg: &EtcdSource) -> Option<&'static str> {
    cfg.insecure_skip_tls_verify.then_some("TLS unverified")
}

/// The client's options: timeouts, keep-alives and, with a user, its password (read now,
/// from where the source says it is kept).
fn connect_options(
    cfg: &EtcdSource,
    timeout: Duration,
) -> Result<etcd_client::ConnectOptions, String> {
    let mut o = etcd_client::ConnectOptions::new()
        .with_connect_timeout(timeout)
        .with_timeout(timeout)
        .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2));
    if let Some(user) = &cfg.user {
        let password = read_password(cfg.password_env.as_deref(), cfg.password_file.as_deref())?
            .ok_or_else(|| format!("etcd user `{user}` needs a password: set password_env or password_file (--password-env / --password-file)"))?;
        o = o.with_user(user.clone(), password);
    }
    Ok(o)
}

/// A client bound to one member; `status` has already answered, so the member is up.
pub(crate) async fn connect_member(
    cfg: &EtcdSource,
    endpoint: &str,
    timeout: Duration,
    pings: Pings,
) -> Result<Client, EtcdError> {
    let options = connect_options(cfg, timeout).map_err(|m| EtcdError::lasting(endpoint, m))?;
    let dial = Arc::new(dial_for(cfg, endpoint)?);
    let deadline = Instant::now() + timeout;
    match tokio::time::timeout(timeout, open(&dial, options, timeout, pings)).await {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(explain(&dial, endpoint, e, deadline).await),
        Err(_) => Err(EtcdError::Timeout {
            endpoint: endpoint.to_string(),
            timeout,
        }),
    }
}

/// The first member that answers, trying them in order from `start`. A lasting error (TLS,
/// credentials) is returned at once: another member will refuse the same way.
pub(crate) async fn connect_any(
    cfg: &EtcdSource,
    start: usize,
    timeout: Duration,
    pings: Pings,
) -> Result<(Client, usize), EtcdError> {
    let n = cfg.endpoints.len();
    let mut last = None;
    for k in 0..n {
        let i = (start + k) % n;
        match connect_member(cfg, &cfg.endpoints[i], timeout, pings).await {
            Ok(c) => return Ok((c, i)),
            Err(e) if e.is_lasting() => return Err(e),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| EtcdError::lasting("-", "no etcd endpoints configured")))
}

/// `host:port`, `http://host:port` or `https://host:port`, with its TLS settings.
fn dial_for(cfg: &EtcdSource, endpoint: &str) -> Result<Dial, EtcdError> {
    let bad = |m: String| EtcdError::lasting(endpoint, m);
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .unwrap_or(endpoint);
    let uri: Uri = format!("http://{rest}")
        .parse()
        .map_err(|_| bad(format!("`{endpoint}` is not HOST:PORT")))?;
    let (Some(host), Some(port)) = (uri.host(), uri.port_u16()) else {
        return Err(bad(format!("`{endpoint}` is not HOST:PORT")));
    };
    // An IPv6 address comes bracketed out of a URI; sockets and certificates want it bare.
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tls = if cfg.uses_tls(endpoint) {
        warn_unverified(cfg);
        Some(tls::Tls::new(cfg, &host).map_err(|m| EtcdError::Failed {
            kind: ErrorKind::Tls,
            endpoint: endpoint.to_string(),
            message: m,
        })?)
    } else {
        None
    };
    Ok(Dial {
        host,
        port,
        tls,
        failure: TlsFailure::default(),
    })
}

fn warn_unverified(cfg: &EtcdSource) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if cfg.insecure_skip_tls_verify && !WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "--insecure-skip-tls-verify: etcd certificates are not checked; the connection \
             is encrypted but anyone on the path could pose as the server"
        );
    }
}

async fn open(
    dial: &Arc<Dial>,
    options: etcd_client::ConnectOptions,
    timeout: Duration,
    pings: Pings,
) -> Result<Client, etcd_client::Error> {
    let scheme = if dial.tls.is_some() { "https" } else { "http" };
    let host = if dial.host.contains(':') {
        format!("[{}]", dial.host)
    } else {
        dial.host.clone()
    };
    let mut endpoint =
        Endpoint::from_shared(format!("{scheme}://{host}:{}", dial.port))?.connect_timeout(timeout);
    if pings == Pings::Often {
        endpoint = endpoint
            .http2_keep_alive_interval(KEEP_ALIVE_INTERVAL)
            .keep_alive_timeout(KEEP_ALIVE_TIMEOUT)
            .keep_alive_while_idle(true);
    }
    let d = dial.clone();
    let connector = tower::service_fn(move |_: Uri| d.clone().connect());
    let channel = endpoint.connect_with_connector(connector).await?;
    // Each request's deadline is ours, not tonic's: its error says how long it waited.
    let channel = deadline::with_deadline(channel, timeout);
    let mut client = Client::from_channel(channel, Some(options)).await?;
    client.status().await?;
    Ok(client)
}

/// The error of a failed connect, TLS failures in words: first what the stream noted, then
/// (for plain text) whether a TLS server is what closed the connection.
async fn explain(
    dial: &Dial,
    endpoint: &str,
    e: etcd_client::Error,
    deadline: Instant,
) -> EtcdError {
    let tls_failure = |message: String| EtcdError::Failed {
        kind: ErrorKind::Tls,
        endpoint: endpoint.to_string(),
        message,
    };
    if let (Some(tls), Some(failure)) = (&dial.tls, dial.failure.get()) {
        return tls_failure(tls.describe(&failure, &dial.host));
    }
    let probe = deadline
        .saturating_duration_since(Instant::now())
        .min(Duration::from_secs(1));
    if dial.tls.is_none() && no_answer(&e) && tls::speaks_tls(&dial.host, dial.port, probe).await {
        return tls_failure("the server speaks TLS: use https:// or --cacert".to_string());
    }
    if dial.tls.is_some()
        && dial.failure.hung_up_in_handshake()
        && tls::speaks_plain_http2(&dial.host, dial.port, probe).await
    {
        return tls_failure(
            "the server speaks plain text, not TLS: write http:// and drop the TLS settings"
                .to_string(),
        );
    }
    // A refused connect is refused again at once: the probe costs nothing there.
    if dial.tls.is_none()
        && no_answer(&e)
        && let Some(answer) = tls::not_http2(&dial.host, dial.port, probe).await
    {
        // Another server (Redis, HTTP/1): waiting will not make it etcd.
        return EtcdError::lasting(
            endpoint,
            format!(
                "the server there did not answer as etcd: no HTTP/2 (gRPC) handshake; \
                 {answer}: is this etcd's client port (2379)?"
            ),
        );
    }
    EtcdError::from_client(endpoint, e)
}

/// The connection failed below gRPC, as opposed to the server answering with an error: a
/// status tonic made from a local failure carries that failure as its source.
fn no_answer(e: &etcd_client::Error) -> bool {
    use etcd_client::Error as E;
    match e {
        E::TransportError(_) | E::IoError(_) => true,
        E::GRpcStatus(s) => std::error::Error::source(s).is_some(),
        _ => false,
    }
}
