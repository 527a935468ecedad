//! Every ZooKeeper session electop opens (the follow task, an admin action, `electop node`
//! and the demo's) is built here from the source: its digest credentials and its TLS
//! settings, so no dialer can forget one.

use std::time::Duration;

use zookeeper_client::{Client, Connector};

use super::error::ZkError;
use crate::config::ZkSource;

/// A connector carrying the source's credentials and TLS options, read now (at each
/// connect, so a rotated file is picked up); they go nowhere else.
pub(crate) struct Dialer {
    connector: Connector,
    tls: bool,
}

pub(crate) fn dialer(cfg: &ZkSource) -> Result<Dialer, ZkError> {
    let mut connector = Client::connector();
    if let Some(creds) = cfg.digest().map_err(ZkError::Credentials)? {
        connector = connector.with_auth("digest", &creds);
    }
    let tls = super::tls::options(cfg)?;
    let secure = tls.is_some();
    if let Some(o) = tls {
        connector = connector.with_tls(o);
    }
    Ok(Dialer {
        connector,
        tls: secure,
    })
}

impl Dialer {
    /// The session's timeouts; `fail_eagerly`: one round of the members, not round and round.
    pub(crate) fn timeouts(mut self, session: Duration, connection: Duration) -> Self {
        self.connector = self
            .connector
            .with_session_timeout(session)
            .with_connection_timeout(connection)
            .with_fail_eagerly();
        self
    }

    /// Connects to the source's members within `wait`, in TLS when the source has TLS
    /// settings. A TLS connect not done in a moment is looked into by a handshake of
    /// electop's own, so a TLS mistake is said at once: the client retries a failed
    /// handshake until `wait`.
    pub(crate) async fn connect(self, cfg: &ZkSource, wait: Duration) -> Result<Client, ZkError> {
        let at = cfg.connect_string();
        let tls = self.tls;
        let connect = async {
            if tls {
                self.connector.secure_connect(&at).await
            } else {
                self.connector.connect(&at).await
            }
        };
        let found = async {
            if !tls {
                // A plain client at a TLS port is closed on at once: `failed` looks then.
                return std::future::pending().await;
            }
            tokio::time::sleep(LOOK_AFTER).await;
            match super::tls::diagnose(cfg, LOOK_LIMIT.min(wait)).await {
                Some(e) => e,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = tokio::time::timeout(wait, connect) => match r {
                Ok(Ok(c)) => Ok(c),
                Ok(Err(e)) => Err(failed(cfg, Some(e), wait).await),
                Err(_) => Err(failed(cfg, None, wait).await),
            },
            e = found => Err(e),
        }
    }
}

/// How long one member of several may take to give a session before the next is tried: a
/// frozen member accepts the connection and then says nothing.
const EACH_MEMBER: Duration = Duration::from_secs(2);

/// A session on one member of `cfg`'s, tried in `order` (indexes into its endpoints), each
/// within [`EACH_MEMBER`] and all within `wait`: the member that gave it, and the session.
/// One member at a time, so electop knows which one it reads through and can leave it the
/// moment it stops answering (the client, given them all, picks one at random and says
/// not which). A round in which every member failed is tried again after [`ROUND_PAUSE`]
/// until `wait` is over: members that lost their ensemble's leader close a new session at
/// once until they elect another (a frozen leader: a few seconds), and the member left
/// behind must not have the rest of `wait` to itself. All failing, the first member's error
/// stands for them, named by the whole connect string where it names one; every member
/// refusing the connection ends it at once (nothing listens).
pub(crate) async fn connect_one_of(
    cfg: &ZkSource,
    order: &[usize],
    session: Duration,
    wait: Duration,
) -> Result<(usize, Client), ZkError> {
    let deadline = tokio::time::Instant::now() + wait;
    let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
    let mut first = None;
    'rounds: loop {
        for &i in order {
            if left().is_zero() {
                break 'rounds;
            }
            let limit = left().min(EACH_MEMBER);
            let one = ZkSource {
                endpoints: vec![cfg.endpoints[i].clone()],
                ..cfg.clone()
            };
            let tried = match dialer(&one) {
                Ok(d) => d.timeouts(session, limit).connect(&one, limit).await,
                Err(e) => Err(e),
            };
            match tried {
                Ok(c) => return Ok((i, c)),
                Err(e) => {
                    tracing::warn!(member = %cfg.endpoints[i], error = %e, "zookeeper member gave no session");
                    first.get_or_insert(e);
                }
            }
        }
        let refusing = matches!(first, Some(ZkError::NoHosts(_) | ZkError::Refused(_)));
        if left() <= ROUND_PAUSE || (refusing && all_refused(cfg).await) {
            break;
        }
        tokio::time::sleep(ROUND_PAUSE).await;
    }
    let at = cfg.connect_string();
    Err(match first {
        // Each member's refusal was its own; all of them together are the source's.
        Some(ZkError::NoHosts(_) | ZkError::Refused(_)) if all_refused(cfg).await => {
            ZkError::Refused(at)
        }
        Some(ZkError::NoHosts(_) | ZkError::Refused(_)) => ZkError::NoHosts(at),
        Some(ZkError::Timeout(..)) | None => ZkError::Timeout(at, wait),
        Some(e) => e,
    })
}

/// How long a round of the members that all failed waits before the next.
const ROUND_PAUSE: Duration = Duration::from_millis(200);

/// Whether every member of `cfg` refuses a TCP connection now (nothing listens), which the
/// client does not tell from a member still starting (one that takes the connection and
/// closes it). A member that does not answer in a moment is not taken for refusing.
async fn all_refused(cfg: &ZkSource) -> bool {
    let probe = |ep: String| async move {
        let tried = tokio::time::timeout(LOOK_AFTER, tokio::net::TcpStream::connect(ep)).await;
        matches!(tried, Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused)
    };
    let probes = cfg.endpoints.iter().map(|ep| probe(ep.clone()));
    let refused = futures::future::join_all(probes).await;
    !refused.is_empty() && refused.into_iter().all(|r| r)
}

/// How long a connect may take before electop looks into why: a session is usually there
/// in a few milliseconds.
const LOOK_AFTER: Duration = Duration::from_millis(300);
/// How long that look may take: a member that does not answer it (frozen, overloaded) is
/// not TLS's doing, and the error must not wait on it.
const LOOK_LIMIT: Duration = Duration::from_secs(1);

/// A failed connect to `cfg`'s members as a [`ZkError`]: the client's error, or, where that
/// only says no member answered, what electop's own handshake found (an untrusted
/// certificate, a plain port given TLS, a TLS port given none).
async fn failed(cfg: &ZkSource, e: Option<zookeeper_client::Error>, wait: Duration) -> ZkError {
    use zookeeper_client::Error as E;
    let at = cfg.connect_string();
    // A TLS mistake is a connection closed at once, never a member that says nothing.
    let unclear = matches!(&e, Some(E::NoHosts | E::ConnectionLoss));
    let limit = LOOK_LIMIT.min(wait);
    if unclear
        && let Ok(Some(why)) = tokio::time::timeout(limit, super::tls::diagnose(cfg, limit)).await
    {
        return why;
    }
    match e {
        None => ZkError::Timeout(at, wait),
        Some(E::NoHosts) if all_refused(cfg).await => ZkError::Refused(at),
        Some(e) => ZkError::from_client(e, &at, "/", wait),
    }
}
