//! One snapshot of every source into the read model: what `status` and the admin verbs
//! read before they print or act. A source that cannot be read is named with why, and never
//! hides the ones that can.

use std::time::{Duration, Instant, SystemTime};

use super::Sources;
use crate::model::{ConnState, SourceId};
use crate::state::ReadModel;

/// What one snapshot of every source found.
pub struct Snapshot {
    /// Every source, the ones read with their elections.
    pub model: ReadModel,
    /// The sources that could not be read, each with why, in source order.
    pub unread: Vec<(SourceId, String)>,
}

/// Collects events until every source has its snapshot and replay or is down, or `timeout`
/// passes. A source is down once every endpoint refused or failed (the store task says so
/// after trying them all): a one-shot read does not wait out the timeout for it.
pub async fn collect(mut sources: Sources, timeout: Duration) -> Snapshot {
    // The alarms are worked out once, at the end, not after every batch of elections.
    let mut model = ReadModel::new(sources.infos.clone(), Instant::now(), SystemTime::now());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if model.sources.iter().all(|s| done(s) || is_down(s)) {
            break;
        }
        tokio::select! {
            ev = sources.events.recv() => match ev {
                Some(ev) => {
                    model.apply(ev);
                }
                None => break,
            },
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    sources.shutdown().await;
    let unread: Vec<(SourceId, String)> = model
        .sources
        .iter()
        .filter(|s| !s.synced)
        .map(|s| (s.info.id, why_unread(s, timeout)))
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
    model.tick(Instant::now(), SystemTime::now());
    model.settle();
    Snapshot { model, unread }
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

/// Read, with the members of a clustered store probed once (for the members list).
fn done(s: &crate::state::SourceView) -> bool {
    s.synced && (!s.info.clustered || !s.members.is_empty())
}

fn is_down(s: &crate::state::SourceView) -> bool {
    !s.synced && matches!(s.conn, ConnState::Down { .. })
}

/// Why a source was not read: its store's own error, or that it did not answer in time.
fn why_unread(s: &crate::state::SourceView, timeout: Duration) -> String {
    match &s.conn {
        ConnState::Down { error, .. } => error.clone(),
        _ => format!("no answer from {} within {timeout:?}", s.info.name),
    }
}
