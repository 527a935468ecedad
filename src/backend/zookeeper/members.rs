//! Each ensemble member's health, from ZooKeeper's four-letter words: `srvr` (mode, zxid,
//! latency, version), or `mntr` where only that one is allowed. ZooKeeper 3.5 and later
//! always allow `srvr` whatever `4lw.commands.whitelist` says; a server that refuses both
//! is up (it answered) with a note naming the setting that allows them. A dead member shows
//! here and nowhere else: the client moves to another member and the source carries on.
//!
//! With TLS settings the words are asked inside TLS, on the port electop dials (a
//! secureClientPort answers them there, as ZooKeeper's `FourLetterWordMain -secure` does).
//!
//! [`four_letter`] runs one word against one member and is shared with whoever needs
//! another word (`cons` for the sessions connected to a member).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::model::{Event, EventKind, MemberStatus, SourceEvent, SourceId};

/// How often every member is asked.
const PROBE_EVERY: Duration = Duration::from_secs(2);
/// A member slower than this to answer counts as down.
pub const PROBE_LIMIT: Duration = Duration::from_millis(1500);
/// A four-letter answer is a few lines; `cons` on a busy member a few per connection.
const MAX_ANSWER: u64 = 4 << 20;

/// Why a four-letter word got no answer to use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WordError {
    #[error("not reachable: {0}")]
    Unreachable(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The server answered that the word is off (`4lw.commands.whitelist`).
    #[error(
        "refuses `{0}` (not in its 4lw.commands.whitelist; add {0} to 4lw.commands.whitelist in zoo.cfg)"
    )]
    NotAllowed(String),
    /// A member without a quorum (or still starting) answers only that.
    #[error("answers but does not serve requests (no quorum, or still starting)")]
    NotServing,
    #[error("closed the connection without an answer")]
    Empty,
}

/// Sends `word` (`srvr`, `mntr`, `cons`, `ruok`...) to `endpoint` (`host:port`) and reads
/// the answer to its end, all within `limit`.
pub async fn four_letter(endpoint: &str, word: &str, limit: Duration) -> Result<String, WordError> {
    four_letter_over(None, endpoint, word, limit).await
}

/// [`four_letter`], in TLS with `tls` when given: a member whose only client port is its
/// secureClientPort answers the words there, inside TLS.
pub(crate) async fn four_letter_over(
    tls: Option<&Arc<rustls::ClientConfig>>,
    endpoint: &str,
    word: &str,
    limit: Duration,
) -> Result<String, WordError> {
    let unreachable = |e: std::io::Error| WordError::Unreachable(e.to_string());
    let ask = async {
        let s = tokio::net::TcpStream::connect(endpoint)
            .await
            .map_err(unreachable)?;
        match tls {
            None => exchange(s, word).await.map_err(unreachable),
            Some(config) => {
                let host = endpoint.rsplit_once(':').map_or(endpoint, |(h, _)| h);
                let name = rustls::pki_types::ServerName::try_from(host.to_string())
                    .map_err(|e| WordError::Unreachable(e.to_string()))?;
                let s = tokio_rustls::TlsConnector::from(config.clone())
                    .connect(name, s)
                    .await
                    .map_err(|e| WordError::Unreachable(format!("TLS: {e}")))?;
                exchange(s, word).await.map_err(unreachable)
            }
        }
    };
    let text = tokio::time::timeout(limit, ask)
        .await
        .map_err(|_| WordError::Timeout(limit))??;
    refused(word, &text)?;
    Ok(text)
}

/// Writes the word and reads the answer to its end. ZooKeeper closes a TLS connection
/// after the answer without TLS's close_notify, which rustls reports as an unexpected end:
/// what came before it is the whole answer.
async fn exchange<S>(mut s: S, word: &str) -> std::io::Result<String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    s.write_all(word.as_bytes()).await?;
    let mut out = Vec::new();
    match s.take(MAX_ANSWER).read_to_end(&mut out).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => {}
        Err(e) => return Err(e),
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The answers a server gives instead of the word's own.
fn refused(word: &str, text: &str) -> Result<(), WordError> {
    if text.trim().is_empty() {
        Err(WordError::Empty)
    } else if text.contains("is not executed because it is not in the whitelist") {
        Err(WordError::NotAllowed(word.to_string()))
    } else if text.contains("not currently serving requests") {
        Err(WordError::NotServing)
    } else {
        Ok(())
    }
}

/// What one member says of itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Said {
    mode: Option<String>,
    zxid: Option<i64>,
    latency: Option<String>,
    version: Option<String>,
}

/// `srvr`: `Mode: follower`, `Zxid: 0x100000002`, `Latency min/avg/max: 0/0.4/3`...
fn parse_srvr(text: &str) -> Said {
    let mut s = Said::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(": ") else {
            continue;
        };
        let v = v.trim();
        match k {
            "Mode" => s.mode = Some(v.to_string()),
            "Zxid" => s.zxid = parse_zxid(v),
            "Latency min/avg/max" => s.latency = Some(format!("{v} ms")),
            "Zookeeper version" => s.version = Some(short_version(v)),
            _ => {}
        }
    }
    s
}

/// `mntr`: tab-separated `zk_server_state leader`, `zk_min_latency 0`...; no zxid.
fn parse_mntr(text: &str) -> Said {
    let mut s = Said::default();
    let (mut min, mut avg, mut max) = (None, None, None);
    for line in text.lines() {
        let Some((k, v)) = line.split_once('\t') else {
            continue;
        };
        let v = v.trim().to_string();
        match k {
            "zk_server_state" => s.mode = Some(v),
            "zk_version" => s.version = Some(short_version(&v)),
            "zk_min_latency" => min = Some(v),
            "zk_avg_latency" => avg = Some(v),
            "zk_max_latency" => max = Some(v),
            _ => {}
        }
    }
    if let (Some(a), Some(b), Some(c)) = (min, avg, max) {
        s.latency = Some(format!("{a}/{b}/{c} ms"));
    }
    s
}

fn parse_zxid(v: &str) -> Option<i64> {
    let hex = v.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok().map(|z| z as i64)
}

/// `3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, built on ...`: the release alone.
fn short_version(v: &str) -> String {
    let release = v.split([',', ' ']).next().unwrap_or(v);
    release.split('-').next().unwrap_or(release).to_string()
}

/// Asks one member `srvr`, or `mntr` where `srvr` is refused.
pub(crate) async fn probe_one(
    tls: Option<&Arc<rustls::ClientConfig>>,
    endpoint: &str,
    limit: Duration,
) -> MemberStatus {
    let mut m = MemberStatus {
        checked_at: Some(SystemTime::now()),
        ..MemberStatus::unprobed(endpoint)
    };
    let said = match four_letter_over(tls, endpoint, "srvr", limit).await {
        Ok(t) => Ok(parse_srvr(&t)),
        Err(WordError::NotAllowed(_)) => match four_letter_over(tls, endpoint, "mntr", limit).await
        {
            Ok(t) => Ok(parse_mntr(&t)),
            Err(WordError::NotAllowed(_)) => {
                // It answered, so it runs; what it is, it will not say.
                m.up = true;
                m.note = Some(
                    "refuses srvr and mntr: health unknown beyond \"answers\"; add srvr \
                     (or mntr) to 4lw.commands.whitelist in its zoo.cfg"
                        .to_string(),
                );
                return m;
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    match said {
        Ok(s) => {
            m.up = true;
            // A standalone server leads nobody and follows nobody.
            m.is_leader = match s.mode.as_deref() {
                Some("leader") => Some(true),
                Some("follower" | "observer") => Some(false),
                _ => None,
            };
            m.mode = s.mode;
            m.revision = s.zxid;
            m.latency = s.latency;
            m.version = s.version;
        }
        Err(e) => m.error = Some(e.to_string()),
    }
    m
}

/// What the member probe and the follow task share: which members the probe last saw up
/// (so the follow task leaves one that went down at once, and dials live ones first), and
/// which one the follow task reads through (shown as `serving`).
#[derive(Clone, Debug)]
pub(crate) struct Reading {
    up: Arc<watch::Sender<Vec<bool>>>,
    at: Arc<AtomicUsize>,
}

impl Default for Reading {
    fn default() -> Self {
        Reading {
            up: Arc::new(watch::Sender::new(Vec::new())),
            at: Arc::new(AtomicUsize::new(usize::MAX)),
        }
    }
}

impl Reading {
    /// Told each time the probe has been round the members.
    pub(crate) fn subscribe(&self) -> watch::Receiver<Vec<bool>> {
        self.up.subscribe()
    }

    /// Whether each member was up at the probe's last round (empty before the first).
    pub(crate) fn up(&self) -> Vec<bool> {
        self.up.borrow().clone()
    }

    /// The follow task reads through member `i` now (`None`: through none).
    pub(crate) fn reads_through(&self, i: Option<usize>) {
        self.at.store(i.unwrap_or(usize::MAX), Ordering::Relaxed);
    }

    fn serving(&self) -> Option<usize> {
        Some(self.at.load(Ordering::Relaxed)).filter(|i| *i != usize::MAX)
    }
}

/// Which of `n` members to dial, in order: round from `start` (the one after the member
/// just left, which so comes last), those the probe last saw `up` before the others (all
/// count as up before its first round).
pub(crate) fn dial_order(n: usize, start: usize, up: &[bool]) -> Vec<usize> {
    let round = (0..n).map(|k| (start + k) % n);
    let is_up = |i: usize| up.get(i).copied().unwrap_or(true);
    let (mut first, last): (Vec<usize>, Vec<usize>) = round.partition(|&i| is_up(i));
    first.extend(last);
    first
}

/// Probes every member every [`PROBE_EVERY`] until cancelled, sending their health and an
/// event for each member that went down or came back.
pub(crate) async fn probe(
    tls: Option<Arc<rustls::ClientConfig>>,
    endpoints: Vec<String>,
    (source, source_name): (SourceId, String),
    reading: Reading,
    events: mpsc::Sender<SourceEvent>,
    cancel: CancellationToken,
) {
    let mut before: Option<Vec<bool>> = None;
    let mut tick = tokio::time::interval(PROBE_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let rounds = endpoints
            .iter()
            .map(|ep| probe_one(tls.as_ref(), ep, PROBE_LIMIT));
        let mut members = futures::future::join_all(rounds).await;
        if let Some(m) = reading.serving().and_then(|i| members.get_mut(i)) {
            m.serving = true;
        }
        reading
            .up
            .send_replace(members.iter().map(|m| m.up).collect());
        for m in MemberStatus::changes(before.as_deref(), &members) {
            let kind = if m.up {
                EventKind::MemberUp
            } else {
                EventKind::MemberDown
            };
            let detail = match &m.error {
                Some(e) => format!("{}: {e}", m.endpoint),
                None => m.endpoint.clone(),
            };
            let ev = Event::about_source(source_name.clone(), kind, m.revision, Some(detail));
            if events.send(SourceEvent::Happened(ev)).await.is_err() {
                return;
            }
        }
        before = Some(members.iter().map(|m| m.up).collect());
        if events
            .send(SourceEvent::Members { source, members })
            .await
            .is_err()
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As ZooKeeper 3.8 answers `srvr` (a follower of an ensemble).
    const SRVR: &str = "Zookeeper version: 3.8.0-5a02a05eddb59aee6ac762f7ea82e92a68eb9c0f, \
        built on 2022-02-25 08:49 UTC\nLatency min/avg/max: 0/0.4286/3\nReceived: 12\n\
        Sent: 11\nConnections: 2\nOutstanding: 0\nZxid: 0x100000007\nMode: follower\n\
        Node count: 9\n";

    const MNTR: &str = "zk_version\t3.8.0-5a02a05, built on 2022-02-25 08:49 UTC\n\
        zk_server_state\tleader\nzk_avg_latency\t0.5\nzk_max_latency\t4\n\
        zk_min_latency\t0\nzk_znode_count\t9\n";

    #[test]
    fn srvr_gives_mode_zxid_latency_and_version() {
        let s = parse_srvr(SRVR);
        assert_eq!(s.mode.as_deref(), Some("follower"));
        assert_eq!(s.zxid, Some(0x1_0000_0007));
        assert_eq!(s.latency.as_deref(), Some("0/0.4286/3 ms"));
        assert_eq!(s.version.as_deref(), Some("3.8.0"));
    }

    #[test]
    fn mntr_gives_mode_and_latency_but_no_zxid() {
        let s = parse_mntr(MNTR);
        assert_eq!(s.mode.as_deref(), Some("leader"));
        assert_eq!(s.latency.as_deref(), Some("0/0.5/4 ms"));
        assert_eq!(s.version.as_deref(), Some("3.8.0"));
        assert_eq!(s.zxid, None);
    }

    #[test]
    fn refusals_are_told_apart_from_answers() {
        let off = "srvr is not executed because it is not in the whitelist.\n";
        let e = refused("srvr", off).unwrap_err();
        assert_eq!(e, WordError::NotAllowed("srvr".into()));
        assert!(e.to_string().contains("4lw.commands.whitelist"), "{e}");
        let idle = "This ZooKeeper instance is not currently serving requests\n";
        assert_eq!(refused("srvr", idle), Err(WordError::NotServing));
        assert_eq!(refused("srvr", ""), Err(WordError::Empty));
        assert_eq!(refused("srvr", SRVR), Ok(()));
    }

    #[test]
    fn live_members_are_dialled_first_and_the_one_left_last() {
        // Left member 0: 1 and 2 next; before the probe's first round all count as up.
        assert_eq!(dial_order(3, 1, &[]), [1, 2, 0]);
        // Member 1 down by the probe: tried after the live ones.
        assert_eq!(dial_order(3, 1, &[true, false, true]), [2, 0, 1]);
        assert_eq!(dial_order(1, 0, &[false]), [0]);
    }

    /// Nothing listening: said as unreachable, quickly, not as a timeout.
    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let ep = l.local_addr().expect("addr").to_string();
        drop(l);
        let got = four_letter(&ep, "srvr", Duration::from_secs(1)).await;
        assert!(matches!(got, Err(WordError::Unreachable(_))), "{got:?}");
        let m = probe_one(None, &ep, Duration::from_secs(1)).await;
        assert!(!m.up && m.error.is_some(), "{m:?}");
    }
}
