//! Each member's health, probed in the background like `etcdctl endpoint status`: up or
//! down, raft leader or follower, term, revision and DB size. A dead member shows here and
//! nowhere else; the source carries on through the others.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use etcd_client::Client;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::dial::{Pings, connect_member};
use crate::config::EtcdSource;
use crate::model::{Event, EventKind, MemberStatus, SourceEvent, SourceId};

/// How often every member is asked.
const PROBE_EVERY: Duration = Duration::from_secs(2);
/// A member slower than this to answer counts as down.
const PROBE_LIMIT: Duration = Duration::from_millis(1500);

/// Which member the connection reads through (`usize::MAX`: none), shared with the probe.
pub(crate) type Serving = Arc<AtomicUsize>;

pub(crate) fn serving() -> Serving {
    Arc::new(AtomicUsize::new(usize::MAX))
}

pub(crate) async fn probe(
    cfg: EtcdSource,
    source: SourceId,
    source_name: String,
    serving: Serving,
    events: mpsc::Sender<SourceEvent>,
    cancel: CancellationToken,
) {
    let mut clients: Vec<Option<Client>> = vec![None; cfg.endpoints.len()];
    let mut before: Option<Vec<bool>> = None;
    let mut tick = tokio::time::interval(PROBE_EVERY);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = cancel.cancelled() => return,
        }
        let rounds = cfg
            .endpoints
            .iter()
            .zip(clients.iter_mut())
            .map(|(ep, c)| probe_one(&cfg, ep, c));
        let mut members = futures::future::join_all(rounds).await;
        let using = serving.load(Ordering::Relaxed);
        for (i, m) in members.iter_mut().enumerate() {
            m.serving = i == using;
        }
        let up: Vec<bool> = members.iter().map(|m| m.up).collect();
        for m in MemberStatus::changes(before.as_deref(), &members) {
            let kind = if m.up {
                EventKind::MemberUp
            } else {
                EventKind::MemberDown
            };
            // Most errors name the member already: once is enough.
            let detail = match m.error.as_deref() {
                Some(e) if e.contains(m.endpoint.as_str()) => e.to_string(),
                Some(e) => format!("{}: {e}", m.endpoint),
                None => m.endpoint.clone(),
            };
            let ev = Event::about_source(source_name.clone(), kind, m.revision, Some(detail));
            if events.send(SourceEvent::Happened(ev)).await.is_err() {
                return;
            }
        }
        before = Some(up);
        if events
            .send(SourceEvent::Members { source, members })
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The member as it answers now. A member is down when a connection made for the question
/// gets no answer: one kept from an earlier round may have been closed since (etcd closes a
/// connection it finds pinging too often, a member restarted, a proxy timed it out), or have
/// answered late on a loaded machine, and neither says the member is down now, so such a
/// failure is asked again on a new connection.
async fn probe_one(cfg: &EtcdSource, endpoint: &str, cached: &mut Option<Client>) -> MemberStatus {
    let started = tokio::time::Instant::now();
    let kept = cached.is_some();
    let m = ask(cfg, endpoint, cached, PROBE_LIMIT).await;
    match m.up || !kept {
        true => m,
        false => {
            let left = PROBE_LIMIT.saturating_sub(started.elapsed());
            ask(cfg, endpoint, cached, left.max(PROBE_LIMIT / 2)).await
        }
    }
}

/// `status` through the kept connection, or a new one within `limit`.
async fn ask(
    cfg: &EtcdSource,
    endpoint: &str,
    cached: &mut Option<Client>,
    limit: Duration,
) -> MemberStatus {
    let mut m = MemberStatus {
        checked_at: Some(SystemTime::now()),
        ..MemberStatus::unprobed(endpoint)
    };
    if cached.is_none() {
        match connect_member(cfg, endpoint, limit, Pings::Never).await {
            Ok(c) => *cached = Some(c),
            Err(e) => {
                m.error = Some(e.to_string());
                return m;
            }
        }
    }
    let Some(client) = cached.as_mut() else {
        return m;
    };
    match tokio::time::timeout(limit, client.status()).await {
        Ok(Ok(s)) => {
            let id = s.header().map(|h| h.member_id()).unwrap_or(0);
            m.up = true;
            m.id = Some(format!("{id:x}"));
            m.is_leader = Some(id != 0 && s.leader() == id);
            m.raft_term = Some(s.raft_term());
            m.revision = s.header().map(|h| h.revision());
            m.db_size = Some(s.db_size());
            m.version = Some(s.version().to_string());
        }
        Ok(Err(e)) => {
            m.error = Some(super::error::EtcdError::from_client(endpoint, e).to_string());
            *cached = None;
        }
        Err(_) => {
            m.error = Some(format!("no answer within {limit:?}"));
            *cached = None;
        }
    }
    m
}
