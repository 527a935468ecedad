//! One snapshot of every source into the read model: what `status` and the admin verbs
//! read before they print or act. A source that cannot be read is named with why, and never
//! hides the ones that can.

use std::time::{Duration, Instant, SystemTime};

use super::Sources;
use crate::model::{ConnState, SourceEvent, SourceId};
use crate::state::ReadModel;

/// What one snapshot of every source found.
pub struct Snapshot {
    /// Every source, the ones read with their elections.
    pub model: ReadModel,
    /// The sources that could not be read, each with why, in source order.
    pub unread: Vec<(SourceId, String)>,
}

/// Collects events until every source has its snapshot and replay or is down for good, or
/// `timeout` passes. A store task reading once says a failure is lasting when waiting will
/// not help or nothing listens there (a refused connection, every endpoint tried): that is
/// not waited out. Any other failure is retried until the timeout, which may bring a
/// clearer one (a TLS mismatch first seen as a reset connection).
pub async fn collect(sources: Sources, timeout: Duration) -> Snapshot {
    let (snap, stopping) = collect_stopping(sources, timeout).await;
    stopping.await;
    snap
}

/// [`collect`], the sources told to stop but not waited for: the caller prints what was
/// read while they close their connections and flush their journals on the runtime's
/// threads, then awaits the second half. Over many elections a store task's end (its
/// tracker freed, a PostgreSQL pool closed) is time `status` would otherwise spend waiting.
pub async fn collect_stopping(
    mut sources: Sources,
    timeout: Duration,
) -> (Snapshot, impl std::future::Future<Output = ()>) {
    // The alarms are worked out once, at the end, not after every batch of elections.
    let mut model = ReadModel::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let deadline = tokio::time::Instant::now() + timeout;
    // The last error of each source: at the deadline it may be between retries.
    let mut last_error: Vec<Option<String>> = vec![None; model.sources.len()];
    loop {
        if model.sources.iter().all(|s| done(s) || is_down(s)) {
            break;
        }
        tokio::select! {
            ev = sources.events.recv() => match ev {
                Some(ev) => {
                    if let SourceEvent::Conn { source, state: ConnState::Down { error, .. } } = &ev
                        && let Some(slot) = last_error.get_mut(*source)
                    {
                        *slot = Some(error.clone());
                    }
                    model.apply(ev);
                }
                None => break,
            },
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    let stopping = sources.stop();
    let unread: Vec<(SourceId, String)> = model
        .sources
        .iter()
        .filter(|s| !s.synced)
        .map(|s| {
            (
                s.info.id,
                why_unread(s, last_error[s.info.id].as_deref(), timeout),
            )
        })
        .collect();
    // What every view reads: a source that did not answer is down, with why.
    for (id, why) in &unread {
        if let Some(s) = model.sources.get_mut(*id) {
            s.conn = ConnState::Down {
                error: why.clone(),
                retry_at: Instant::now(),
                lasting: false,
            };
        }
    }
    // The clock as the state is printed, and the alarms and rates `status` prints.
    let now = Instant::now();
    read_once(&mut model, now);
    model.tick(now, SystemTime::now());
    model.settle();
    (Snapshot { model, unread }, stopping)
}

/// [`collect`], for what needs every source read (the admin verbs): the first source that
/// could not be read is the error.
pub async fn collect_status(sources: Sources, timeout: Duration) -> Result<ReadModel, String> {
    let snap = collect(sources, timeout).await;
    match snap.unread.into_iter().next() {
        Some((_, why)) => Err(why),
        None => Ok(snap.model),
    }
}

/// A one-shot read asks each source once: no contact is due after its read, so the time
/// the others kept the snapshot waiting does not make it stale (its `as_of` still says
/// when it was true). Only losing it (down) does; one that never answered keeps its own
/// interval.
fn read_once(model: &mut ReadModel, now: Instant) {
    for s in &mut model.sources {
        if let (true, Some((at, _))) = (s.synced, s.last_contact) {
            let waited = now.saturating_duration_since(at);
            s.contact_every = s.contact_every.max(waited);
        }
    }
}

/// Read, with the members of a clustered store probed once (for the members list).
fn done(s: &crate::state::SourceView) -> bool {
    s.synced && (!s.info.clustered || !s.members.is_empty())
}

fn is_down(s: &crate::state::SourceView) -> bool {
    !s.synced && matches!(s.conn, ConnState::Down { lasting: true, .. })
}

/// Why a source was not read: its store's own error (the last, if it is between retries),
/// or that it did not answer in time.
fn why_unread(s: &crate::state::SourceView, last: Option<&str>, timeout: Duration) -> String {
    match (&s.conn, last) {
        (ConnState::Down { error, .. }, _) => error.clone(),
        (_, Some(error)) => error.to_string(),
        _ => format!("no answer from {} within {timeout:?}", s.info.name),
    }
}
